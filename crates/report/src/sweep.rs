//! Results of `gpuscope bench --sweep` / `--experiment`: one row per gemv configuration
//! timed, with its roofline columns ([`crate::analysis::roofline`](mod@crate::analysis::roofline), from measured
//! ceilings when the machine has them) and the fastest configuration of each shape.
//! Rendered by [`crate::render::sweep`].

use serde::{Deserialize, Serialize};

use crate::analysis::roofline::RooflineCeilings;
use gpuscope_trace::ceilings::Ceilings;
use gpuscope_trace::stats::percentile_f64;

/// What was run: one configuration of one shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepConfig {
    /// `sweep` (the user's axes) or a built-in experiment's name.
    pub experiment: String,
    /// `ROWSxCOLS` of the weight matrix.
    pub shape: String,
    pub format: String,
    /// Weight layout in the buffer: `gguf` or `packed`.
    pub layout: String,
    /// The gemv variant (`shared`, `subgroup`, `rows`, `blocks`).
    pub variant: String,
    pub lanes: u32,
    pub rows_per_lane: u32,
    pub workgroup: u32,
    /// `on` (rms_norm folded into the gemv), `off` (its own dispatch) or `-` (no norm).
    pub fuse: String,
    /// `full`, `read-only` or `compute-only`.
    pub mode: String,
    pub dispatches: u32,
}

/// One configuration as measured, with its roofline columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    #[serde(flatten)]
    pub config: SweepConfig,
    /// Median GPU time of one run (every dispatch of the configuration), µs.
    pub time_us: f64,
    pub time_us_p10: f64,
    pub time_us_p90: f64,
    pub runs: u64,
    /// Declared bytes moved and FLOPs of one run.
    pub bytes: u64,
    pub flops: u64,
    pub gb_s: f64,
    pub gflop_s: f64,
    /// FLOP per byte.
    pub intensity: f64,
    /// `max(bytes / bandwidth, flops / FLOP rate, dispatches × dispatch floor)`, µs;
    /// `None` without measured ceilings.
    pub attainable_us: Option<f64>,
    /// attainable / measured, %.
    pub pct_of_ceiling: Option<f64>,
    /// `memory`, `compute` or `launch`; `None` without measured ceilings.
    pub bound: Option<String>,
    /// The fastest full-kernel configuration of its experiment and shape.
    pub best: bool,
}

/// A sweep's results and what they were measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// `gpuscope 0.1.0`.
    pub tool: String,
    pub adapter: String,
    pub backend: String,
    pub driver: String,
    /// How the GPU times were taken (`dispatch` or `pass` timestamps).
    pub timing: String,
    /// Where the roofline's ceilings came from, or why there are none.
    pub ceilings: String,
    pub rows: Vec<SweepRow>,
    /// Configurations a built-in experiment left out, and why (`q4_k: 64 columns ...`).
    pub skipped: Vec<String>,
}

/// A configuration's samples before the roofline columns (what the GPU side knows).
#[derive(Debug, Clone)]
pub struct SweepMeasurement {
    pub config: SweepConfig,
    /// GPU time of one run, ns.
    pub samples_ns: Vec<f64>,
    pub bytes: u64,
    pub flops: u64,
}

impl SweepRow {
    /// The row of a measurement (at least one sample), with roofline columns when
    /// `ceilings` has a bandwidth.
    pub fn new(m: &SweepMeasurement, ceilings: Option<&Ceilings>) -> SweepRow {
        let mut samples = m.samples_ns.clone();
        let mut pct = |p: f64| percentile_f64(&mut samples, p).unwrap_or(f64::NAN);
        let (median_ns, p10_ns, p90_ns) = (pct(50.0).max(1.0), pct(10.0), pct(90.0));
        let (bytes, flops) = (m.bytes as f64, m.flops as f64);
        let dispatches = m.config.dispatches;
        let roof = ceilings.and_then(RooflineCeilings::from);
        let attainable_ns = roof.map(|r| {
            r.memory_ns(bytes)
                .max(r.compute_ns(flops))
                .max(f64::from(dispatches) * r.dispatch_floor_ns.unwrap_or(0.0))
        });
        SweepRow {
            config: m.config.clone(),
            time_us: median_ns / 1e3,
            time_us_p10: p10_ns / 1e3,
            time_us_p90: p90_ns / 1e3,
            runs: m.samples_ns.len() as u64,
            bytes: m.bytes,
            flops: m.flops,
            gb_s: bytes / median_ns,
            gflop_s: flops / median_ns,
            intensity: if bytes > 0.0 { flops / bytes } else { 0.0 },
            attainable_us: attainable_ns.map(|a| a / 1e3),
            pct_of_ceiling: attainable_ns.map(|a| 100.0 * a / median_ns),
            bound: roof.map(|r| {
                r.bound(u64::from(dispatches), median_ns, bytes, flops)
                    .as_str()
                    .to_string()
            }),
            best: false,
        }
    }
}

impl SweepReport {
    /// Marks the fastest full-kernel row of each (experiment, shape) with more than one
    /// configuration.
    pub fn mark_best(&mut self) {
        let key =
            |c: &SweepConfig| (c.mode == "full").then(|| (c.experiment.clone(), c.shape.clone()));
        let mut groups: Vec<(String, String)> =
            self.rows.iter().filter_map(|r| key(&r.config)).collect();
        groups.sort();
        groups.dedup();
        for r in &mut self.rows {
            r.best = false;
        }
        for g in groups {
            let candidates: Vec<usize> = (0..self.rows.len())
                .filter(|&i| key(&self.rows[i].config).as_ref() == Some(&g))
                .collect();
            if candidates.len() < 2 {
                continue;
            }
            if let Some(&i) = candidates
                .iter()
                .min_by(|&&a, &&b| self.rows[a].time_us.total_cmp(&self.rows[b].time_us))
            {
                self.rows[i].best = true;
            }
        }
    }

    /// The experiments in the order they first appear.
    pub fn experiments(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.config.experiment.as_str()) {
                out.push(&r.config.experiment);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(experiment: &str, shape: &str, mode: &str, ns: &[f64]) -> SweepMeasurement {
        SweepMeasurement {
            config: SweepConfig {
                experiment: experiment.into(),
                shape: shape.into(),
                format: "q8_0".into(),
                layout: "gguf".into(),
                variant: "shared".into(),
                lanes: 16,
                rows_per_lane: 1,
                workgroup: 256,
                fuse: "-".into(),
                mode: mode.into(),
                dispatches: 1,
            },
            samples_ns: ns.to_vec(),
            bytes: 1_000_000,
            flops: 2_000_000,
        }
    }

    #[test]
    fn best_is_the_fastest_full_row_per_experiment_and_shape() {
        let rows = [
            m("tile", "8x8", "full", &[3000.0]),
            m("tile", "8x8", "full", &[2000.0]),
            m("tile", "16x8", "full", &[5000.0]),
            m("memory-vs-compute", "8x8", "full", &[4000.0]),
            m("memory-vs-compute", "8x8", "read-only", &[1000.0]),
        ];
        let mut r = SweepReport {
            tool: String::new(),
            adapter: String::new(),
            backend: String::new(),
            driver: String::new(),
            timing: String::new(),
            ceilings: String::new(),
            rows: rows.iter().map(|m| SweepRow::new(m, None)).collect(),
            skipped: vec![],
        };
        r.mark_best();
        let best: Vec<bool> = r.rows.iter().map(|r| r.best).collect();
        // One configuration of a shape is nobody's best; read-only rows never are.
        assert_eq!(best, [false, true, false, false, false]);
        assert_eq!(r.experiments(), ["tile", "memory-vs-compute"]);
    }

    #[test]
    fn roofline_columns_need_ceilings_and_use_the_median() {
        let row = SweepRow::new(&m("sweep", "8x8", "full", &[900.0, 1000.0, 5000.0]), None);
        assert_eq!(row.time_us, 1.0);
        assert_eq!(row.gb_s, 1000.0);
        assert_eq!(row.intensity, 2.0);
        assert!(row.pct_of_ceiling.is_none() && row.bound.is_none());
    }
}
