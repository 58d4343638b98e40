//! `gpuscope bench` output in llama-bench's four formats: Markdown (its table), CSV,
//! JSON (an array of objects) and JSONL (one object per line), laid out as its printers
//! lay them out, so tools that read llama-bench's output read these.

use gpuscope_trace::bench::{BenchContext, BenchRecord, FieldValue, LLAMA_BENCH_FIELDS};

/// A JSON value as llama-bench's `format_json_value` writes it.
fn json_value(v: &FieldValue) -> String {
    match v {
        // serde_json escapes exactly what JSON needs.
        FieldValue::Str(s) => serde_json::to_string(s).expect("a string serializes"),
        FieldValue::Bool(b) => b.to_string(),
        FieldValue::Int(_) | FieldValue::Float(_) => v.to_plain(),
    }
}

fn samples(r: &BenchRecord) -> (String, String) {
    let ns: Vec<String> = r.samples_ns.iter().map(u64::to_string).collect();
    let ts: Vec<String> = r.samples_ts().iter().map(|t| t.to_string()).collect();
    (ns.join(", "), ts.join(", "))
}

/// The field after llama-bench's that names each test's kernel configuration, where a
/// run compared several (docs/bench.md).
pub const VARIANT_FIELD: &str = "gpuscope_kernels";

fn has_variants(records: &[BenchRecord]) -> bool {
    records.iter().any(|r| r.variant.is_some())
}

/// A record's configuration, where the run has any (`-` for one without).
fn variant_of(records: &[BenchRecord], r: &BenchRecord) -> Option<String> {
    has_variants(records).then(|| r.variant.clone().unwrap_or_else(|| "-".into()))
}

/// A JSON array with one object per test.
pub fn render_bench_json(c: &BenchContext, records: &[BenchRecord]) -> String {
    let objects: Vec<String> = records
        .iter()
        .map(|r| {
            let mut o = String::from("  {\n");
            for (name, v) in r.fields(c) {
                o.push_str(&format!("    \"{name}\": {},\n", json_value(&v)));
            }
            if let Some(v) = variant_of(records, r) {
                o.push_str(&format!(
                    "    \"{VARIANT_FIELD}\": {},\n",
                    json_value(&FieldValue::Str(v))
                ));
            }
            let (ns, ts) = samples(r);
            o.push_str(&format!("    \"samples_ns\": [ {ns} ],\n"));
            o.push_str(&format!("    \"samples_ts\": [ {ts} ]\n  }}"));
            o
        })
        .collect();
    format!("[\n{}\n]\n", objects.join(",\n"))
}

/// One JSON object per line, one line per test.
pub fn render_bench_jsonl(c: &BenchContext, records: &[BenchRecord]) -> String {
    records
        .iter()
        .map(|r| {
            let mut fields: Vec<String> = r
                .fields(c)
                .iter()
                .map(|(name, v)| format!("\"{name}\": {}, ", json_value(v)))
                .collect();
            if let Some(v) = variant_of(records, r) {
                fields.push(format!(
                    "\"{VARIANT_FIELD}\": {}, ",
                    json_value(&FieldValue::Str(v))
                ));
            }
            let (ns, ts) = samples(r);
            format!(
                "{{{}\"samples_ns\": [ {ns} ],\"samples_ts\": [ {ts} ]}}\n",
                fields.concat()
            )
        })
        .collect()
}

/// A header line of field names, then every value quoted, one line per test.
pub fn render_bench_csv(c: &BenchContext, records: &[BenchRecord]) -> String {
    let mut out = LLAMA_BENCH_FIELDS.join(",");
    if has_variants(records) {
        out.push_str(&format!(",{VARIANT_FIELD}"));
    }
    out.push('\n');
    for r in records {
        let quote = |v: &str| format!("\"{}\"", v.replace('"', "\"\""));
        let mut values: Vec<String> = r
            .fields(c)
            .iter()
            .map(|(_, v)| quote(&v.to_plain()))
            .collect();
        values.extend(variant_of(records, r).map(|v| quote(&v)));
        out.push_str(&values.join(","));
        out.push('\n');
    }
    out
}

/// llama-bench's table: model, size, params, backend, ngl, test, t/s (mean ± sample
/// standard deviation), then the build line. Widths as llama-bench's (negative: left
/// aligned).
pub fn render_bench_md(c: &BenchContext, records: &[BenchRecord]) -> String {
    let mut columns: Vec<(&str, i32)> = vec![
        ("model", -30),
        ("size", 10),
        ("params", 10),
        ("backend", -(c.backends.len().max(10) as i32)),
        ("ngl", 3),
    ];
    // The configurations' column, where a run compared several (llama-bench adds one
    // per parameter that varies, before `test`).
    if has_variants(records) {
        let widest = records
            .iter()
            .filter_map(|r| r.variant.as_ref().map(String::len))
            .max()
            .unwrap_or(0);
        columns.push(("kernel", -(widest.max(6) as i32)));
    }
    columns.extend([("test", 15), ("t/s", 20)]);
    let cell = |text: &str, width: i32| {
        let w = width.unsigned_abs() as usize;
        if width < 0 {
            format!(" {text:<w$} |")
        } else {
            format!(" {text:>w$} |")
        }
    };
    let mut out = String::from("|");
    for &(name, w) in &columns {
        out.push_str(&cell(name, w));
    }
    out.push_str("\n|");
    for &(_, w) in &columns {
        let dashes = "-".repeat(w.unsigned_abs() as usize - 1);
        out.push_str(&format!(" {dashes}{} |", if w > 0 { ":" } else { "-" }));
    }
    out.push('\n');
    for r in records {
        let mut values = vec![
            c.model_type.clone(),
            mib(c.model_size),
            params(c.model_n_params),
            c.backends.clone(),
            c.n_gpu_layers.to_string(),
        ];
        values.extend(variant_of(records, r));
        values.extend([
            r.name(),
            format!("{:.2} ± {:.2}", r.avg_ts(), r.stddev_ts()),
        ]);
        out.push('|');
        for ((_, w), v) in columns.iter().zip(values) {
            out.push_str(&cell(&v, *w));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "\nbuild: {} ({})\n",
        c.build_commit, c.build_number
    ));
    out
}

/// Bytes as llama-bench prints a model's size: MiB below 1 GiB, else GiB.
fn mib(bytes: u64) -> String {
    let b = bytes as f64;
    if bytes < 1 << 30 {
        format!("{:.2} MiB", b / 1024.0 / 1024.0)
    } else {
        format!("{:.2} GiB", b / 1024.0 / 1024.0 / 1024.0)
    }
}

/// Parameters as llama-bench prints them: millions below 10^9, else billions.
fn params(n: u64) -> String {
    if n < 1_000_000_000 {
        format!("{:.2} M", n as f64 / 1e6)
    } else {
        format!("{:.2} B", n as f64 / 1e9)
    }
}
