//! `gpuscope bench --sweep` and `--experiment`: gemv configurations timed on the adapter
//! (lavapipe in CI), every combination present once, the best per shape marked, the
//! experiments' forms and formats, and values the adapter cannot run refused up front.

use crate::common::{gpuscope, gpuscope_with_cache, have_gpu, one_error, text};

/// Warm caches: these tests are of the sweep's combinations and outputs, and a cold run's
/// flush (64 MiB written before each run on lavapipe) tripled their time in CI; `ops
/// perf`'s tests cover the cold timing.
fn sweep(args: &[&str]) -> String {
    let out = gpuscope(
        &[
            &["bench", "--preset", "tiny", "-r", "2", "--warm-caches"][..],
            args,
        ]
        .concat(),
    );
    assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
    text(&out.stdout)
}

fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&sweep(&[args, &["-o", "json"]].concat())).expect("sweep JSON")
}

#[test]
fn a_sweep_times_every_combination_and_marks_the_best_per_shape() {
    if !have_gpu() {
        return;
    }
    let csv = sweep(&[
        "--sweep",
        "shape=64x256,96x256",
        "--sweep",
        "format=q8_0,f16",
        "--sweep",
        "rows=1,2",
        "-o",
        "csv",
    ]);
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    assert_eq!(header, gpuscope_report::render::sweep::CSV_COLUMNS);
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 8, "{csv}");
    let mut seen: Vec<(String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r[col("shape")].to_string(),
                r[col("format")].to_string(),
                r[col("rows_per_lane")].to_string(),
            )
        })
        .collect();
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 8, "every combination once: {csv}");
    for shape in ["64x256", "96x256"] {
        let of_shape: Vec<&Vec<&str>> = rows.iter().filter(|r| r[col("shape")] == shape).collect();
        let best: Vec<&&Vec<&str>> = of_shape
            .iter()
            .filter(|r| r[col("best")] == "true")
            .collect();
        assert_eq!(best.len(), 1, "one best for {shape}: {csv}");
        let time = |r: &Vec<&str>| r[col("time_us")].parse::<f64>().unwrap();
        assert!(of_shape
            .iter()
            .all(|r| time(r) > 0.0 && time(best[0]) <= time(r)));
        // f16 moves more bytes than q8_0 for the same shape.
        let bytes = |f: &str| {
            of_shape
                .iter()
                .find(|r| r[col("format")] == f)
                .map(|r| r[col("bytes")].parse::<u64>().unwrap())
                .unwrap()
        };
        assert!(bytes("f16") > bytes("q8_0"));
    }
    // A layout axis: q8_0 in both layouts, f16 (no packed form) once.
    let csv = sweep(&[
        "--sweep",
        "shape=64x256",
        "--sweep",
        "format=q8_0,f16",
        "--sweep",
        "layout=gguf,packed",
        "-o",
        "csv",
    ]);
    let layouts: Vec<String> = csv
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            format!("{} {}", f[col("format")], f[col("layout")])
        })
        .collect();
    assert_eq!(layouts, ["q8_0 gguf", "q8_0 packed", "f16 gguf"], "{csv}");
    // No `gpuscope peak` in this cache: no roofline figures, and the report says so.
    assert!(rows.iter().all(|r| r[col("pct_of_ceiling")].is_empty()));
    let md = sweep(&["--sweep", "shape=64x256", "--sweep", "fuse=on,off"]);
    assert!(md.contains("run `gpuscope peak`"), "{md}");
    assert!(md.contains("Best configuration per shape"), "{md}");
}

#[test]
fn the_experiments_run_their_forms_and_formats_and_draw_a_chart() {
    if !have_gpu() {
        return;
    }
    let v = json(&["--experiment", "all", "--sweep", "shape=64x256"]);
    let rows = v["rows"].as_array().expect("rows");
    let of = |e: &str| -> Vec<&serde_json::Value> {
        rows.iter().filter(|r| r["experiment"] == e).collect()
    };
    let modes: Vec<&str> = of("memory-vs-compute")
        .iter()
        .map(|r| r["mode"].as_str().unwrap())
        .collect();
    assert_eq!(modes, ["full", "read-only", "compute-only"]);
    let mvc = of("memory-vs-compute");
    assert_eq!(mvc[1]["flops"], 0, "read-only does no arithmetic");
    assert_eq!(
        mvc[2]["flops"], mvc[0]["flops"],
        "compute-only does all of it"
    );
    let formats: Vec<&str> = of("quant-overhead")
        .iter()
        .map(|r| r["format"].as_str().unwrap())
        .collect();
    assert_eq!(formats, ["f16", "q8_0", "q4_0", "q4_k"]);
    let wgs: Vec<u64> = of("workgroup")
        .iter()
        .map(|r| r["workgroup"].as_u64().unwrap())
        .collect();
    assert!(
        wgs.len() >= 3 && wgs.contains(&64) && wgs.contains(&256),
        "{wgs:?}"
    );
    let tile = of("tile");
    assert!(tile.len() >= 9, "lanes x rows: {}", tile.len());
    assert_eq!(tile.iter().filter(|r| r["best"] == true).count(), 1);
    assert!(rows.iter().all(|r| r["shape"] == "64x256"));

    let html = sweep(&[
        "--experiment",
        "quant-overhead",
        "--sweep",
        "shape=64x256",
        "-o",
        "html",
    ]);
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<section id=\"quant-overhead\">") && html.contains("<svg"));
    assert_eq!(
        html.matches("<rect class=\"bar").count(),
        4,
        "one bar per format"
    );
    assert_eq!(html.matches("class=\"bar best\"").count(), 1);
}

#[test]
fn values_the_adapter_cannot_run_are_one_line_errors_before_anything_runs() {
    if !have_gpu() {
        return;
    }
    for (args, names) in [
        (
            &["--sweep", "wg=4096", "--sweep", "variant=shared"][..],
            "wg=4096",
        ),
        (
            &["--sweep", "lanes=3", "--sweep", "variant=shared"][..],
            "lanes=3",
        ),
        (&["--sweep", "rows=5"][..], "rows=5"),
        (
            &["--sweep", "format=q4_k", "--sweep", "shape=64x100"][..],
            "format=q4_k",
        ),
        (&["--sweep", "tiles=4"][..], "unknown axis `tiles`"),
        (&["--sweep", "variant=wide"][..], "variant=wide"),
        (&["--experiment", "speed"][..], "--experiment speed"),
        (&["-o", "html"][..], "-o html"),
    ] {
        let out = gpuscope(&[&["bench", "--preset", "tiny"][..], args].concat());
        assert_eq!(
            out.status.code(),
            Some(1),
            "{args:?}: {}",
            text(&out.stderr)
        );
        let line = one_error(&out.stderr);
        assert!(line.contains(names), "{args:?}: {line}");
        assert!(out.stdout.is_empty(), "{args:?} printed results");
    }
}

/// `--save-tuning`: the sweep's fastest variant (summed over its shapes) becomes the
/// adapter's default gemv for `profile`, which says so in its settings; `--kernel` still
/// overrides it; a corrupt file is named and ignored.
#[test]
fn a_saved_tuning_becomes_the_default_plan_until_overridden() {
    if !have_gpu() {
        return;
    }
    let cache = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = gpuscope_with_cache(cache.path(), args);
        assert!(out.status.success(), "{args:?}: {}", text(&out.stderr));
        (text(&out.stdout), text(&out.stderr))
    };
    let (_, err) = run(&[
        "bench",
        "--preset",
        "tiny",
        "-r",
        "2",
        "--warm-caches",
        "--sweep",
        "shape=64x256,96x256",
        "--sweep",
        "variant=shared,rows",
        "--save-tuning",
    ]);
    let saved = err
        .lines()
        .find(|l| l.starts_with("gpuscope: kernel tuning saved to "))
        .unwrap_or_else(|| panic!("no tuning saved: {err}"));
    let chosen = ["shared", "rows"]
        .into_iter()
        .find(|v| saved.contains(&format!("gemv {v},")))
        .unwrap_or_else(|| panic!("{saved}"));
    assert!(saved.contains("gemv_large (rule)"), "{saved}");
    let settings = |extra: &[&str]| -> serde_json::Value {
        let json = cache.path().join("p.json");
        run(&[
            &[
                "profile",
                "--preset",
                "tiny",
                "--tokens",
                "2",
                "--json",
                json.to_str().unwrap(),
            ][..],
            extra,
        ]
        .concat());
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        v["workload"]["settings"].clone()
    };
    let s = settings(&[]);
    assert!(s["gemv"].as_str().unwrap().starts_with(chosen), "{s}");
    assert!(
        s["tuning"].as_str().unwrap().contains("--save-tuning"),
        "{s}"
    );
    let other = if chosen == "rows" { "shared" } else { "rows" };
    let s = settings(&["--kernel", &format!("gemv={other}")]);
    assert!(s["gemv"].as_str().unwrap().starts_with(other), "{s}");
    assert!(s.get("tuning").is_none(), "{s}");
    // A corrupt tuning file is named on stderr and the rules decide.
    let dir = cache.path().join("tuning");
    for f in std::fs::read_dir(&dir).unwrap() {
        std::fs::write(f.unwrap().path(), "{").unwrap();
    }
    let json = cache.path().join("q.json");
    let (_, err) = run(&[
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "2",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(
        err.contains("not using the kernel tuning") && err.contains("corrupt"),
        "{err}"
    );
}
