//! The shape table of `ops test | perf`: each [`Case`] builds one dispatch with the op's
//! own `dispatch` method on seeded random inputs, outputs guarded ([`super::guard`]).

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, STEP_BUFFER_BYTES};
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Normal};

use super::guard::Guarded;
use crate::add::Add;
use crate::argmax::Argmax;
use crate::attention::{AttnBatched, AttnFused, AttnScores, AttnValues, AttnVariant};
use crate::embedding::{Embedding, EmbeddingBatched};
use crate::gemv::{Gemv, GemvBatched, GemvBuffers, GemvEpilogue, GemvFused, GemvVariant};
use crate::rms_norm::{RmsNorm, RmsNormBatched};
use crate::rope::{Rope, RopeBatched, RopeNormed};
use crate::silu_mul::{SiluMul, SiluMulBatched};
use crate::softmax::Softmax;
use crate::WeightFormat;

/// Which shapes: the model's and the awkward ones, or those plus Llama-3-8B's and the
/// device's largest binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShapeSet {
    Default,
    All,
}

/// What to run: substrings of the op (kernel) name, formats, shape names; empty = all.
#[derive(Debug, Clone, Default)]
pub struct CaseFilter {
    pub ops: Vec<String>,
    pub formats: Vec<WeightFormat>,
    pub shapes: Vec<String>,
}

impl CaseFilter {
    pub fn matches(&self, c: &Case) -> bool {
        (self.ops.is_empty() || self.ops.iter().any(|o| c.op.contains(o.as_str())))
            && (self.formats.is_empty() || c.format.is_some_and(|f| self.formats.contains(&f)))
            && (self.shapes.is_empty() || self.shapes.iter().any(|s| c.shape.contains(s.as_str())))
    }
}

/// One op × format × shape.
#[derive(Debug, Clone)]
pub struct Case {
    /// The kernel (shader) name, e.g. `gemv_q4_1`.
    pub op: String,
    pub format: Option<WeightFormat>,
    /// The shape's name in the table.
    pub shape: String,
    pub params: Params,
}

impl Case {
    /// Why `gpu` cannot run this case's kernel at all (reported as not supported, not
    /// failed), or `None`.
    pub fn unsupported(&self, gpu: &Gpu) -> Option<String> {
        match self.params {
            Params::GemvDp4a { .. } => GemvVariant::Dp4a.supported(gpu).err(),
            Params::GemvBatchedWide {
                rows, cols, n_rows, ..
            } => {
                let format = self.format.expect("a gemv case has a format");
                (!wide_batched_op(format, rows, cols, n_rows).runs_wide(gpu)).then(|| {
                    "the batched wide rows frame needs SHADER_INT64 and subgroups of exactly 8 lanes (CPU adapters such as lavapipe)".to_string()
                })
            }
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub enum Params {
    Gemv {
        rows: u32,
        cols: u32,
        out_offset: u32,
        accumulate: bool,
    },
    /// The `dp4a` gemv (int8 activations, packed weights) with the decoder's tuning and
    /// split for the shape; adapters without it report the case as not supported.
    GemvDp4a {
        rows: u32,
        cols: u32,
        accumulate: bool,
    },
    GemvBatched {
        rows: u32,
        cols: u32,
        n_rows: u32,
        accumulate: bool,
    },
    /// The batched wide rows frame (packed weights; CPU adapters with SHADER_INT64 and
    /// 8-lane subgroups, the prefill's kernel there); others report it as not supported.
    GemvBatchedWide {
        rows: u32,
        cols: u32,
        n_rows: u32,
        accumulate: bool,
    },
    Embedding {
        rows: u32,
        dim: u32,
    },
    EmbeddingBatched {
        rows: u32,
        dim: u32,
        n_rows: u32,
    },
    RmsNorm {
        n: u32,
        /// `out += ...` (`rms_norm+add`, Gemma 3's post norms).
        add: bool,
    },
    RmsNormBatched {
        n: u32,
        n_rows: u32,
        last_only: bool,
    },
    Rope {
        heads: u32,
        kv: u32,
        hd: u32,
        pos: u32,
        qkv: bool,
        /// NeoX pairs; a ring cache of 4 rows.
        neox: bool,
        ring: bool,
    },
    /// head_norm+rope over one q/k/v buffer at position 37.
    RopeNormed {
        heads: u32,
        kv: u32,
        hd: u32,
        neox: bool,
        /// A ring cache of 4 rows.
        ring: bool,
    },
    RopeBatched {
        heads: u32,
        kv: u32,
        hd: u32,
        pos0: u32,
        n_rows: u32,
        /// q/k/v as the sum of this many parts (a gemm's K parts).
        parts: u32,
    },
    Attention {
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        n_ctx: u32,
    },
    AttentionBatched {
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        pos0: u32,
        n_rows: u32,
    },
    Scores {
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        n_ctx: u32,
    },
    Values {
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        n_ctx: u32,
    },
    Softmax {
        rows: u32,
        stride: u32,
        n_ctx: u32,
    },
    SiluMul {
        n: u32,
    },
    GeluMul {
        n: u32,
    },
    HeadNorm {
        heads: u32,
        kv: u32,
        hd: u32,
    },
    SiluMulBatched {
        n: u32,
        n_rows: u32,
    },
    Add {
        n: u32,
    },
    Argmax {
        n: u32,
    },
}

/// Inputs and guarded outputs of one case, as they are created.
pub struct Builder<'g> {
    pub gpu: &'g Gpu,
    rng: StdRng,
    pub outputs: Vec<Guarded>,
}

impl<'g> Builder<'g> {
    pub fn new(gpu: &'g Gpu, seed: u64) -> Builder<'g> {
        Builder {
            gpu,
            rng: StdRng::seed_from_u64(seed),
            outputs: Vec::new(),
        }
    }

    fn randn(&mut self, n: usize, std: f32) -> Vec<f32> {
        let d = Normal::new(0.0f32, std).unwrap();
        (0..n).map(|_| d.sample(&mut self.rng)).collect()
    }

    pub(crate) fn input_f32(&mut self, label: &str, n: u64) -> Result<GpuBuffer, GpuError> {
        let v = self.randn(n as usize, 1.0);
        self.gpu.create_buffer_init(label, bytemuck::cast_slice(&v))
    }

    fn input_u32(&mut self, label: &str, words: &[u32]) -> Result<GpuBuffer, GpuError> {
        self.gpu
            .create_buffer_init(label, bytemuck::cast_slice(words))
    }

    /// A weight matrix at a trained model's scale (σ 0.02), quantized row by row. Rows are
    /// one random row under 21 scale and sign patterns, so a 49152-row table is quantized
    /// 21 times, not 49152.
    pub(crate) fn weights(
        &mut self,
        label: &str,
        rows: u32,
        cols: u32,
        f: WeightFormat,
    ) -> Result<GpuBuffer, GpuError> {
        self.weights_in(label, rows, cols, f, crate::gemv::WeightLayout::Gguf)
    }

    /// [`Self::weights`] stored in `layout` (which must support `f`).
    pub(crate) fn weights_in(
        &mut self,
        label: &str,
        rows: u32,
        cols: u32,
        f: WeightFormat,
        layout: crate::gemv::WeightLayout,
    ) -> Result<GpuBuffer, GpuError> {
        let base = self.randn(cols as usize, 0.02);
        let pattern = |r: u32| -> Vec<u8> {
            let s = 1.0 + (r % 7) as f32 * 0.125;
            let row: Vec<f32> = base
                .iter()
                .enumerate()
                .map(|(c, v)| {
                    if (c + r as usize).is_multiple_of(3) {
                        -v * s
                    } else {
                        v * s
                    }
                })
                .collect();
            f.quantize_row(&row)
        };
        let patterns: Vec<Vec<u8>> = (0..21.min(rows)).map(pattern).collect();
        let mut bytes = Vec::with_capacity(patterns[0].len() * rows as usize);
        for r in 0..rows {
            bytes.extend_from_slice(&patterns[(r % 21) as usize]);
        }
        self.gpu.create_buffer_init(label, &layout.pack(f, &bytes))
    }

    /// A guarded output of `n` words: random contents (an in-place or accumulated output
    /// the op reads) or canaries (a pure output).
    pub(crate) fn output(
        &mut self,
        label: &str,
        n: u64,
        random: bool,
    ) -> Result<GpuBuffer, GpuError> {
        let init: Vec<u8> = if random {
            bytemuck::cast_slice(&self.randn(n as usize, 1.0)).to_vec()
        } else {
            Vec::new()
        };
        let g = Guarded::new(self.gpu, label, 4 * n, &init)?;
        let view = g.view.clone();
        self.outputs.push(g);
        Ok(view)
    }

    fn step(&mut self, pos: u32, n_ctx: u32) -> Result<GpuBuffer, GpuError> {
        let b = self.gpu.create_buffer("step", STEP_BUFFER_BYTES)?;
        self.gpu
            .write_buffer(&b, 0, bytemuck::cast_slice(&[pos, n_ctx, 0, 0]));
        Ok(b)
    }
}

impl Case {
    /// The op's parameters, for the report.
    pub fn op_params(&self) -> String {
        format!("{:?}", self.params)
    }

    /// Builds the case's dispatch (its outputs guarded in `b.outputs`).
    pub fn build(&self, b: &mut Builder) -> Result<Dispatch, GpuError> {
        let fmt = self.format.unwrap_or(WeightFormat::F32);
        match self.params {
            Params::Gemv {
                rows,
                cols,
                out_offset,
                accumulate,
            } => b.gemv(fmt, rows, cols, out_offset, accumulate),
            Params::GemvDp4a {
                rows,
                cols,
                accumulate,
            } => b.gemv_dp4a(fmt, rows, cols, accumulate),
            Params::GemvBatched {
                rows,
                cols,
                n_rows,
                accumulate,
            } => b.gemv_batched(fmt, rows, cols, n_rows, accumulate),
            Params::GemvBatchedWide {
                rows,
                cols,
                n_rows,
                accumulate,
            } => b.gemv_batched_wide(fmt, rows, cols, n_rows, accumulate),
            Params::Embedding { rows, dim } => b.embedding(fmt, rows, dim),
            Params::EmbeddingBatched { rows, dim, n_rows } => {
                b.embedding_batched(fmt, rows, dim, n_rows)
            }
            Params::RmsNorm { n, add } => b.rms_norm(n, add),
            Params::RmsNormBatched {
                n,
                n_rows,
                last_only,
            } => b.rms_norm_batched(n, n_rows, last_only),
            Params::Rope {
                heads,
                kv,
                hd,
                pos,
                qkv,
                neox,
                ring,
            } => b.rope(heads, kv, hd, pos, (qkv, neox, ring)),
            Params::RopeNormed {
                heads,
                kv,
                hd,
                neox,
                ring,
            } => b.rope_normed(heads, kv, hd, neox, ring),
            Params::RopeBatched {
                heads,
                kv,
                hd,
                pos0,
                n_rows,
                parts,
            } => b.rope_batched(heads, kv, hd, (pos0, n_rows), parts),
            Params::Attention {
                heads,
                kv,
                hd,
                max_ctx,
                n_ctx,
            } => b.attention(heads, kv, hd, max_ctx, n_ctx),
            Params::AttentionBatched {
                heads,
                kv,
                hd,
                max_ctx,
                pos0,
                n_rows,
            } => b.attention_batched(heads, kv, hd, max_ctx, pos0, n_rows),
            Params::Scores {
                heads,
                kv,
                hd,
                max_ctx,
                n_ctx,
            } => b.scores(heads, kv, hd, max_ctx, n_ctx),
            Params::Values {
                heads,
                kv,
                hd,
                max_ctx,
                n_ctx,
            } => b.values(heads, kv, hd, max_ctx, n_ctx),
            Params::Softmax {
                rows,
                stride,
                n_ctx,
            } => b.softmax(rows, stride, n_ctx),
            Params::SiluMul { n } => b.silu_mul(n),
            Params::GeluMul { n } => b.gelu_mul(n),
            Params::HeadNorm { heads, kv, hd } => b.head_norm(heads, kv, hd),
            Params::SiluMulBatched { n, n_rows } => b.silu_mul_batched(n, n_rows),
            Params::Add { n } => b.add(n),
            Params::Argmax { n } => b.argmax(n),
        }
    }
}

/// One builder per kind of case: the op, its inputs and guarded outputs, its dispatch.
impl Builder<'_> {
    fn gemv(
        &mut self,
        fmt: WeightFormat,
        rows: u32,
        cols: u32,
        out_offset: u32,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = Gemv {
            rows,
            cols,
            format: fmt,
            out_offset,
            layout: crate::gemv::WeightLayout::Gguf,
        };
        let w = self.weights("w", rows, cols, fmt)?;
        let x = self.input_f32("x", cols as u64)?;
        let y = self.output("y", (out_offset + rows) as u64, accumulate)?;
        Ok(if accumulate {
            op.dispatch_accumulate(gpu, &w, &x, &y)?
        } else {
            op.dispatch(gpu, &w, &x, &y)?
        })
    }

    fn gemv_dp4a(
        &mut self,
        fmt: WeightFormat,
        rows: u32,
        cols: u32,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = dp4a_op(fmt, rows, cols, accumulate);
        let w = self.weights_in("w", rows, cols, fmt, op.gemv.layout)?;
        let x = self.input_f32("x", cols as u64)?;
        let y = self.output("y", rows as u64, accumulate)?;
        let tuning = op.gemv.tuning(GemvVariant::Dp4a, gpu);
        op.dispatch(gpu, tuning, &GemvBuffers::new(&w, &x, &y))
    }

    fn gemv_batched(
        &mut self,
        fmt: WeightFormat,
        rows: u32,
        cols: u32,
        n_rows: u32,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let gemv = Gemv {
            rows,
            cols,
            format: fmt,
            out_offset: 0,
            layout: crate::gemv::WeightLayout::Gguf,
        };
        let op = GemvBatched {
            gemv,
            max_batch: n_rows,
            y_stride: rows,
        };
        let w = self.weights("w", rows, cols, fmt)?;
        let x = self.input_f32("x", (cols * n_rows) as u64)?;
        let y = self.output("y", (rows * n_rows) as u64, accumulate)?;
        let params = self.input_u32("params", &[0, n_rows, 0, 0])?;
        op.dispatch(gpu, &w, &x, &y, &params, accumulate)
    }

    fn gemv_batched_wide(
        &mut self,
        fmt: WeightFormat,
        rows: u32,
        cols: u32,
        n_rows: u32,
        accumulate: bool,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = wide_batched_op(fmt, rows, cols, n_rows);
        let w = self.weights_in("w", rows, cols, fmt, op.gemv.layout)?;
        let x = self.input_f32("x", (cols * n_rows) as u64)?;
        let y = self.output("y", (rows * n_rows) as u64, accumulate)?;
        let params = self.input_u32("params", &[0, n_rows, 0, 0])?;
        op.dispatch_wide(gpu, &w, &x, &y, &params, accumulate)
    }

    fn embedding(&mut self, fmt: WeightFormat, rows: u32, dim: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = Embedding {
            rows,
            dim,
            format: fmt,
            row_start: 0,
        };
        let table = self.weights("table", rows, dim, fmt)?;
        let token = self.input_u32("token", &[rows - 1])?;
        let out = self.output("out", dim as u64, false)?;
        op.dispatch(gpu, &table, &token, &out)
    }

    fn embedding_batched(
        &mut self,
        fmt: WeightFormat,
        rows: u32,
        dim: u32,
        n_rows: u32,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let emb = Embedding {
            rows,
            dim,
            format: fmt,
            row_start: 0,
        };
        let op = EmbeddingBatched {
            emb,
            max_batch: n_rows,
        };
        let table = self.weights("table", rows, dim, fmt)?;
        let toks: Vec<u32> = (0..n_rows).map(|i| (i * 7919) % rows).collect();
        let tokens = self.input_u32("tokens", &toks)?;
        let out = self.output("out", (dim * n_rows) as u64, false)?;
        let params = self.input_u32("params", &[0, n_rows, 0, 0])?;
        op.dispatch(gpu, &table, &tokens, &out, &params)
    }

    fn rms_norm(&mut self, n: u32, add: bool) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = RmsNorm { n, eps: 1e-5 };
        let x = self.input_f32("x", n as u64)?;
        let w = self.input_f32("weight", n as u64)?;
        // With `add`, out starts as a residual stream.
        let out = self.output("out", n as u64, add)?;
        if add {
            op.dispatch_add(gpu, &x, &w, &out)
        } else {
            op.dispatch(gpu, &x, &w, &out)
        }
    }

    fn rms_norm_batched(
        &mut self,
        n: u32,
        n_rows: u32,
        last_only: bool,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = RmsNormBatched {
            norm: RmsNorm { n, eps: 1e-5 },
            max_batch: n_rows,
            last_only,
        };
        let x = self.input_f32("x", (n * n_rows) as u64)?;
        let w = self.input_f32("weight", n as u64)?;
        let out_rows = if last_only { 1 } else { n_rows };
        let out = self.output("out", (n * out_rows) as u64, false)?;
        let params = self.input_u32("params", &[0, n_rows, 0, 0])?;
        op.dispatch(gpu, &x, &w, &out, &params)
    }

    fn rope(
        &mut self,
        heads: u32,
        kv: u32,
        hd: u32,
        pos: u32,
        (qkv, neox, ring): (bool, bool, bool),
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = case_rope(heads, kv, hd, pos, neox, ring);
        let step = self.step(pos, pos + 1)?;
        let cache = op.kv_row() * op.max_ctx as u64;
        let (qn, kvn) = ((heads * hd) as u64, op.kv_row());
        Ok(if qkv {
            let qkv = self.output("qkv", qn + 2 * kvn, true)?;
            let kc = self.output("k_cache", cache, true)?;
            let vc = self.output("v_cache", cache, true)?;
            op.dispatch_qkv(
                gpu,
                &step,
                &qkv,
                (0, qn as u32, (qn + kvn) as u32),
                &kc,
                &vc,
            )?
        } else {
            let q = self.output("q", qn, true)?;
            let k = self.input_f32("k", kvn)?;
            let v = self.input_f32("v", kvn)?;
            let kc = self.output("k_cache", cache, true)?;
            let vc = self.output("v_cache", cache, true)?;
            op.dispatch(gpu, &step, &q, &k, &v, &kc, &vc)?
        })
    }

    fn rope_normed(
        &mut self,
        heads: u32,
        kv: u32,
        hd: u32,
        neox: bool,
        ring: bool,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let pos = 37;
        let rope = case_rope(heads, kv, hd, pos, neox, ring);
        let (qn, kvn) = (heads * hd, kv * hd);
        let op = RopeNormed {
            rope,
            eps: 1e-6,
            offsets: (0, qn, qn + kvn),
        };
        let step = self.step(pos, pos + 1)?;
        let cache = rope.kv_row() * u64::from(rope.max_ctx);
        let qkv = self.output("qkv", u64::from(qn + 2 * kvn), true)?;
        let kc = self.output("k_cache", cache, true)?;
        let vc = self.output("v_cache", cache, true)?;
        let qw = self.input_f32("q_weight", u64::from(hd))?;
        let kw = self.input_f32("k_weight", u64::from(hd))?;
        op.dispatch(gpu, &step, &qkv, &kc, &vc, &qw, &kw)
    }

    fn rope_batched(
        &mut self,
        heads: u32,
        kv: u32,
        hd: u32,
        (pos0, n_rows): (u32, u32),
        parts: u32,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let rope = Rope {
            n_heads: heads,
            n_kv_heads: kv,
            head_dim: hd,
            rope_dims: hd,
            base: 10000.0,
            max_ctx: pos0 + n_rows,
            neox: false,
            ring: false,
        };
        let (qn, kvn) = (heads * hd, rope.kv_row() as u32);
        let stride = qn + 2 * kvn;
        let op = RopeBatched {
            rope,
            max_batch: n_rows,
            qkv_stride: stride,
            offsets: (0, qn, qn + kvn),
            qkv_parts: parts,
        };
        let params = self.input_u32("params", &[pos0, n_rows, 0, 0])?;
        let qkv = self.output("qkv", (parts * stride * n_rows) as u64, true)?;
        let cache = rope.kv_row() * rope.max_ctx as u64;
        let kc = self.output("k_cache", cache, true)?;
        let vc = self.output("v_cache", cache, true)?;
        op.dispatch(gpu, &params, &qkv, &kc, &vc)
    }

    fn attention(
        &mut self,
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        n_ctx: u32,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = AttnFused {
            n_heads: heads,
            n_kv_heads: kv,
            head_dim: hd,
            max_ctx,
        };
        let step = self.step(n_ctx - 1, n_ctx)?;
        let q = self.input_f32("q", (heads * hd) as u64)?;
        let cache = (kv * hd) as u64 * max_ctx as u64;
        let kc = self.input_f32("k_cache", cache)?;
        let vc = self.input_f32("v_cache", cache)?;
        let out = self.output("out", (heads * hd) as u64, false)?;
        // The single-dispatch kernel the decoder would run on this adapter
        // (`split`'s two dispatches are timed as the decoder's, not here).
        let variant = match AttnVariant::for_adapter(gpu, &op) {
            AttnVariant::Split => AttnVariant::Workgroup,
            v => v,
        };
        Ok(op
            .dispatch_variant(gpu, variant, [&step, &q, &kc, &vc, &out], None)?
            .remove(0))
    }

    fn attention_batched(
        &mut self,
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        pos0: u32,
        n_rows: u32,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let attn = AttnFused {
            n_heads: heads,
            n_kv_heads: kv,
            head_dim: hd,
            max_ctx,
        };
        let hq = heads * hd;
        let mut op = AttnBatched {
            attn,
            max_batch: n_rows,
            q_stride: hq,
            out_stride: hq,
            coopmat: false,
        };
        // The prefill graph's choice where its gemm runs on tensor cores (the default
        // where the adapter has them).
        op.coopmat = op.coopmat_supported(gpu).is_ok();
        let params = self.input_u32("params", &[pos0, n_rows, 0, 0])?;
        let q = self.input_f32("q", (hq * n_rows) as u64)?;
        let cache = (kv * hd) as u64 * max_ctx as u64;
        let kc = self.input_f32("k_cache", cache)?;
        let vc = self.input_f32("v_cache", cache)?;
        let out = self.output("out", (hq * n_rows) as u64, false)?;
        // The batched kernel the prefill graph would run on this adapter.
        let variant = AttnVariant::for_adapter(gpu, &attn);
        op.dispatch_variant(gpu, variant, [&params, &q, &kc, &vc, &out])
    }

    fn scores(
        &mut self,
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        n_ctx: u32,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = AttnScores {
            n_heads: heads,
            n_kv_heads: kv,
            head_dim: hd,
            max_ctx,
        };
        let step = self.step(n_ctx - 1, n_ctx)?;
        let q = self.input_f32("q", (heads * hd) as u64)?;
        let kc = self.input_f32("k_cache", (kv * hd) as u64 * max_ctx as u64)?;
        let scores = self.output("scores", (heads * max_ctx) as u64, true)?;
        op.dispatch(gpu, &step, &q, &kc, &scores)
    }

    fn values(
        &mut self,
        heads: u32,
        kv: u32,
        hd: u32,
        max_ctx: u32,
        n_ctx: u32,
    ) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = AttnValues {
            n_heads: heads,
            n_kv_heads: kv,
            head_dim: hd,
            max_ctx,
        };
        let step = self.step(n_ctx - 1, n_ctx)?;
        let p = self.input_f32("probs", (heads * max_ctx) as u64)?;
        let vc = self.input_f32("v_cache", (kv * hd) as u64 * max_ctx as u64)?;
        let out = self.output("out", (heads * hd) as u64, false)?;
        op.dispatch(gpu, &step, &p, &vc, &out)
    }

    fn softmax(&mut self, rows: u32, stride: u32, n_ctx: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = Softmax {
            rows,
            row_stride: stride,
        };
        let step = self.step(n_ctx - 1, n_ctx)?;
        let data = self.output("data", (rows * stride) as u64, true)?;
        op.dispatch(gpu, &step, &data)
    }

    fn silu_mul(&mut self, n: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let gate = self.input_f32("gate", n as u64)?;
        let up = self.input_f32("up", n as u64)?;
        let out = self.output("out", n as u64, false)?;
        SiluMul { n }.dispatch(gpu, &gate, &up, &out)
    }

    fn silu_mul_batched(&mut self, n: u32, n_rows: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let up_offset = n.next_multiple_of(64);
        let op = SiluMulBatched {
            n,
            max_batch: n_rows,
            in_stride: up_offset + n,
            up_offset,
        };
        let gu = self.input_f32("gate_up", ((up_offset + n) * n_rows) as u64)?;
        let out = self.output("out", (n * n_rows) as u64, false)?;
        let params = self.input_u32("params", &[0, n_rows, 0, 0])?;
        op.dispatch(gpu, &gu, &out, &params)
    }

    fn gelu_mul(&mut self, n: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let gate = self.input_f32("gate", n as u64)?;
        let up = self.input_f32("up", n as u64)?;
        let out = self.output("out", n as u64, false)?;
        crate::gelu_mul::GeluMul { n }.dispatch(gpu, &gate, &up, &out)
    }

    fn head_norm(&mut self, heads: u32, kv: u32, hd: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let op = crate::head_norm::HeadNorm {
            n_heads: heads,
            n_kv_heads: kv,
            head_dim: hd,
            q_off: 0,
            k_off: heads * hd,
            eps: 1e-6,
        };
        // q, k and v as the decoder's buffer holds them; v is left alone.
        let qkv = self.output("qkv", u64::from((heads + 2 * kv) * hd), true)?;
        let qw = self.input_f32("q_weight", u64::from(hd))?;
        let kw = self.input_f32("k_weight", u64::from(hd))?;
        op.dispatch(gpu, &qkv, &qw, &kw)
    }

    fn add(&mut self, n: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let acc = self.output("acc", n as u64, true)?;
        let x = self.input_f32("x", n as u64)?;
        Add { n }.dispatch(gpu, &acc, &x)
    }

    fn argmax(&mut self, n: u32) -> Result<Dispatch, GpuError> {
        let gpu = self.gpu;
        let logits = self.input_f32("logits", n as u64)?;
        let out = self.output("out", 1, false)?;
        Argmax { n }.dispatch(gpu, &logits, &out)
    }
}

/// The rope of the single-token rope cases: every dim rotating, base 10,000, a cache
/// ending at `pos` (or a ring of 4 rows, which `pos` has wrapped).
fn case_rope(heads: u32, kv: u32, hd: u32, pos: u32, neox: bool, ring: bool) -> Rope {
    Rope {
        n_heads: heads,
        n_kv_heads: kv,
        head_dim: hd,
        rope_dims: hd,
        base: 10000.0,
        max_ctx: if ring { 4 } else { pos + 1 },
        neox,
        ring,
    }
}

fn case(op: &str, format: Option<WeightFormat>, shape: &str, params: Params) -> Case {
    Case {
        op: op.to_string(),
        format,
        shape: shape.to_string(),
        params,
    }
}

/// A `dp4a` case's op: packed weights, y stored or (`accumulate`) added to.
fn dp4a_op(f: WeightFormat, rows: u32, cols: u32, accumulate: bool) -> GemvFused {
    GemvFused {
        gemv: Gemv {
            rows,
            cols,
            format: f,
            out_offset: 0,
            layout: GemvVariant::Dp4a
                .layout_for(f)
                .expect("dp4a cases are of its formats"),
        },
        norm: None,
        post_norm: None,
        partials: 0,
        epilogue: if accumulate {
            GemvEpilogue::Accumulate
        } else {
            GemvEpilogue::Store
        },
    }
}

/// The batched wide rows frame's op for a packed `rows × cols` matrix and `n_rows` rows.
fn wide_batched_op(f: WeightFormat, rows: u32, cols: u32, n_rows: u32) -> GemvBatched {
    GemvBatched {
        gemv: Gemv {
            rows,
            cols,
            format: f,
            out_offset: 0,
            layout: crate::gemv::WeightLayout::Packed,
        },
        max_batch: n_rows,
        y_stride: rows,
    }
}

/// The batched wide rows frame at SmolLM2's matrices and a 141-row prompt, a partial row
/// group and batch chunk, and accumulation.
fn wide_batched_cases(f: WeightFormat) -> Vec<Case> {
    let Some(shader) = crate::gemv::batched_wide_shader(f) else {
        return Vec::new();
    };
    [
        ("smollm2.ffn_gate_up.batch141", 3072, 576, 141, false),
        ("smollm2.ffn_down.batch141", 576, 1536, 141, true),
        ("odd_rows.37.batch11", 37, 128, 11, false),
    ]
    .into_iter()
    .map(|(shape, rows, cols, n_rows, accumulate)| {
        case(
            shader.name,
            Some(f),
            shape,
            Params::GemvBatchedWide {
                rows,
                cols,
                n_rows,
                accumulate,
            },
        )
    })
    .collect()
}

/// The `dp4a` gemv's cases for `f`: SmolLM2's shapes (16 lanes x 1 row below 2048
/// columns), wide rows split over two row groups at 512 and 1024 threads
/// (`Gemv::dp4a_split`), a partial workgroup, the residual add; Llama-8B's shapes in the
/// full set.
fn dp4a_cases(f: WeightFormat, set: ShapeSet) -> Vec<Case> {
    let mut shapes: Vec<(&str, u32, u32, bool)> = vec![
        ("smollm2.attn_q", 576, 576, false),
        ("smollm2.ffn_down", 576, 1536, false),
        ("smollm2.lm_head", 49152, 576, false),
        ("odd_rows.37", 37, 256, false),
        ("split.4096", 64, 4096, false),
        ("split.8192", 40, 8192, false),
        ("accumulate", 576, 576, true),
    ];
    if set == ShapeSet::All {
        shapes.extend([
            ("llama8b.attn_q", 4096, 4096, false),
            ("llama8b.ffn_down", 4096, 14336, false),
        ]);
    }
    // q4_0 / q4_1 / q8_0 (packed) take every shape; the GGUF-block formats, whose own
    // code is only the block's load and dot product, a narrow, a wide and a split one
    // (each case is a pipeline; the K formats' rows are whole 256-element super-blocks).
    if GemvVariant::Dp4a.layout_for(f) != Some(crate::gemv::WeightLayout::Packed) {
        shapes.retain(|&(shape, _, _, _)| {
            matches!(shape, "smollm2.ffn_down" | "split.4096" | "split.8192")
        });
    }
    shapes.retain(|&(_, _, cols, _)| cols.is_multiple_of(f.block_elems()));
    shapes
        .into_iter()
        .map(|(shape, rows, cols, accumulate)| {
            case(
                dp4a_op(f, rows, cols, accumulate)
                    .shader(GemvVariant::Dp4a, true, false, false)
                    .name,
                Some(f),
                shape,
                Params::GemvDp4a {
                    rows,
                    cols,
                    accumulate,
                },
            )
        })
        .collect()
}

/// The table, filtered. `max_binding`: the device's `max_storage_buffer_binding_size`.
pub fn cases(set: ShapeSet, max_binding: u64, filter: &CaseFilter) -> Vec<Case> {
    let mut out = Vec::new();
    for f in WeightFormat::ALL {
        out.extend(gemv_cases(f, set, max_binding));
        if GemvVariant::Dp4a.layout_for(f).is_some() {
            out.extend(dp4a_cases(f, set));
        }
        out.extend(wide_batched_cases(f));
        out.extend(batched_gemv_cases(f));
        out.extend(embedding_cases(f));
    }
    out.extend(elementwise_cases());
    out.extend(batched_row_cases());
    out.extend(rope_cases());
    out.extend(attention_cases());
    out.retain(|c| filter.matches(c));
    out
}

/// The widths of the matrix cases of format `f`: 576 (SmolLM2's) where its blocks fit,
/// else 512.
fn smollm2_or_512(f: WeightFormat) -> u32 {
    if f.row_bytes(576).is_ok() {
        576
    } else {
        512
    }
}

/// The gemv of format `f` over SmolLM2-135M's matrices, then awkward ones (a width the
/// format cannot hold, not whole blocks, is skipped), accumulation, an output offset;
/// Llama-3-8B's matrices and the largest binding in the full set.
fn gemv_cases(f: WeightFormat, set: ShapeSet, max_binding: u64) -> Vec<Case> {
    let mut out = Vec::new();
    // Matrices (rows, cols): SmolLM2-135M's, then awkward ones. A width a format cannot
    // hold (not whole blocks) is skipped for that format.
    let mut matrices: Vec<(&str, u32, u32)> = vec![
        ("smollm2.attn_q", 576, 576),
        ("smollm2.attn_kv", 192, 576),
        ("smollm2.ffn_down", 576, 1536),
        ("smollm2.lm_head", 49152, 576),
        ("k_block.256x512", 256, 512),
        ("one_row", 1, 256),
        ("odd_rows.37", 37, 256),
        ("odd_cols.100", 5, 100),
    ];
    if set == ShapeSet::All {
        matrices.extend([
            ("llama8b.attn_q", 4096, 4096),
            ("llama8b.ffn_down", 4096, 14336),
        ]);
    }
    let fits = |cols: u32| f.row_bytes(cols as u64).is_ok();
    let gemv = crate::gemv::shader(f).name;
    for &(shape, rows, cols) in &matrices {
        if !fits(cols) {
            continue;
        }
        out.push(case(
            gemv,
            Some(f),
            shape,
            Params::Gemv {
                rows,
                cols,
                out_offset: 0,
                accumulate: false,
            },
        ));
    }
    let (r, c) = if fits(576) { (576, 576) } else { (256, 512) };
    out.push(case(
        gemv,
        Some(f),
        "accumulate",
        Params::Gemv {
            rows: r,
            cols: c,
            out_offset: 0,
            accumulate: true,
        },
    ));
    out.push(case(
        gemv,
        Some(f),
        "out_offset.64",
        Params::Gemv {
            rows: 37,
            cols: c,
            out_offset: 64,
            accumulate: false,
        },
    ));
    if set == ShapeSet::All {
        // As many rows of 4096 as the largest binding holds.
        let row_bytes = f.row_bytes(4096).unwrap();
        let rows = (max_binding / row_bytes).min(u32::MAX as u64 / 4096) as u32;
        out.push(case(
            gemv,
            Some(f),
            "max_binding",
            Params::Gemv {
                rows,
                cols: 4096,
                out_offset: 0,
                accumulate: false,
            },
        ));
    }
    out
}

/// The batched gemv of format `f`: a partial batch, and accumulation.
fn batched_gemv_cases(f: WeightFormat) -> Vec<Case> {
    let c = smollm2_or_512(f);
    let mut out = Vec::new();
    let batched = crate::gemv::batched_shader(f, crate::gemv::WeightLayout::Gguf).name;
    out.push(case(
        batched,
        Some(f),
        "batch.5",
        Params::GemvBatched {
            rows: 37,
            cols: c,
            n_rows: 5,
            accumulate: false,
        },
    ));
    out.push(case(
        batched,
        Some(f),
        "batch.9.accumulate",
        Params::GemvBatched {
            rows: 64,
            cols: c,
            n_rows: 9,
            accumulate: true,
        },
    ));
    out
}

/// The embedding lookup of format `f`, single and batched.
fn embedding_cases(f: WeightFormat) -> Vec<Case> {
    let fits = |cols: u32| f.row_bytes(cols as u64).is_ok();
    let mut out = Vec::new();
    let emb = crate::embedding::shader(f).name;
    let dim = smollm2_or_512(f);
    out.push(case(
        emb,
        Some(f),
        "smollm2.token_embd",
        Params::Embedding { rows: 49152, dim },
    ));
    out.push(case(
        emb,
        Some(f),
        "one_row",
        Params::Embedding { rows: 1, dim },
    ));
    if fits(100) {
        out.push(case(
            emb,
            Some(f),
            "odd_cols.100",
            Params::Embedding { rows: 3, dim: 100 },
        ));
    }
    let emb_b = crate::embedding::batched_shader(f).name;
    out.push(case(
        emb_b,
        Some(f),
        "batch.3",
        Params::EmbeddingBatched {
            rows: 100,
            dim,
            n_rows: 3,
        },
    ));
    out
}

/// rms_norm, silu_mul, add and argmax at SmolLM2's widths, one element, and an odd width;
/// rms_norm+add at Gemma 3 270M's width.
fn elementwise_cases() -> Vec<Case> {
    let mut out = Vec::new();
    for (shape, n) in [("smollm2", 576), ("one", 1), ("odd.1000", 1000)] {
        out.push(case(
            "rms_norm",
            None,
            shape,
            Params::RmsNorm { n, add: false },
        ));
        out.push(case(
            "silu_mul",
            None,
            shape,
            Params::SiluMul {
                n: if shape == "smollm2" { 1536 } else { n },
            },
        ));
        out.push(case(
            "gelu_mul",
            None,
            shape,
            Params::GeluMul {
                n: if shape == "smollm2" { 2048 } else { n },
            },
        ));
        out.push(case("add", None, shape, Params::Add { n }));
        out.push(case(
            "argmax",
            None,
            shape,
            Params::Argmax {
                n: if shape == "smollm2" { 49152 } else { n },
            },
        ));
    }
    out.push(case(
        "rms_norm+add",
        None,
        "gemma3_270m",
        Params::RmsNorm { n: 640, add: true },
    ));
    out
}

/// The batched row ops of the prefill: rms_norm (all rows, the last only), silu_mul.
fn batched_row_cases() -> Vec<Case> {
    vec![
        case(
            "rms_norm_batched",
            None,
            "batch.5",
            Params::RmsNormBatched {
                n: 576,
                n_rows: 5,
                last_only: false,
            },
        ),
        case(
            "rms_norm_batched",
            None,
            "batch.5.last_only",
            Params::RmsNormBatched {
                n: 576,
                n_rows: 5,
                last_only: true,
            },
        ),
        case(
            "rms_norm_batched",
            None,
            "smollm2.batch141",
            Params::RmsNormBatched {
                n: 576,
                n_rows: 141,
                last_only: false,
            },
        ),
        case(
            "silu_mul_batched",
            None,
            "batch.3",
            Params::SiluMulBatched { n: 1536, n_rows: 3 },
        ),
        case(
            "silu_mul_batched",
            None,
            "smollm2.batch141",
            Params::SiluMulBatched {
                n: 1536,
                n_rows: 141,
            },
        ),
    ]
}

/// rope on q and k, in place on a fused qkv row, and batched.
fn rope_cases() -> Vec<Case> {
    let mut out = Vec::new();
    // The NeoX architectures' shapes (Gemma 3 270M's windowed layers with a ring cache,
    // Qwen2.5-0.5B, Phi-3-mini's head of 96), in place on q/k/v, as the decoder runs them.
    for (shape, (heads, kv, hd), ring) in [
        ("gemma3_270m.neox.ring4", (4, 1, 256), true),
        ("qwen2.5_0.5b.neox", (14, 2, 64), false),
        ("phi3_mini.neox", (32, 32, 96), false),
    ] {
        out.push(case(
            "rope_qkv",
            None,
            shape,
            Params::Rope {
                heads,
                kv,
                hd,
                pos: 37,
                qkv: true,
                neox: true,
                ring,
            },
        ));
    }
    for (shape, (heads, kv, hd), neox, ring) in [
        ("gemma3_270m.neox.ring4", (4, 1, 256), true, true),
        ("qwen3_0.6b.neox", (16, 8, 128), true, false),
        ("two_heads.hd64", (2, 1, 64), false, false),
    ] {
        out.push(case(
            "head_norm+rope",
            None,
            shape,
            Params::RopeNormed {
                heads,
                kv,
                hd,
                neox,
                ring,
            },
        ));
    }
    for (shape, (heads, kv, hd)) in [
        ("smollm2", (9, 3, 64)),
        ("llama8b", (32, 8, 128)),
        ("one_head.hd2", (1, 1, 2)),
    ] {
        out.push(case(
            "rope",
            None,
            shape,
            Params::Rope {
                heads,
                kv,
                hd,
                pos: 37,
                qkv: false,
                neox: false,
                ring: false,
            },
        ));
        out.push(case(
            "rope_qkv",
            None,
            shape,
            Params::Rope {
                heads,
                kv,
                hd,
                pos: 37,
                qkv: true,
                neox: false,
                ring: false,
            },
        ));
        out.push(case(
            "rope_qkv_batched",
            None,
            shape,
            Params::RopeBatched {
                heads,
                kv,
                hd,
                pos0: 3,
                n_rows: 5,
                // Two parts, as the prompt's q/k/v gemm in K parts writes them (one part
                // is the model's prefill tests' and `tests/batched.rs`'s).
                parts: 2,
            },
        ));
    }
    out
}

/// The attention shapes of the architectures beyond Llama that the fused kernel does not
/// cover, and the q/k head norms of Gemma 3 and Qwen3.
fn other_arch_attention_cases() -> Vec<Case> {
    let mut out = Vec::new();
    // Phi-3's head of 96 has no fused kernel: the decoder runs the three ops.
    for op in ["attn_scores", "attn_values", "softmax"] {
        let (heads, kv, hd, max_ctx, n_ctx) = (32, 32, 96, 40, 33);
        out.push(case(
            op,
            None,
            "phi3_mini.ctx33",
            match op {
                "attn_scores" => Params::Scores {
                    heads,
                    kv,
                    hd,
                    max_ctx,
                    n_ctx,
                },
                "attn_values" => Params::Values {
                    heads,
                    kv,
                    hd,
                    max_ctx,
                    n_ctx,
                },
                _ => Params::Softmax {
                    rows: heads,
                    stride: max_ctx,
                    n_ctx,
                },
            },
        ));
    }
    for (shape, (heads, kv, hd)) in [("gemma3_270m", (4, 1, 256)), ("qwen3_0.6b", (16, 8, 128))] {
        out.push(case(
            "head_norm",
            None,
            shape,
            Params::HeadNorm { heads, kv, hd },
        ));
    }
    out
}

/// Attention fused and in three dispatches (scores, softmax, values) at several context
/// lengths, and batched over a prompt.
fn attention_cases() -> Vec<Case> {
    let mut out = other_arch_attention_cases();
    for (shape, (heads, kv, hd), max_ctx, n_ctx) in [
        ("smollm2.ctx11", (9, 3, 64), 16, 11),
        ("smollm2.ctx1", (9, 3, 64), 16, 1),
        ("smollm2.ctx300", (9, 3, 64), 300, 300),
        ("llama8b.ctx33", (32, 8, 128), 40, 33),
        // Gemma 3 270M: head_dim 256, one KV head; a window's ring of 8 rows, full.
        ("gemma3_270m.ring8.ctx40", (4, 1, 256), 8, 40),
        ("qwen2.5_0.5b.ctx21", (14, 2, 64), 24, 21),
    ] {
        out.push(case(
            "attention",
            None,
            shape,
            Params::Attention {
                heads,
                kv,
                hd,
                max_ctx,
                n_ctx,
            },
        ));
        out.push(case(
            "attn_scores",
            None,
            shape,
            Params::Scores {
                heads,
                kv,
                hd,
                max_ctx,
                n_ctx,
            },
        ));
        out.push(case(
            "attn_values",
            None,
            shape,
            Params::Values {
                heads,
                kv,
                hd,
                max_ctx,
                n_ctx,
            },
        ));
        out.push(case(
            "softmax",
            None,
            shape,
            Params::Softmax {
                rows: heads,
                stride: max_ctx,
                n_ctx,
            },
        ));
    }
    out.push(case(
        "attention_batched",
        None,
        "smollm2.batch5",
        Params::AttentionBatched {
            heads: 9,
            kv: 3,
            hd: 64,
            max_ctx: 16,
            pos0: 2,
            n_rows: 5,
        },
    ));
    // A 141-token prompt at SmolLM2's shape (the README's `run` benchmark).
    out.push(case(
        "attention_batched",
        None,
        "smollm2.batch141",
        Params::AttentionBatched {
            heads: 9,
            kv: 3,
            hd: 64,
            max_ctx: 160,
            pos0: 0,
            n_rows: 141,
        },
    ));
    out
}

/// A seed per case, so every run of a case sees the same inputs.
pub fn seed(c: &Case) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in c.op.bytes().chain(c.shape.bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
    }
    h
}
