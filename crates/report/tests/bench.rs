//! Benchmark records: llama-bench's statistics and its four output layouts.

use gpuscope_report::render::bench::{
    render_bench_csv, render_bench_json, render_bench_jsonl, render_bench_md,
};
use gpuscope_trace::bench::{BenchContext, BenchRecord, LLAMA_BENCH_FIELDS};

fn context() -> BenchContext {
    BenchContext {
        build_commit: "abc1234".into(),
        build_number: 7,
        cpu_info: "Test CPU".into(),
        gpu_info: "Test GPU".into(),
        backends: "wgpu-Vulkan".into(),
        model_filename: "preset:tiny".into(),
        model_type: "llama 361K Q8_0".into(),
        model_size: 385_536,
        model_n_params: 361_088,
        n_batch: 256,
        n_gpu_layers: 3,
        devices: "auto".into(),
        load_mode: "none".into(),
    }
}

/// pp100: 0.1 s and 0.2 s; tg10: 0.01 s three times.
fn records() -> Vec<BenchRecord> {
    vec![
        BenchRecord {
            n_prompt: 100,
            n_gen: 0,
            test_time: "2025-01-01T00:00:00Z".into(),
            samples_ns: vec![100_000_000, 200_000_000],
            flash_attn: true,
            variant: None,
        },
        BenchRecord {
            n_prompt: 0,
            n_gen: 10,
            test_time: "2025-01-01T00:00:01Z".into(),
            samples_ns: vec![10_000_000; 3],
            flash_attn: true,
            variant: None,
        },
    ]
}

#[test]
fn statistics_are_llama_benchs() {
    let r = &records()[0];
    assert_eq!(r.name(), "pp100");
    assert_eq!(r.samples_ts(), [1000.0, 500.0]);
    assert_eq!(r.avg_ns(), 150_000_000);
    // Sample standard deviation (n - 1) of 0.1 and 0.2 s; the mean of the rates.
    assert_eq!(r.stddev_ns(), 70_710_678);
    assert_eq!(r.avg_ts(), 750.0);
    assert!((r.stddev_ts() - 353.5533905932738).abs() < 1e-9);
    let tg = &records()[1];
    assert_eq!(
        (tg.name(), tg.avg_ts(), tg.stddev_ts()),
        ("tg10".into(), 1000.0, 0.0)
    );
    let pg = BenchRecord {
        n_prompt: 4,
        n_gen: 2,
        ..tg.clone()
    };
    assert_eq!(pg.name(), "pp4+tg2");
    assert_eq!(pg.avg_ts(), 600.0, "prompt and generated tokens both count");
}

#[test]
fn every_format_carries_every_field_in_order() {
    let (c, r) = (context(), records());
    let csv = render_bench_csv(&c, &r);
    let mut lines = csv.lines();
    assert_eq!(lines.next().unwrap(), LLAMA_BENCH_FIELDS.join(","));
    let first = lines.next().unwrap();
    assert!(
        first.starts_with("\"abc1234\",\"7\",\"Test CPU\""),
        "{first}"
    );
    assert!(first.contains(",\"100\",\"0\",\"0\",\"2025-01-01T00:00:00Z\",\"150000000\","));

    let json: serde_json::Value = serde_json::from_str(&render_bench_json(&c, &r)).unwrap();
    let rows = json.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["avg_ts"], 750.0);
    assert_eq!(rows[0]["cpu_strict"], false);
    assert_eq!(
        rows[1]["samples_ns"],
        serde_json::json!([10_000_000, 10_000_000, 10_000_000])
    );

    let jsonl = render_bench_jsonl(&c, &r);
    assert_eq!(jsonl.lines().count(), 2);
    for line in jsonl.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v.as_object().unwrap().len(), LLAMA_BENCH_FIELDS.len() + 2);
    }

    let md = render_bench_md(&c, &r);
    let lines: Vec<&str> = md.lines().collect();
    assert!(lines[0].starts_with("| model "), "{md}");
    assert!(lines[1].starts_with("| ---"), "{md}");
    assert!(lines[2].contains("llama 361K Q8_0") && lines[2].contains("pp100"));
    assert!(lines[2].contains("750.00 ± 353.55"), "{md}");
    assert!(lines[3].contains("tg10") && lines[3].contains("1000.00 ± 0.00"));
    assert_eq!(lines.last().unwrap(), &"build: abc1234 (7)");
}
