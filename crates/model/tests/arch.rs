//! The architectures beyond Llama (Gemma 3, Qwen2, Qwen3, Mistral, Phi-3) on their tiny
//! presets: the GPU decoder against the CPU decoder, `check` against the f64 executors,
//! and a tiny GGUF of each, loaded back, against a float64 forward pass written here
//! from the file's tensors (independent of the loader, the ops' oracles and the CPU
//! decoder).

use gpuscope_model::check::{check, CheckOptions, Precision};
use gpuscope_model::gguf::{Gguf, GgufWriter, MetaValue};
use gpuscope_model::{
    load_gguf, synth, synthetic_weights, Architecture, CpuDecoder, DecoderOptions, GpuDecoder,
    KernelPlan, Preset,
};
use gpuscope_ops::WeightFormat;
use gpuscope_report::analysis::divergence::verdict;

use crate::common::gpu;

const TINY: [Preset; 5] = [
    Preset::TinyGemma3,
    Preset::TinyQwen2,
    Preset::TinyQwen3,
    Preset::TinyMistral,
    Preset::TinyPhi3,
];

/// Max |a − b| against the largest |b|.
fn worst(a: &[f32], b: &[f32]) -> (f32, f32) {
    let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
    let d = a
        .iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0f32, f32::max);
    (d, scale)
}

/// GPU and CPU decode the same varied tokens (fed, so that no synthetic model's
/// attractor repeats one token) past the window (4 positions on the windowed layers),
/// with the same logits and greedy choices.
#[test]
fn tiny_architectures_gpu_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    for preset in TINY {
        for format in [WeightFormat::Q8_0, WeightFormat::Q5_0] {
            let w = synthetic_weights(&preset.config(), format, 7, preset.name());
            let tokens = 12;
            let plan = KernelPlan {
                gemv_large: None,
                ..KernelPlan::for_adapter(gpu)
            };
            let opts = DecoderOptions {
                max_ctx: tokens,
                read_logits: true,
            };
            let mut g = GpuDecoder::with_plan(gpu, &w, opts, plan).unwrap();
            let mut c = CpuDecoder::new(&w, tokens).unwrap();
            for i in 0..tokens {
                let t = (i * 97 + 3) % w.config.vocab;
                let gs = g.step(gpu, Some(t)).unwrap();
                let cs = c.step(t).unwrap();
                let gl = gs.logits.unwrap();
                assert!(gl.iter().all(|v| v.is_finite()), "{preset:?} step {i}");
                let (d, scale) = worst(&gl, &cs.logits);
                assert!(
                    d <= 2e-3 * scale + 1e-4,
                    "{} {format} step {i}: logits differ by {d} (max {scale})",
                    preset.name()
                );
                assert_eq!(gs.token, cs.token, "{} {format} step {i}", preset.name());
            }
        }
    }
}

/// Every dispatch of each tiny architecture's decode graph against its executor in f64,
/// over more tokens than the window holds.
#[test]
fn tiny_architectures_pass_check_in_f64() {
    let Some(gpu) = gpu() else { return };
    for preset in TINY {
        let w = synthetic_weights(&preset.config(), WeightFormat::Q4_K, 7, preset.name());
        let o = CheckOptions {
            max_ctx: 16,
            precision: Precision::F64,
            ..CheckOptions::new(preset.name(), vec![3, 5], 7)
        };
        let run = check(gpu, &w, &o).unwrap();
        let v = verdict(&run.report);
        assert!(v.passed(), "{}: {:?}", preset.name(), v.first());
        // (label suffix, op) of each dispatch: what the architecture adds, fused as the
        // default plan fuses it (head norms with rope, GeGLU in the gate/up epilogue,
        // the post norms with the residual add).
        let ran: Vec<(&str, &str)> = run
            .report
            .dispatches
            .iter()
            .map(|d| (d.label.split_once('.').map_or("", |l| l.1), d.op.as_str()))
            .collect();
        let has = |label: &str, op: &str| {
            ran.iter()
                .any(|(l, o)| *l == label && (o == &op || o.ends_with(op)))
        };
        let a = &preset.config().arch;
        let name = preset.name();
        let gemma = a.architecture == Architecture::Gemma3;
        assert_eq!(
            has("attn_qk_norm", "head_norm+rope"),
            a.qk_norm && !a.qkv_bias,
            "{name}"
        );
        assert_eq!(has("attn_qkv_bias", "add"), a.qkv_bias, "{name}");
        assert_eq!(has("post_ffw_norm", "rms_norm+add"), a.post_norms, "{name}");
        assert_eq!(has("ffn_gate_up", "+gelu_mul"), gemma, "{name}");
        assert!(
            !ran.iter().any(|(l, _)| *l == "ffn_gelu_mul"),
            "{name}: GeGLU unfused"
        );
    }
}

/// A float64 forward pass over a GGUF file's f32 tensors, written from llama.cpp's graphs
/// (`src/models/{llama,qwen2,qwen3,phi3,gemma3}.cpp`) with nothing of gpuscope's decoders
/// or ops: full K/V history, windows as llama.cpp's mask (`pos - p < window`).
struct Reference<'g> {
    g: &'g Gguf,
    c: gpuscope_model::LlamaConfig,
    /// Per layer, per position: (k, v) after rope.
    kv: Vec<Vec<(Vec<f64>, Vec<f64>)>>,
}

impl<'g> Reference<'g> {
    fn floats(&self, name: &str) -> Vec<f64> {
        let t = self
            .g
            .file
            .tensor(name)
            .unwrap_or_else(|| panic!("no {name}"));
        assert_eq!(t.ggml_type.name, "f32", "{name}");
        self.g
            .tensor_bytes(t)
            .chunks_exact(4)
            .map(|b| f64::from(f32::from_le_bytes(b.try_into().unwrap())))
            .collect()
    }

    fn has(&self, name: &str) -> bool {
        self.g.file.tensor(name).is_some()
    }

    /// W·x for the `rows` rows of `name` from row `first`.
    fn matvec(&self, name: &str, first: usize, rows: usize, x: &[f64]) -> Vec<f64> {
        let w = self.floats(name);
        let n = x.len();
        (first..first + rows)
            .map(|r| {
                w[r * n..(r + 1) * n]
                    .iter()
                    .zip(x)
                    .map(|(a, b)| a * b)
                    .sum()
            })
            .collect()
    }

    fn rms(&self, x: &[f64], w: &[f64]) -> Vec<f64> {
        let ms = x.iter().map(|v| v * v).sum::<f64>() / x.len() as f64;
        let s = 1.0 / (ms + f64::from(self.c.rms_eps)).sqrt();
        x.iter().zip(w).map(|(v, w)| v * s * w).collect()
    }

    fn rope(&self, head: &mut [f64], pos: u32, base: f64) {
        let d = self.c.rope_dims as usize;
        for i in 0..d / 2 {
            let theta = f64::from(pos) * base.powf(-((2 * i) as f64) / d as f64);
            let (a, b) = if self.c.arch.rope_neox {
                (i, i + d / 2)
            } else {
                (2 * i, 2 * i + 1)
            };
            let (x0, x1) = (head[a], head[b]);
            head[a] = x0 * theta.cos() - x1 * theta.sin();
            head[b] = x0 * theta.sin() + x1 * theta.cos();
        }
    }

    /// q, k, v of layer `l` for the normed input `xn`, biased, head-normed and roped.
    fn qkv(&self, l: usize, xn: &[f64], pos: u32) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let c = &self.c;
        let (q_dim, kv_dim, hd) = (c.q_dim() as usize, c.kv_dim() as usize, c.head_dim as usize);
        let n = |s: &str| format!("blk.{l}.{s}");
        let (mut q, mut k, mut v) = if self.has(&n("attn_qkv.weight")) {
            let m = |first, rows| self.matvec(&n("attn_qkv.weight"), first, rows, xn);
            (m(0, q_dim), m(q_dim, kv_dim), m(q_dim + kv_dim, kv_dim))
        } else {
            let m = |t: &str, rows| self.matvec(&n(t), 0, rows, xn);
            (
                m("attn_q.weight", q_dim),
                m("attn_k.weight", kv_dim),
                m("attn_v.weight", kv_dim),
            )
        };
        for (t, part) in [
            ("attn_q.bias", &mut q),
            ("attn_k.bias", &mut k),
            ("attn_v.bias", &mut v),
        ] {
            if self.has(&n(t)) {
                part.iter_mut()
                    .zip(self.floats(&n(t)))
                    .for_each(|(a, b)| *a += b);
            }
        }
        let swa = c.arch.sliding_window > 0
            && (c.arch.swa_pattern == 0
                || (l as u32) % c.arch.swa_pattern < c.arch.swa_pattern - 1);
        let base = match c.arch.rope_base_swa {
            Some(b) if swa => f64::from(b),
            _ => f64::from(c.rope_base),
        };
        for (part, norm) in [
            (&mut q, "attn_q_norm.weight"),
            (&mut k, "attn_k_norm.weight"),
        ] {
            for head in part.chunks_exact_mut(hd) {
                if self.has(&n(norm)) {
                    let normed = self.rms(head, &self.floats(&n(norm)));
                    head.copy_from_slice(&normed);
                }
                self.rope(head, pos, base);
            }
        }
        (q, k, v)
    }

    /// Attention of layer `l` at `pos` over the cached positions its window keeps.
    fn attend(&self, l: usize, q: &[f64], pos: u32) -> Vec<f64> {
        let c = &self.c;
        let hd = c.head_dim as usize;
        let group = (c.n_heads / c.n_kv_heads) as usize;
        let swa = c.arch.sliding_window > 0
            && (c.arch.swa_pattern == 0
                || (l as u32) % c.arch.swa_pattern < c.arch.swa_pattern - 1);
        let visible: Vec<usize> = (0..=pos as usize)
            .filter(|&p| !swa || (pos as usize - p) < c.arch.sliding_window as usize)
            .collect();
        let mut out = vec![0.0; c.q_dim() as usize];
        for h in 0..c.n_heads as usize {
            let kvh = h / group;
            let qh = &q[h * hd..(h + 1) * hd];
            let scores: Vec<f64> = visible
                .iter()
                .map(|&p| {
                    let k = &self.kv[l][p].0[kvh * hd..(kvh + 1) * hd];
                    qh.iter().zip(k).map(|(a, b)| a * b).sum::<f64>() / (hd as f64).sqrt()
                })
                .collect();
            let max = scores.iter().copied().fold(f64::MIN, f64::max);
            let e: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
            let sum: f64 = e.iter().sum();
            for (&p, w) in visible.iter().zip(&e) {
                let v = &self.kv[l][p].1[kvh * hd..(kvh + 1) * hd];
                for (o, x) in out[h * hd..(h + 1) * hd].iter_mut().zip(v) {
                    *o += w / sum * x;
                }
            }
        }
        out
    }

    /// The FFN of layer `l` on its normed input.
    fn ffn(&self, l: usize, xn: &[f64]) -> Vec<f64> {
        let f = self.c.ffn_dim as usize;
        let n = |s: &str| format!("blk.{l}.{s}");
        let (gate, up) = if self.has(&n("ffn_gate.weight")) {
            (
                self.matvec(&n("ffn_gate.weight"), 0, f, xn),
                self.matvec(&n("ffn_up.weight"), 0, f, xn),
            )
        } else {
            (
                self.matvec(&n("ffn_up.weight"), 0, f, xn),
                self.matvec(&n("ffn_up.weight"), f, f, xn),
            )
        };
        let gemma = self.c.arch.architecture == Architecture::Gemma3;
        let act = |g: f64| {
            if gemma {
                let s = (2.0 / std::f64::consts::PI).sqrt();
                0.5 * g * (1.0 + (s * g * (1.0 + 0.044715 * g * g)).tanh())
            } else {
                g / (1.0 + (-g).exp())
            }
        };
        let hidden: Vec<f64> = gate.iter().zip(&up).map(|(g, u)| act(*g) * u).collect();
        self.matvec(&n("ffn_down.weight"), 0, self.c.dim as usize, &hidden)
    }

    /// x + y, with `norm`'s RMS norm of y first where the file has it.
    fn residual(&self, x: &mut [f64], y: Vec<f64>, norm: &str) {
        let y = if self.has(norm) {
            self.rms(&y, &self.floats(norm))
        } else {
            y
        };
        x.iter_mut().zip(y).for_each(|(a, b)| *a += b);
    }

    fn step(&mut self, token: u32, pos: u32) -> Vec<f64> {
        let c = self.c.clone();
        let d = c.dim as usize;
        let embd = self.floats("token_embd.weight");
        let scale = if c.arch.architecture == Architecture::Gemma3 {
            (d as f64).sqrt()
        } else {
            1.0
        };
        let mut x: Vec<f64> = embd[token as usize * d..][..d]
            .iter()
            .map(|v| v * scale)
            .collect();
        for l in 0..c.n_layers as usize {
            let n = |s: &str| format!("blk.{l}.{s}");
            let xn = self.rms(&x, &self.floats(&n("attn_norm.weight")));
            let (q, k, v) = self.qkv(l, &xn, pos);
            self.kv[l].push((k, v));
            let attn = self.attend(l, &q, pos);
            let o = self.matvec(&n("attn_output.weight"), 0, d, &attn);
            self.residual(&mut x, o, &n("post_attention_norm.weight"));
            let xn = self.rms(&x, &self.floats(&n("ffn_norm.weight")));
            let f = self.ffn(l, &xn);
            self.residual(&mut x, f, &n("post_ffw_norm.weight"));
        }
        let xn = self.rms(&x, &self.floats("output_norm.weight"));
        let head = if self.has("output.weight") {
            "output.weight"
        } else {
            "token_embd.weight"
        };
        self.matvec(head, 0, c.vocab as usize, &xn)
    }
}

/// A tiny GGUF of each architecture (f32 tensors, llama.cpp's names: Phi-3's fused
/// tensors, Qwen2's biases, Gemma's norms), loaded back by gpuscope: its GPU and CPU
/// logits match the float64 forward pass over the file's tensors, past the window.
#[test]
fn tiny_gguf_of_each_architecture_matches_an_independent_f64_forward_pass() {
    let Some(gpu) = gpu() else { return };
    let dir = tempfile::tempdir().unwrap();
    for preset in TINY {
        let w = synthetic_weights(&preset.config(), WeightFormat::F32, 11, preset.name());
        let path = dir.path().join(format!("{}.gguf", preset.name()));
        synth::write_gguf(&w, preset.name(), &path).unwrap();
        let loaded = load_gguf(&path).unwrap();
        // Mistral is written as `llama` with its window (llama.cpp has no `mistral`), and
        // read back as such: the same features under Llama's name.
        let mut written = preset.config();
        if written.arch.architecture == Architecture::Mistral {
            written.arch.architecture = Architecture::Llama;
        }
        assert_eq!(loaded.weights.config, written, "{}", preset.name());
        let mut reference = Reference {
            g: &loaded.gguf,
            c: preset.config(),
            kv: vec![Vec::new(); preset.config().n_layers as usize],
        };
        let tokens = 9u32;
        let opts = DecoderOptions {
            max_ctx: tokens,
            read_logits: true,
        };
        let mut g = GpuDecoder::new(gpu, &loaded.weights, opts).unwrap();
        let mut c = CpuDecoder::new(&loaded.weights, tokens).unwrap();
        for pos in 0..tokens {
            let t = (pos * 131 + 7) % preset.config().vocab;
            let want = reference.step(t, pos);
            let scale = want.iter().fold(0f64, |m, v| m.max(v.abs()));
            let gl = g.step(gpu, Some(t)).unwrap().logits.unwrap();
            let cl = c.step(t).unwrap().logits;
            for (name, got) in [("GPU", &gl), ("CPU", &cl)] {
                let d = got
                    .iter()
                    .zip(&want)
                    .map(|(a, b)| (f64::from(*a) - b).abs())
                    .fold(0f64, f64::max);
                assert!(
                    d <= 1e-4 * scale + 1e-5,
                    "{} {name} pos {pos}: logits off the f64 pass by {d} (max {scale})",
                    preset.name()
                );
            }
        }
    }
}

/// Tiny Gemma 3 (q8_0) written as llama.cpp names it, then rewritten into `dir` with
/// `extra` metadata and tensor `odd` (if any) stored as iq4_nl (18-byte blocks of 32, a
/// format gpuscope has no kernels for); the load's error.
fn load_error_of_altered_gemma(
    dir: &std::path::Path,
    extra: &[(&str, MetaValue)],
    odd: Option<&str>,
) -> String {
    let c = Preset::TinyGemma3.config();
    let w = synthetic_weights(&c, WeightFormat::Q8_0, 3, "tiny-gemma3");
    let good = dir.join("good.gguf");
    synth::write_gguf(&w, "tiny-gemma3", &good).unwrap();
    let g = Gguf::open(&good).unwrap();
    let mut out = GgufWriter::new();
    for (key, value) in g.file.metadata.iter() {
        out.meta(key, value.clone());
    }
    for (key, value) in extra {
        out.meta(key, value.clone());
    }
    for t in &g.file.tensors {
        let (id, bytes) = if Some(t.name.as_str()) == odd {
            (20, vec![0u8; (t.elements() / 32 * 18) as usize])
        } else {
            (t.ggml_type.id, g.tensor_bytes(t).to_vec())
        };
        out.tensor(&t.name, &t.dims, id, bytes);
    }
    let bad = dir.join("bad.gguf");
    std::fs::write(&bad, out.to_bytes()).unwrap();
    load_gguf(&bad)
        .err()
        .expect("the altered file is refused")
        .to_string()
}

/// A Gemma 3 file with one matrix in a format gpuscope has no kernels for (iq4_nl): the
/// load names that tensor and its format.
#[test]
fn a_tensor_of_an_unsupported_format_is_named_with_its_format() {
    let dir = tempfile::tempdir().unwrap();
    let odd = "blk.1.attn_v.weight";
    let err = load_error_of_altered_gemma(dir.path(), &[], Some(odd));
    assert!(err.contains(odd) && err.contains("iq4_nl"), "{err}");
}

/// Linear rope scaling (Gemma 3 4B and larger: factor 8 on the full-attention layers)
/// changes every position's angles: refused, not warned about and ignored.
#[test]
fn linear_rope_scaling_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let extra = [
        (
            "gemma3.rope.scaling.type",
            MetaValue::String("linear".into()),
        ),
        ("gemma3.rope.scaling.factor", MetaValue::F32(8.0)),
    ];
    let err = load_error_of_altered_gemma(dir.path(), &extra, None);
    assert!(
        err.contains("gemma3.rope.scaling.type") && err.contains("linear") && err.contains('8'),
        "{err}"
    );
}
