//! Each architecture beyond Llama through the commands a user runs on a file: a tiny
//! GGUF of each (`synth`), `run` on the GPU and on the CPU reference (the same text),
//! and, where the architecture adds ops, `profile` naming them. (The decoders, `check`
//! and prefill of each are tested in the model crate; a process here is seconds of
//! lavapipe, so each command runs where it shows something of its own.)

use crate::common::{gpuscope, have_gpu, text};

/// (preset, the architecture its file says, ops of its profile's table beyond Llama's).
const ARCHITECTURES: [(&str, &str, &[&str]); 5] = [
    // The post norms' adds (Llama's residual adds are in the gemvs).
    ("tiny-gemma3", "gemma3", &["head_norm", "gelu_mul", "add"]),
    // The q/k/v biases.
    ("tiny-qwen2", "qwen2", &["add"]),
    ("tiny-qwen3", "qwen3", &["head_norm"]),
    // Mistral files say `llama` (its window is a key of the llama architecture).
    ("tiny-mistral", "llama", &[]),
    ("tiny-phi3", "phi3", &[]),
];

#[test]
fn each_architecture_runs_on_gpu_and_cpu_alike_and_profiles() {
    if !have_gpu() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (preset, arch, ops) in ARCHITECTURES {
        let file = dir.path().join(format!("{preset}.gguf"));
        let file = file.to_str().unwrap();
        let out = gpuscope(&["synth", "--preset", preset, "--weights", "q8_0", "-o", file]);
        assert!(out.status.success(), "{preset}: {}", text(&out.stderr));
        let run = |extra: &[&str]| {
            let mut args = vec!["run", file, "--prompt", "the cat sat", "-n", "6"];
            args.extend(extra);
            let out = gpuscope(&args);
            let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
            assert!(out.status.success(), "{preset} {extra:?}: {stderr}");
            (stdout, stderr)
        };
        let (gpu_text, gpu_err) = run(&[]);
        let (cpu_text, _) = run(&["--cpu"]);
        assert!(!gpu_text.is_empty(), "{preset}: no text");
        assert_eq!(gpu_text, cpu_text, "{preset}: GPU and CPU texts differ");
        assert!(
            gpu_err.contains(&format!("({arch}, ")),
            "{preset}: {gpu_err}"
        );
        assert!(
            gpu_err.contains("batched prefill") || gpu_err.contains("decode step per token"),
            "{preset}: no prompt method: {gpu_err}"
        );
        if ops.is_empty() {
            continue;
        }
        let out = gpuscope(&["profile", file, "--tokens", "3"]);
        let report = text(&out.stdout);
        assert!(out.status.success(), "{preset}: {}", text(&out.stderr));
        assert!(report.contains(&format!("({arch})")), "{preset}: {report}");
        for op in ops {
            let row = |l: &&str| l.starts_with("  ") && l.split_whitespace().next() == Some(op);
            assert!(
                report.lines().any(|l| row(&l)),
                "{preset}: no {op} row in the report:\n{report}"
            );
        }
    }
}
