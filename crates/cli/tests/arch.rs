//! Each architecture beyond Llama through the commands a user runs on a file: a tiny
//! GGUF of each (`synth`), `run` on the GPU and on the CPU reference (the same text),
//! and `profile` naming the ops the architecture adds. (The decoders, `check` and
//! prefill of every architecture are tested in the model crate; a process here is
//! seconds of lavapipe, so the binary runs the architectures that add ops.)

use crate::common::{gpuscope, have_gpu, text};

/// (preset, the architecture its file says, ops of its profile's table beyond Llama's: a
/// row's op is the name or ends with it). Mistral (a `llama` file with a window) and
/// Phi-3 (fused tensors split at load) add no op; the model crate's tests run them.
const ARCHITECTURES: [(&str, &str, &[&str]); 3] = [
    // The q/k norms with rope, the post norms with the residual add (Llama's adds are in
    // the gemvs), GeGLU in the gate/up gemv.
    (
        "tiny-gemma3",
        "gemma3",
        &["head_norm+rope", "rms_norm+add", "+gelu_mul"],
    ),
    // The q/k/v biases.
    ("tiny-qwen2", "qwen2", &["add"]),
    ("tiny-qwen3", "qwen3", &["head_norm+rope"]),
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
        let out = gpuscope(&["profile", file, "--tokens", "3"]);
        let report = text(&out.stdout);
        assert!(out.status.success(), "{preset}: {}", text(&out.stderr));
        assert!(report.contains(&format!("({arch})")), "{preset}: {report}");
        for op in ops {
            let row = |l: &&str| {
                l.starts_with("  ")
                    && l.split_whitespace()
                        .next()
                        .is_some_and(|w| w == *op || (op.starts_with('+') && w.ends_with(op)))
            };
            assert!(
                report.lines().any(|l| row(&l)),
                "{preset}: no {op} row in the report:\n{report}"
            );
        }
    }
}
