//! End-to-end runs of the binary: reports, JSON, exit codes and error messages.

use crate::common::{gpuscope, have_gpu, smollm2, text};

#[test]
fn profile_prints_every_section_and_writes_json_that_report_reads() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("p.json");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--weights",
        "q4_0",
        "--tokens",
        "4",
        "--warmup",
        "1",
        "--overhead",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(
        out.status.success(),
        "exit {:?}\n{}\n{}",
        out.status,
        stdout,
        text(&out.stderr)
    );
    for section in [
        "Adapter:",
        "Timing:",
        "Ceilings: none",
        "Steady state:",
        "Tokens: 4 decoded",
        "gemv_q4_0",
        "Roofline per token",
        "Layers",
        "Timeline",
        "Memory",
        "Counters per token",
        "Timestamps:",
        "Overhead:",
        "Checklist",
        "Bottleneck:",
        // Where setup went (issue 29): the decoder's phases and the creations in them.
        "where it went (CPU spans; phases hold their creations): setup: ",
        "setup: weights (repack and upload)",
        "create_pipeline",
    ] {
        assert!(stdout.contains(section), "missing {section}:\n{stdout}");
    }
    let report = gpuscope(&["report", json.to_str().unwrap()]);
    assert!(report.status.success());
    let again = text(&report.stdout);
    assert!(
        again.contains("gemv_q4_0") && again.contains("Bottleneck:"),
        "{again}"
    );
}

#[test]
fn every_timing_mode_runs() {
    if !have_gpu() {
        return;
    }
    for mode in ["off", "pass", "dispatch"] {
        let out = gpuscope(&[
            "profile", "--preset", "tiny", "--tokens", "2", "--warmup", "0", "--timing", mode,
        ]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{mode}: {}", text(&out.stderr));
        assert!(
            stdout.contains(&format!("Timing:   {mode}")),
            "{mode}:\n{stdout}"
        );
    }
}

#[test]
fn unknown_adapter_is_a_one_line_error_with_exit_3() {
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "1",
        "--adapter",
        "no-such-gpu-xyz",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    // (Mesa may print its own `error: XDG_RUNTIME_DIR ...` lines on headless machines.)
    let line = err
        .lines()
        .find(|l| l.starts_with("error: no GPU adapter"))
        .expect("an error line");
    assert!(line.contains("matching \"no-such-gpu-xyz\""), "{line}");
    assert!(line.contains("adapters found"), "{line}");
}

#[test]
fn bad_arguments_name_what_is_wrong() {
    let out = gpuscope(&["profile", "--preset", "gpt-9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("unknown preset `gpt-9`"),
        "{}",
        text(&out.stderr)
    );
    let out = gpuscope(&["profile", "--weights", "q3_k"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("q3_k"), "{}", text(&out.stderr));
    let out = gpuscope(&["profile", "--timing", "sometimes"]);
    assert_eq!(out.status.code(), Some(2), "clap usage errors exit 2");
}

#[test]
fn report_of_a_malformed_file_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.json");
    std::fs::write(
        &path,
        "{\"format\": {\"major\": 1, \"minor\": 0}, \"tool\": ",
    )
    .unwrap();
    let out = gpuscope(&["report", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains("broken.json"), "{err}");
    let future = dir.path().join("future.json");
    std::fs::write(&future, "{\"format\": {\"major\": 9, \"minor\": 0}}").unwrap();
    let out = gpuscope(&["report", future.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("9.0"), "{}", text(&out.stderr));
}

/// `profile --capture` of the tiny preset, with data and the outputs of tokens 1..3.
pub fn capture_tiny(dir: &std::path::Path) -> String {
    capture_tiny_tokens(dir, "1..3")
}

fn capture_tiny_tokens(dir: &std::path::Path, tokens: &str) -> String {
    let cap = dir.join("run");
    let json = dir.join("live.json");
    let out = gpuscope(&[
        "profile",
        "--preset",
        "tiny",
        "--tokens",
        "3",
        "--warmup",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--capture",
        cap.to_str().unwrap(),
        "--capture-data",
        "--capture-tokens",
        tokens,
        // Unfused: every op family its own kernel (the substitution test edits silu_mul).
        "--fuse",
        "none",
    ]);
    assert!(
        out.status.success(),
        "{}\n{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(
        text(&out.stderr).contains("capture of 3 steps written"),
        "{}",
        text(&out.stderr)
    );
    cap.to_str().unwrap().to_string()
}

#[test]
fn capture_then_replay_gives_the_live_runs_dispatches_and_counters() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_tiny(dir.path());
    for view in [
        "run_measurements.json",
        "run_shaders.json",
        "run_used_consts.json",
        "run_used_pipelines.json",
        "manifest.json",
    ] {
        assert!(std::path::Path::new(&cap).join(view).is_file(), "{view}");
    }
    let replayed = dir.path().join("replay.json");
    let out = gpuscope(&["replay", &cap, "--json", replayed.to_str().unwrap()]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("all") && stdout.contains("outputs match"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Tokens: 3 decoded") && stdout.contains("gemv_q8_0"),
        "{stdout}"
    );
    let live = gpuscope_trace::io::load_profile(&dir.path().join("live.json")).unwrap();
    let again = gpuscope_trace::io::load_profile(&replayed).unwrap();
    assert_eq!(live.dispatches.len(), again.dispatches.len());
    for (a, b) in live.tokens.iter().zip(&again.tokens) {
        assert_eq!(a.counters, b.counters, "token {}", a.index);
        assert_eq!(
            a.token_id, b.token_id,
            "replayed from the captured contents: same tokens"
        );
    }
}

#[test]
fn replay_per_command_lists_each_command_once_and_counts_sum_to_the_stream() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_tiny(dir.path());
    let json = dir.path().join("per_command.json");
    let out = gpuscope(&[
        "replay",
        &cap,
        "--per-command",
        "--json",
        json.to_str().unwrap(),
    ]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.contains("Per-command replay") && stdout.contains("share"),
        "{stdout}"
    );
    let report: gpuscope_trace::capture::PerCommandReport =
        serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let mut keys: Vec<_> = report
        .commands
        .iter()
        .map(|c| (c.pipeline.clone(), c.bind_group, c.workgroups))
        .collect();
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n, "each unique command once");
    assert_eq!(
        report.commands.iter().map(|c| c.count).sum::<u64>(),
        report.stream_dispatches
    );
    let live = gpuscope_trace::io::load_profile(&dir.path().join("live.json")).unwrap();
    assert_eq!(report.stream_dispatches, live.dispatches.len() as u64);
}

#[test]
fn inspect_summarises_a_capture() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_tiny(dir.path());
    let out = gpuscope(&["inspect", &cap]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for part in [
        "Stream:   3 steps",
        "unique commands",
        "Shaders (",
        "gemv_q8_0",
        "Buffers:",
        "Top commands",
        "dispatch outputs of steps [1, 2]",
    ] {
        assert!(stdout.contains(part), "missing {part}:\n{stdout}");
    }
}

#[test]
fn replay_with_a_substituted_kernel_names_the_first_mismatching_dispatch() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // From token 0: steps before the captured ones replay with the edited kernel too, so
    // a later range would first differ wherever that kernel's earlier effects arrive.
    let cap = capture_tiny_tokens(dir.path(), "0..2");
    let original =
        std::fs::read_to_string(std::path::Path::new(&cap).join("shaders/silu_mul.wgsl")).unwrap();
    let wrong = dir.path().join("silu_wrong.wgsl");
    std::fs::write(&wrong, original.replace("* up[i]", "* up[i] * 2.0")).unwrap();
    let out = gpuscope(&[
        "replay",
        &cap,
        "--substitute",
        &format!("silu_mul={}", wrong.display()),
    ]);
    // A negative verdict (5), not bad input (1).
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stdout));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("First mismatch: step 0 dispatch")
            && stdout.contains("(L0.ffn_silu_mul, silu_mul"),
        "{stdout}"
    );
    assert!(
        text(&out.stderr).contains("L0.ffn_silu_mul"),
        "{}",
        text(&out.stderr)
    );
    let bad = dir.path().join("silu_bad.wgsl");
    std::fs::write(
        &bad,
        original.replace("var<storage, read_write> out", "var<storage, read> out"),
    )
    .unwrap();
    let out = gpuscope(&[
        "replay",
        &cap,
        "--substitute",
        &format!("silu_mul={}", bad.display()),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("binding 2") && err.contains("nothing was run"),
        "{err}"
    );
    assert!(
        text(&out.stdout).is_empty(),
        "refused before replaying anything"
    );
}

/// Issue 24: an argmax that writes a wrong token is named under `--tolerance` too. The
/// token is a u32: as f32 words 265 and 7 are both denormals, "within" any tolerance, and
/// the first mismatch used to land on a later dispatch the wrong token fed.
#[test]
fn a_wrong_integer_output_is_named_under_a_tolerance() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_tiny_tokens(dir.path(), "0..2");
    let shaders = std::path::Path::new(&cap).join("shaders");
    let original = std::fs::read_to_string(shaders.join("argmax.wgsl")).unwrap();
    let wrong = dir.path().join("argmax_wrong.wgsl");
    std::fs::write(
        &wrong,
        original.replace("out[0] = best_i[0];", "out[0] = best_i[0] + 3u;"),
    )
    .unwrap();
    let names_argmax = |extra: &[&str]| {
        let sub = format!("argmax={}", wrong.display());
        let mut args = vec!["replay", &cap, "--substitute", &sub];
        args.extend_from_slice(extra);
        let out = gpuscope(&args);
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(5), "{stdout}");
        assert!(
            stdout.contains("First mismatch: step 0 dispatch") && stdout.contains("argmax"),
            "{extra:?}: {stdout}"
        );
    };
    names_argmax(&[]);
    names_argmax(&["--tolerance", "1e-6"]);
}

#[test]
fn corrupted_captures_name_the_file_and_what_is_wrong() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cap = capture_tiny(dir.path());
    let capdir = std::path::Path::new(&cap);
    let run = |what: &str| {
        let out = gpuscope(&["inspect", &cap]);
        assert_eq!(out.status.code(), Some(1), "{what}");
        text(&out.stderr)
    };
    let blob = std::fs::read_dir(capdir.join("blobs"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let blob_bytes = std::fs::read(&blob).unwrap();
    std::fs::remove_file(&blob).unwrap();
    let err = run("missing blob");
    assert!(
        err.contains(blob.file_name().unwrap().to_str().unwrap()) && err.contains("missing"),
        "{err}"
    );
    std::fs::write(&blob, blob_bytes).unwrap();
    let manifest = capdir.join("manifest.json");
    let good = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(&manifest, &good[..good.len() / 3]).unwrap();
    let err = run("truncated manifest");
    assert!(
        err.contains("manifest.json") && err.contains("truncated"),
        "{err}"
    );
    std::fs::write(&manifest, good.replacen("\"major\": 1", "\"major\": 2", 1)).unwrap();
    let err = run("wrong version");
    assert!(
        err.contains("capture format 2.") && err.contains("reads format 1.x"),
        "{err}"
    );
    std::fs::write(&manifest, &good).unwrap();
    let stream = capdir.join("stream.json");
    let s = std::fs::read(&stream).unwrap();
    std::fs::write(&stream, &s[..s.len() - 100]).unwrap();
    let err = run("truncated stream");
    assert!(
        err.contains("stream.json") && err.contains("truncated"),
        "{err}"
    );
}

// --- Real models (GGUF files) -------------------------------------------------------

#[test]
fn run_real_model_prints_text_then_speeds() {
    let Some(model) = smollm2() else { return };
    if !have_gpu() {
        return;
    }
    let out = gpuscope(&[
        "run",
        &model,
        "--prompt",
        "The capital of France is",
        "-n",
        "4",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("Paris"), "{stdout}");
    for needle in [
        "load ",
        "prompt processing 5 tokens",
        // A CPU adapter without the wide rows frame takes the prompt through decode steps
        // (and says so); GPUs and lavapipe batch it, the batch sized to the prompt.
        if stderr.contains("one decode step per token") {
            "one decode step per token"
        } else {
            "(batched prefill, up to 5 tokens a batch)"
        },
        "generation 4 tokens",
        "tok/s",
        // 4 tokens: 3 intervals, less the first token's (from the prompt).
        "token interval median",
        "3 intervals",
        "q4_1 ×210",
    ] {
        assert!(stderr.contains(needle), "missing {needle:?}:\n{stderr}");
    }
}

#[test]
fn run_on_the_cpu_reference_gives_the_same_text() {
    let Some(model) = smollm2() else { return };
    let out = gpuscope(&[
        "run",
        &model,
        "--prompt",
        "The capital of France is",
        "-n",
        "2",
        "--cpu",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).trim_end(), " Paris.");
    assert!(
        text(&out.stderr).contains("CPU reference setup"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn profile_of_a_model_file_names_it_in_the_header() {
    let Some(model) = smollm2() else { return };
    if !have_gpu() {
        return;
    }
    let out = gpuscope(&[
        "profile", &model, "--prompt", "Hi", "--tokens", "2", "--warmup", "0", "--timing", "pass",
    ]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let workload = stdout
        .lines()
        .find(|l| l.starts_with("Workload:"))
        .expect("a workload line");
    for needle in [
        "Smollm2 135M",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        "(llama)",
        "q4_1 ×210",
        "q8_0 ×1",
        "30 layers",
    ] {
        assert!(workload.contains(needle), "missing {needle:?}: {workload}");
    }
    assert!(stdout.contains("prompt: 1 tokens in"), "{stdout}");
    assert!(stdout.contains("Tokens: 2 decoded"), "{stdout}");
    // Generation continues after the prompt: the first recorded token is at position 1.
    let first = stdout
        .lines()
        .skip_while(|l| !l.contains("token    pos"))
        .nth(1)
        .expect("a token line");
    assert_eq!(first.split_whitespace().nth(1), Some("1"), "{first}");
}

#[test]
fn bad_model_files_are_one_line_errors() {
    use gpuscope_model::gguf::{GgufWriter, MetaValue};
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.gguf");
    std::fs::write(&junk, b"not a model at all").unwrap();
    let out = gpuscope(&["run", junk.to_str().unwrap(), "-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("not a GGUF file"),
        "{}",
        text(&out.stderr)
    );

    // An architecture gpuscope does not map: refused, with the ones it does.
    let falcon = dir.path().join("falcon.gguf");
    let mut w = GgufWriter::new();
    w.meta("general.architecture", MetaValue::String("falcon".into()));
    std::fs::write(&falcon, w.to_bytes()).unwrap();
    let out = gpuscope(&["profile", falcon.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("architecture \"falcon\" is not supported")
            && err.contains("llama, mistral, qwen2, qwen3, phi3, gemma3"),
        "{err}"
    );

    let cut = dir.path().join("cut.gguf");
    let mut w = GgufWriter::new();
    w.meta("general.architecture", MetaValue::String("llama".into()))
        .tensor("t", &[8], 0, vec![0; 32]);
    let bytes = w.to_bytes();
    std::fs::write(&cut, &bytes[..bytes.len() - 4]).unwrap();
    let out = gpuscope(&["run", cut.to_str().unwrap(), "-p", "hi"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("tensor \"t\""),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn run_with_capture_records_every_step_and_replays() {
    // Prompt steps and generation steps (two in flight) all land in the capture, and a
    // replay reproduces the run's counters.
    if !have_gpu() {
        return;
    }
    let Some(model) = smollm2() else { return };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("runcap");
    let out = gpuscope(&[
        "run",
        &model,
        "--prompt",
        "The capital of France is",
        "-n",
        "4",
        "--capture",
        cap.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    let steps: u32 = err
        .lines()
        .find_map(|l| {
            l.strip_prefix("gpuscope: capture of ")?
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no capture line in:\n{err}"));
    // 5 prompt tokens + 3 generation steps (the 4th token needs none).
    assert!(steps >= 8, "{steps} steps recorded:\n{err}");
    let replay = gpuscope(&["replay", cap.to_str().unwrap()]);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    let report = text(&replay.stdout);
    assert!(
        report.contains(&format!("Tokens: {steps} decoded")),
        "{report}"
    );
    assert!(!report.contains("FAIL"), "{report}");
    // With data and the outputs of two steps, the replay compares every output.
    let cap2 = dir.path().join("runcap_data");
    let out = gpuscope(&[
        "run",
        &model,
        "--prompt",
        "The capital",
        "-n",
        "2",
        "--capture",
        cap2.to_str().unwrap(),
        "--capture-data",
        "--capture-tokens",
        "1..3",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let replay = gpuscope(&["replay", cap2.to_str().unwrap()]);
    assert!(
        replay.status.success(),
        "{}\n{}",
        text(&replay.stdout),
        text(&replay.stderr)
    );
    let all = format!("{}{}", text(&replay.stdout), text(&replay.stderr));
    assert!(all.contains("outputs match the recorded ones"), "{all}");
    let cpu = gpuscope(&[
        "run",
        &model,
        "--prompt",
        "x",
        "--cpu",
        "--capture",
        cap.to_str().unwrap(),
    ]);
    assert_eq!(
        cpu.status.code(),
        Some(2),
        "--capture with --cpu is a usage error"
    );
}

#[test]
fn kernel_and_fuse_choices_change_the_graph_and_are_reported() {
    if !have_gpu() {
        return;
    }
    let profile = |extra: &[&str]| {
        let mut args = vec![
            "profile", "--preset", "tiny", "--tokens", "2", "--warmup", "0", "--timing", "off",
        ];
        args.extend_from_slice(extra);
        let out = gpuscope(&args);
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    };
    let graph_line = |stdout: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with("Workload:"))
            .unwrap_or_default()
            .to_string()
    };
    let (code, all, err) = profile(&[]);
    assert_eq!(code, Some(0), "{err}");
    // tiny: 2 layers; every fusion 5 per layer + 3, none 13 per layer + 4.
    assert!(graph_line(&all).contains("graph: 13 dispatches"), "{all}");
    assert!(
        all.contains("Settings:") && all.contains("fuse = all"),
        "{all}"
    );
    let (code, none, err) = profile(&["--fuse", "none"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(graph_line(&none).contains("graph: 30 dispatches"), "{none}");
    assert!(
        none.contains("fuse = none") && none.contains("silu_mul"),
        "{none}"
    );
    let (code, some, err) = profile(&["--fuse", "norm,rope", "--kernel", "gemv=shared"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        some.contains("fuse = norm,rope") && some.contains("gemv = shared"),
        "{some}"
    );
    let args = ["--kernel", "gemv=blocks:8x2", "--kernel", "weights=packed"];
    let (code, packed, err) = profile(&args);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        packed.contains("gemv = blocks:8x2, fixed 8 lanes") && packed.contains("weights = packed"),
        "{packed}"
    );
    let (code, _, err) = profile(&["--kernel", "gemv=blocks:3x2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("bad gemv shape `3x2`"), "{err}");
    let (code, _, err) = profile(&["--fuse", "norm,warp"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unknown fusion `warp`"), "{err}");
    let (code, _, err) = profile(&["--kernel", "gemv=fastest"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unknown gemv variant"), "{err}");
    let (code, pp, err) = profile(&["--prompt-tokens", "12"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(pp.contains("prompt: 12 tokens in"), "{pp}");
}

/// A prompt through batched prefill gets its GPU time by op in the profile (every
/// dispatch of every submit, timed with `--timing dispatch`), in the text report and in
/// `diff`; with timing off the ops are counted but none is timed, and the report prints
/// no table.
#[test]
fn profile_times_the_prompts_ops() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let run = |timing: &str| {
        let json = dir.path().join(format!("{timing}.json"));
        let out = gpuscope(&[
            "profile",
            "--preset",
            "tiny",
            "--weights",
            "q4_0",
            "--prompt-tokens",
            "40",
            "--tokens",
            "2",
            "--warmup",
            "0",
            "--timing",
            timing,
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let p: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        (
            text(&out.stdout),
            p["prompt"]["ops"].as_array().unwrap().clone(),
        )
    };
    let (report, ops) = run("dispatch");
    assert!(
        report.contains("prompt GPU time by op (every dispatch timed"),
        "{report}"
    );
    let field = |o: &serde_json::Value, k: &str| o[k].as_u64().unwrap();
    let mut last = u64::MAX;
    for o in &ops {
        assert_eq!(field(o, "calls"), field(o, "timed_calls"), "{o}");
        let ns = field(o, "gpu_ns");
        assert!(ns > 0 && ns <= last, "largest first, all timed: {ops:?}");
        last = ns;
        let name = o["op"].as_str().unwrap();
        assert!(report.contains(name), "{name} not in the report:\n{report}");
    }
    // The tiny preset's 2 layers: q/k/v, output, gate/up and down per layer in batched
    // form, one attention per layer, and the head.
    let calls = |pat: &str| -> u64 {
        ops.iter()
            .filter(|o| o["op"].as_str().unwrap().contains(pat))
            .map(|o| field(o, "calls"))
            .sum()
    };
    assert_eq!(calls("attention"), 2, "{ops:?}");
    assert!(calls("batched") + calls("gemm") >= 8, "{ops:?}");
    // Each layer's products are rows of their own, named by the label less the layer.
    let labels: Vec<&str> = ops.iter().filter_map(|o| o["label"].as_str()).collect();
    for label in [
        "attn_qkv",
        "attn_output",
        "ffn_down",
        "attn_norm",
        "ffn_norm",
    ] {
        assert!(labels.contains(&label), "{label} not among {labels:?}");
        assert!(report.contains(&format!(" {label} ")), "{label}:\n{report}");
    }
    // `diff` compares the prompts' ops, one row each.
    let timed = dir.path().join("dispatch.json");
    let timed = timed.to_str().unwrap();
    let out = gpuscope(&["diff", timed, timed]);
    let d = text(&out.stdout);
    let section = d
        .split("Prompt ops")
        .nth(1)
        .unwrap_or_else(|| panic!("{d}"));
    for o in &ops {
        let name = match o["label"].as_str() {
            Some(label) => format!("{} {label}", o["op"].as_str().unwrap()),
            None => o["op"].as_str().unwrap().to_string(),
        };
        assert!(section.contains(&name), "{name}:\n{d}");
    }
    let (report, ops) = run("off");
    assert!(!report.contains("prompt GPU time by op"), "{report}");
    assert!(
        !ops.is_empty()
            && ops
                .iter()
                .all(|o| field(o, "timed_calls") == 0 && field(o, "gpu_ns") == 0)
    );
}

/// `attn_output` and `down`: where the `groups` attention and dp4a gemvs run (forced here
/// on lavapipe), attention takes the output projection and gate/up adds the heads'
/// partials (4 dispatches a layer instead of 5), and gate/up takes the down projection,
/// whose partials the next layer's q/k/v adds (3 in every layer but the last): the same
/// tokens as with neither and as with `attn_output` alone, and `check` in f64 passes over
/// the fused kernels. Where they cannot run, the settings say why.
#[test]
fn attention_takes_the_output_projection_where_it_can() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let kernels = ["--kernel", "attention=groups", "--kernel", "gemv=dp4a"];
    let profile = |fuse: &str, extra: &[&str]| {
        let json = dir.path().join(format!("{fuse}.json"));
        let mut args = vec![
            "profile",
            "--preset",
            "tiny",
            "--weights",
            "q4_0",
            "--tokens",
            "12",
            "--warmup",
            "0",
            "--timing",
            "off",
            "--fuse",
            fuse,
            "--json",
            json.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let out = gpuscope(&args);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let p: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        (text(&out.stdout), p)
    };
    let tokens = |p: &serde_json::Value| -> Vec<u64> {
        p["tokens"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["token_id"].as_u64().unwrap())
            .collect()
    };
    let ops = |p: &serde_json::Value| -> Vec<String> {
        p["dispatches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["op"].as_str().unwrap().to_string())
            .collect()
    };
    let (fused_report, fused) = profile("all", &kernels);
    let (_, apart) = profile("norm,rope,silu,residual,attention", &kernels);
    let (_, no_down) = profile("norm,rope,silu,residual,attention,attn_output", &kernels);
    let per_token = |p: &serde_json::Value| {
        p["workload"]["graph_dispatches_per_token"]
            .as_u64()
            .unwrap()
    };
    // Two layers: one dispatch fewer in each, and the down projection's in the first.
    assert_eq!(per_token(&fused) + 3, per_token(&apart), "{fused_report}");
    assert_eq!(per_token(&fused) + 1, per_token(&no_down), "{fused_report}");
    let fused_ops = ops(&fused);
    assert!(
        fused_ops.contains(&"attention+gemv_q4_0".to_string()),
        "{fused_ops:?}"
    );
    for op in [
        "add+rms_norm+gemv_q4_0+silu_mul+gemv_q4_0",
        "add+rms_norm+gemv_q4_0+rope",
        "add+rms_norm+gemv_q4_0+silu_mul",
    ] {
        assert!(fused_ops.contains(&op.to_string()), "{op}: {fused_ops:?}");
    }
    assert_eq!(tokens(&fused), tokens(&apart));
    assert_eq!(tokens(&fused), tokens(&no_down));
    let mut args = vec![
        "check",
        "--preset",
        "tiny",
        "--weights",
        "q4_0",
        "--tokens",
        "3",
        "--precision",
        "f64",
    ];
    args.extend_from_slice(&kernels);
    let out = gpuscope(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    // The adapter's own plan (lavapipe: the `subgroup` attention) keeps them apart, and
    // says why.
    let (report, _) = profile("all", &[]);
    assert!(report.contains("attn_output"), "{report}");
}
