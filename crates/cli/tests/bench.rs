//! `gpuscope bench`: llama-bench's options and output fields, on the tiny preset.

use crate::common::{gpuscope, have_gpu, text};

/// llama-bench's output fields, copied from `test::get_fields()` in
/// `tools/llama-bench/llama-bench.cpp` of ggml-org/llama.cpp (commit 0104b151), in its
/// order; its JSON and JSONL printers add `samples_ns` and `samples_ts`. Kept here, apart
/// from gpuscope's own list, so that a change to either shows.
const LLAMA_BENCH_FIELDS: [&str; 40] = [
    "build_commit",
    "build_number",
    "cpu_info",
    "gpu_info",
    "backends",
    "model_filename",
    "model_type",
    "model_size",
    "model_n_params",
    "n_batch",
    "n_ubatch",
    "n_threads",
    "cpu_mask",
    "cpu_strict",
    "poll",
    "type_k",
    "type_v",
    "n_gpu_layers",
    "n_cpu_moe",
    "split_mode",
    "main_gpu",
    "no_kv_offload",
    "flash_attn",
    "devices",
    "tensor_split",
    "tensor_buft_overrides",
    "load_mode",
    "embeddings",
    "no_op_offload",
    "no_host",
    "fit_target",
    "fit_min_ctx",
    "n_prompt",
    "n_gen",
    "n_depth",
    "test_time",
    "avg_ns",
    "stddev_ns",
    "avg_ts",
    "stddev_ts",
];

fn bench(args: &[&str]) -> String {
    let out = gpuscope(&[&["bench", "--preset", "tiny", "-r", "2"][..], args].concat());
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn every_output_format_has_llama_benchs_columns() {
    if !have_gpu() {
        return;
    }
    let json_fields: Vec<&str> = LLAMA_BENCH_FIELDS
        .iter()
        .copied()
        .chain(["samples_ns", "samples_ts"])
        .collect();
    // -pg spelled as llama-bench spells it.
    let json = bench(&["-p", "16", "-n", "4", "-pg", "8,2", "-o", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let tests: Vec<(u64, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["n_prompt"].as_u64().unwrap(),
                r["n_gen"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(tests, [(16, 0), (0, 4), (8, 2)]);
    // Key order as written (serde_json's map would sort them).
    let first_object = &json[..json.find("\n  }").unwrap()];
    let keys: Vec<&str> = first_object
        .lines()
        .filter_map(|l| l.trim().strip_prefix('"')?.split('"').next())
        .collect();
    assert_eq!(keys, json_fields);
    for r in &rows {
        assert_eq!(r["samples_ns"].as_array().unwrap().len(), 2);
        assert!(r["avg_ts"].as_f64().unwrap() > 0.0);
        assert_eq!(
            r["backends"].as_str().unwrap().split('-').next(),
            Some("wgpu")
        );
        assert_eq!(r["model_filename"], "preset:tiny");
    }

    let csv = bench(&["-p", "8", "-n", "0", "-o", "csv"]);
    assert_eq!(csv.lines().next().unwrap(), LLAMA_BENCH_FIELDS.join(","));
    assert_eq!(csv.lines().count(), 2);

    let jsonl = bench(&["-p", "0", "-n", "2", "-o", "jsonl"]);
    let line: serde_json::Map<String, serde_json::Value> =
        serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    let mut got: Vec<&str> = line.keys().map(String::as_str).collect();
    let mut want = json_fields.clone();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);

    let md = bench(&["-p", "8", "-n", "2"]);
    let header: Vec<&str> = md
        .lines()
        .next()
        .unwrap()
        .split('|')
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        ["", "model", "size", "params", "backend", "ngl", "test", "t/s", ""]
    );
    assert!(
        md.contains("pp8") && md.contains("tg2") && md.contains(" ± "),
        "{md}"
    );
    assert!(md.contains("\nbuild: "), "{md}");
}

#[test]
fn nothing_to_run_and_bad_lists_are_errors() {
    let out = gpuscope(&["bench", "--preset", "tiny", "-p", "0", "-n", "0"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("nothing to run"),
        "{}",
        text(&out.stderr)
    );
    let out = gpuscope(&["bench", "-p", "12x"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("`12x`"), "{}", text(&out.stderr));
    let out = gpuscope(&["bench", "--full-warmup", "--no-warmup"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("cannot be used with"),
        "{}",
        text(&out.stderr)
    );
    let out = gpuscope(&["bench", "-pg", "512"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("expected PP,TG"),
        "{}",
        text(&out.stderr)
    );
}

/// `--full-warmup` warms up with the whole test, and bench says which warm-up ran.
#[test]
fn a_full_warmup_runs_the_test_first() {
    if !have_gpu() {
        return;
    }
    let args = ["bench", "--preset", "tiny", "-r", "2", "-p", "0", "-n", "8"];
    let out = gpuscope(&[&args[..], &["--full-warmup", "-o", "csv"]].concat());
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("each after a warm-up run of the whole test"),
        "{}",
        text(&out.stderr)
    );
    let stdout = text(&out.stdout);
    let rows: Vec<&str> = stdout.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{stdout}");
    assert!(rows[0].contains(r#""0","8","0""#), "{stdout}");
    // Without it, llama-bench's warm-up, said so.
    let out = gpuscope(&args);
    assert!(
        text(&out.stderr).contains("the prompt and one token (as llama-bench)"),
        "{}",
        text(&out.stderr)
    );
}

/// `--kernel OP=V1,V2` runs every test once per choice, as llama-bench's `-fa 0,1`:
/// the configurations in order, each row named in the Markdown table's `kernel` column
/// and in a `gpuscope_kernels` field after llama-bench's; `flash_attn` says whether the
/// test's attention was one fused kernel (a prompt's always is; generation with
/// `--fuse` without `attention` is not). A bad choice anywhere in a list is refused
/// before anything runs.
#[test]
fn kernel_lists_run_each_configuration_named_in_the_output() {
    if !have_gpu() {
        return;
    }
    let md = bench(&[
        "-p",
        "8",
        "-n",
        "2",
        "--kernel",
        "attention=workgroup,subgroup",
    ]);
    let rows: Vec<Vec<&str>> = md
        .lines()
        .filter(|l| l.starts_with('|'))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(
        rows[0],
        ["", "model", "size", "params", "backend", "ngl", "kernel", "test", "t/s", ""]
    );
    let named: Vec<(&str, &str)> = rows[2..].iter().map(|r| (r[6], r[7])).collect();
    assert_eq!(
        named,
        [
            ("attention=workgroup", "pp8"),
            ("attention=workgroup", "tg2"),
            ("attention=subgroup", "pp8"),
            ("attention=subgroup", "tg2"),
        ],
        "{md}"
    );

    let json = bench(&["-p", "8", "-n", "2", "--fuse", "norm,rope", "-o", "json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let fa: Vec<(u64, i64)> = rows
        .iter()
        .map(|r| {
            (
                r["n_gen"].as_u64().unwrap(),
                r["flash_attn"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(fa, [(0, 1), (2, 0)], "{json}");
    assert!(rows.iter().all(|r| r.get("gpuscope_kernels").is_none()));

    let csv = bench(&[
        "-p",
        "8",
        "-n",
        "0",
        "--kernel",
        "attention=workgroup,subgroup",
        "-o",
        "csv",
    ]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], LLAMA_BENCH_FIELDS.join(",") + ",gpuscope_kernels");
    assert!(
        lines[1].ends_with(",\"attention=workgroup\"")
            && lines[2].ends_with(",\"attention=subgroup\""),
        "{csv}"
    );

    let out = gpuscope(&[
        "bench",
        "--preset",
        "tiny",
        "-r",
        "1",
        "-p",
        "8",
        "-n",
        "0",
        "--kernel",
        "attention=workgroup,bogus",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("attention=bogus"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        text(&out.stdout).is_empty(),
        "nothing measured before the refusal"
    );
    // Lists multiply: 7 · 7 · 6 configurations are refused before anything is made.
    let out = gpuscope(&[
        "bench",
        "--preset",
        "tiny",
        "--kernel",
        "a=1,2,3,4,5,6,7",
        "--kernel",
        "b=1,2,3,4,5,6,7",
        "--kernel",
        "c=1,2,3,4,5,6",
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("more than 256 configurations"),
        "{}",
        text(&out.stderr)
    );
}
