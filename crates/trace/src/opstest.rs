//! Results of `gpuscope ops test | perf` (the kernel author's harness) and their table,
//! CSV and JSON forms.
//!
//! Field names follow llama.cpp's `test-backend-ops` output where one exists
//! (`backend_name`, `op_name`, `op_params`, `test_mode`, `supported`, `passed`,
//! `error_message`, `time_us`, `flops`, `bandwidth_gb_s`, `n_runs`); the others are ours
//! (`format`, `shape`, the error measures, guard results, spread, % of the ceiling).
//! `flops` is FLOP/s, as there; the table prints GFLOP/s.

use std::fmt::Write;

use serde::{Deserialize, Serialize};

use crate::compare::TensorError;

/// One case of `ops test`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpTestResult {
    pub backend_name: String,
    /// Kernel family (the shader name, `gemv_q4_1`, `rope_qkv`).
    pub op_name: String,
    /// Weight format, or `-`.
    pub format: String,
    /// The shape's name in the table (`smollm2.ffn_down`, `one_row`, ...).
    pub shape: String,
    /// The op's parameters.
    pub op_params: String,
    pub test_mode: String,
    pub supported: bool,
    pub passed: bool,
    pub error_message: String,
    /// The worst output's comparison with the CPU executor.
    pub error: Option<TensorError>,
    /// Canary words changed before / after the outputs (out-of-bounds writes).
    pub guard_words_changed: u64,
    /// The kernel is one the adapter's default plan runs in the decoder (`test_mode`
    /// `plan`: tested inside a decode step of that plan).
    #[serde(default)]
    pub used_by_plan: bool,
}

/// One case of `ops perf`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpPerfResult {
    pub backend_name: String,
    pub op_name: String,
    pub format: String,
    pub shape: String,
    pub op_params: String,
    pub test_mode: String,
    /// Median GPU time of one run, µs.
    pub time_us: f64,
    /// 10th and 90th percentiles, µs (the spread).
    pub time_us_p10: f64,
    pub time_us_p90: f64,
    /// Timed runs.
    pub n_runs: u64,
    /// FLOP/s at the median.
    pub flops: f64,
    /// Declared bytes moved per second at the median, GB/s.
    pub bandwidth_gb_s: f64,
    /// `bandwidth_gb_s` as a percentage of the measured copy bandwidth, when known.
    pub pct_of_ceiling: Option<f64>,
    /// `dispatch` (a timestamp around each run) or `pass` (a pass of runs, divided).
    pub timing: String,
    /// The kernel is one the adapter's default plan runs in the decoder (`test_mode`
    /// `plan`: timed as the decoder binds it).
    #[serde(default)]
    pub used_by_plan: bool,
}

/// `bandwidth_gb_s` as a percentage of a measured copy bandwidth (the roofline's memory
/// ceiling, e.g. `gpuscope peak`'s median).
pub fn pct_of_ceiling(bandwidth_gb_s: f64, ceiling_gb_s: f64) -> Option<f64> {
    (ceiling_gb_s > 0.0).then(|| 100.0 * bandwidth_gb_s / ceiling_gb_s)
}

/// A CSV field, quoted where it holds a comma, quote or newline.
pub fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x}"))
}

pub fn test_csv(rows: &[OpTestResult]) -> String {
    let mut out = String::from(
        "backend_name,op_name,format,shape,op_params,test_mode,supported,passed,error_message,nmse,max_err,max_abs,nan,inf,guard_words_changed,used_by_plan\n",
    );
    for r in rows {
        let e = r.error.as_ref();
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.backend_name),
            csv_field(&r.op_name),
            r.format,
            csv_field(&r.shape),
            csv_field(&r.op_params),
            r.test_mode,
            r.supported,
            r.passed,
            csv_field(&r.error_message),
            opt(e.map(|e| e.nmse)),
            opt(e.map(|e| e.max_err)),
            opt(e.map(|e| e.max_abs)),
            e.map_or(0, |e| e.nan),
            e.map_or(0, |e| e.inf),
            r.guard_words_changed,
            r.used_by_plan
        );
    }
    out
}

pub fn perf_csv(rows: &[OpPerfResult]) -> String {
    let mut out = String::from(
        "backend_name,op_name,format,shape,op_params,test_mode,time_us,time_us_p10,time_us_p90,n_runs,flops,bandwidth_gb_s,pct_of_ceiling,timing,used_by_plan\n",
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.backend_name),
            csv_field(&r.op_name),
            r.format,
            csv_field(&r.shape),
            csv_field(&r.op_params),
            r.test_mode,
            r.time_us,
            r.time_us_p10,
            r.time_us_p90,
            r.n_runs,
            r.flops,
            r.bandwidth_gb_s,
            opt(r.pct_of_ceiling),
            r.timing,
            r.used_by_plan
        );
    }
    out
}

/// Column widths for the op and shape names: 22, or the longest (the plan's kernels'
/// names, `rms_norm+gemv_q8_0+rope.rows.packed.xshared.wide`, run longer).
fn name_widths<'r>(names: impl Iterator<Item = (&'r str, &'r str)>) -> (usize, usize) {
    names.fold((22, 22), |(o, s), (op, shape)| {
        (o.max(op.chars().count()), s.max(shape.chars().count()))
    })
}

pub fn test_table(rows: &[OpTestResult]) -> String {
    let mut out = String::new();
    let (ow, sw) = name_widths(rows.iter().map(|r| (r.op_name.as_str(), r.shape.as_str())));
    let _ = writeln!(
        out,
        "{:<ow$} {:<6} {:<sw$} {:<5} {:<4} {:>10} {:>10} {:>6}  problem",
        "op", "format", "shape", "ok", "plan", "NMSE", "max err", "guard"
    );
    for r in rows {
        let e = r.error.as_ref();
        let sci = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2e}"));
        let _ = writeln!(
            out,
            "{:<ow$} {:<6} {:<sw$} {:<5} {:<4} {:>10} {:>10} {:>6}  {}",
            r.op_name,
            r.format,
            r.shape,
            match (r.supported, r.passed) {
                (false, _) => "n/a",
                (true, true) => "OK",
                (true, false) => "FAIL",
            },
            if r.used_by_plan { "yes" } else { "" },
            sci(e.map(|e| e.nmse)),
            sci(e.map(|e| e.max_err)),
            r.guard_words_changed,
            r.error_message
        );
    }
    let failed = rows.iter().filter(|r| r.supported && !r.passed).count();
    let unsupported = rows.iter().filter(|r| !r.supported).count();
    let _ = write!(
        out,
        "{} passed, {} failed",
        rows.len() - failed - unsupported,
        failed
    );
    if unsupported > 0 {
        let _ = write!(out, ", {unsupported} not supported by this adapter");
    }
    let _ = writeln!(out);
    out
}

pub fn perf_table(rows: &[OpPerfResult]) -> String {
    let mut out = String::new();
    let warm = rows.iter().any(|r| r.test_mode.contains("warm"));
    let _ = writeln!(
        out,
        "{}",
        if warm {
            "Caches: WARM (--warm-caches: runs back to back, the operands may be served from the cache; not what a decoder reading its weights once a token sees)"
        } else {
            "Caches: cold (a write larger than the last-level cache before each run, as a decoder reads its weights)"
        }
    );
    let (ow, sw) = name_widths(rows.iter().map(|r| (r.op_name.as_str(), r.shape.as_str())));
    let _ = writeln!(
        out,
        "{:<ow$} {:<6} {:<sw$} {:<4} {:>10} {:>17} {:>6} {:>9} {:>9} {:>8}",
        "op",
        "format",
        "shape",
        "plan",
        "µs (med)",
        "µs (p10..p90)",
        "runs",
        "GB/s",
        "GFLOP/s",
        "% ceil"
    );
    let mut above = false;
    for r in rows {
        let pct = match r.pct_of_ceiling {
            None => "-".to_string(),
            Some(p) if p > 100.0 => {
                above = true;
                format!("{p:.1}*")
            }
            Some(p) => format!("{p:.1}"),
        };
        let _ = writeln!(
            out,
            "{:<ow$} {:<6} {:<sw$} {:<4} {:>10.2} {:>17} {:>6} {:>9.2} {:>9.2} {:>8}",
            r.op_name,
            r.format,
            r.shape,
            if r.used_by_plan { "yes" } else { "" },
            r.time_us,
            format!("{:.2}..{:.2}", r.time_us_p10, r.time_us_p90),
            r.n_runs,
            r.bandwidth_gb_s,
            r.flops / 1e9,
            pct
        );
    }
    if above {
        let _ = writeln!(
            out,
            "* above the measured copy ceiling: {}",
            if warm {
                "the operands were served from the cache (warm runs)"
            } else {
                "the declared bytes overcount what the kernel reads from memory, or part of the operands stayed in a cache larger than the flush"
            }
        );
    }
    out
}
