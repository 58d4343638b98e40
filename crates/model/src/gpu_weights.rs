//! The weights on the GPU: every tensor uploaded once, in the layout the kernel plan
//! gives it ([`KernelPlan::layout_for`]), shared by the decode and prefill graphs.
//!
//! A matrix larger than one binding is split in row chunks, each a matrix to its
//! kernels. q/k/v and gate/up are stacked into one matrix each (one gemv for the three
//! or the two) where they share a format; `up` then starts at [`up_start_row`].

use gpuscope_ops::embedding::Embedding;
use gpuscope_ops::gemv::{
    GemmKind, Gemv, GemvBatched, GemvBuffers, GemvEpilogue, GemvFused, WeightLayout,
};
use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer};
use gpuscope_trace::MemoryKind;

use crate::error::ModelError;
use crate::plan::KernelPlan;
use crate::weights::{ModelWeights, Tensor};

/// Rows of a weight matrix in one buffer.
#[derive(Clone)]
pub(crate) struct RowChunk {
    pub(crate) buffer: GpuBuffer,
    /// The chunk's first row in the whole matrix.
    pub(crate) first_row: u32,
    pub(crate) rows: u32,
}

/// What a gemv folds into its input ([`GemvFused`]'s `norm` and `post_norm`): rms_norm
/// (its eps) and, before it, a post norm with its residual add (its eps).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Folded {
    pub(crate) norm: Option<f32>,
    pub(crate) post_norm: Option<f32>,
    /// Partials added to x first (their count): the attention's output projection per
    /// head, or the folded down projection's per block of 32 FFN rows.
    pub(crate) partials: u32,
}

/// A weight matrix on the GPU, split in row chunks when larger than one binding.
pub(crate) struct GpuMatrix {
    pub(crate) chunks: Vec<RowChunk>,
    pub(crate) tensor_format: gpuscope_ops::WeightFormat,
    pub(crate) cols: u32,
    /// How the chunks hold the weights (every chunk alike).
    pub(crate) layout: WeightLayout,
    /// Stacked from q4_0 / q5_0 / q8_0 parts widened to q8_0 ([`upload_stacked`]).
    pub(crate) widened: bool,
}

thread_local! {
    /// The packed bytes of the matrix being uploaded, one vector reused for all
    /// ([`WeightLayout::pack_into`]); [`GpuWeights::upload`] frees it when done (it
    /// grows to the largest matrix: 295 MB for Llama-8B's head).
    static PACKED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Uploads `t` in the layout the plan gives a matrix of its format and size
/// ([`KernelPlan::layout_for`]); each row chunk is packed on its own (a chunk is a matrix
/// to its kernels).
fn upload_matrix(gpu: &Gpu, t: &Tensor, plan: &KernelPlan) -> Result<GpuMatrix, ModelError> {
    upload_matrix_as(gpu, t, plan.layout_for(t.format, t.rows, t.cols))
}

/// [`upload_matrix`] in `layout` where the format has it, else as GGUF bytes.
fn upload_matrix_as(gpu: &Gpu, t: &Tensor, layout: WeightLayout) -> Result<GpuMatrix, ModelError> {
    let layout = layout.for_format(t.format);
    let max_binding = gpu.limits().max_storage_buffer_binding_size;
    let row_bytes = t.row_bytes() as u64;
    let rows_per_chunk = (max_binding / row_bytes).min(t.rows as u64).max(1) as u32;
    let mut chunks = Vec::new();
    let mut first = 0u32;
    while first < t.rows {
        let rows = rows_per_chunk.min(t.rows - first);
        let bytes = &t.data
            [(first as u64 * row_bytes) as usize..((first + rows) as u64 * row_bytes) as usize];
        let label = if first == 0 && rows == t.rows {
            t.name.clone()
        } else {
            format!("{}[{}..{}]", t.name, first, first + rows)
        };
        let buffer = match layout {
            WeightLayout::Gguf => gpu.create_buffer_init_as(MemoryKind::Weights, &label, bytes)?,
            _ => PACKED.with_borrow_mut(|packed| {
                layout.pack_into(t.format, bytes, packed);
                gpu.create_buffer_init_as(MemoryKind::Weights, &label, packed)
            })?,
        };
        chunks.push(RowChunk {
            buffer,
            first_row: first,
            rows,
        });
        first += rows;
    }
    Ok(GpuMatrix {
        chunks,
        tensor_format: t.format,
        cols: t.cols,
        layout,
        widened: false,
    })
}

impl GpuMatrix {
    /// Rows of the whole matrix (every chunk).
    pub(crate) fn rows(&self) -> u32 {
        self.chunks.iter().map(|c| c.rows).sum()
    }

    /// Each row chunk's buffer with the [`Gemv`] it is to its kernels (rows from
    /// `out_offset` = the chunk's first row).
    pub(crate) fn chunk_gemvs(&self) -> impl Iterator<Item = (&GpuBuffer, Gemv)> + '_ {
        self.chunks.iter().map(move |c| {
            (
                &c.buffer,
                Gemv {
                    rows: c.rows,
                    cols: self.cols,
                    format: self.tensor_format,
                    out_offset: c.first_row,
                    layout: self.layout,
                },
            )
        })
    }

    /// One [`GemvFused`] dispatch per row chunk: `folded` says what its input folds in,
    /// `epilogue` where rows go. Buffers other than the weights in `io`
    /// (its `w` is replaced per chunk). `extra_passes` plants a slowdown (see
    /// [`crate::PlantedSlowdown`]), 0 for none.
    pub(crate) fn gemv_fused(
        &self,
        gpu: &Gpu,
        plan: &KernelPlan,
        folded: Folded,
        epilogue: GemvEpilogue,
        io: GemvBuffers,
        extra_passes: u32,
    ) -> Result<Vec<Dispatch>, ModelError> {
        self.chunk_gemvs()
            .map(|(buf, gemv)| {
                let op = GemvFused {
                    gemv,
                    norm: folded.norm,
                    post_norm: folded.post_norm,
                    partials: folded.partials,
                    epilogue,
                };
                let variant =
                    plan.gemv_for(gpu, self.tensor_format, self.layout, self.rows(), self.cols);
                let tuning = op.fit_tuning(gemv.tuning_with(variant, plan.gemv_shape, gpu));
                let io = GemvBuffers { w: buf, ..io };
                Ok(op.dispatch_planted(gpu, tuning, &io, extra_passes)?)
            })
            .collect()
    }

    /// y = W·x, or y += W·x with `accumulate`, one dispatch per row chunk (`extra_passes`
    /// as in [`Self::gemv_fused`]).
    pub(crate) fn gemv(
        &self,
        gpu: &Gpu,
        plan: &KernelPlan,
        x: &GpuBuffer,
        y: &GpuBuffer,
        accumulate: bool,
        extra_passes: u32,
    ) -> Result<Vec<Dispatch>, ModelError> {
        let epilogue = if accumulate {
            GemvEpilogue::Accumulate
        } else {
            GemvEpilogue::Store
        };
        self.gemv_fused(
            gpu,
            plan,
            Folded::default(),
            epilogue,
            GemvBuffers::new(x, x, y),
            extra_passes,
        )
    }

    /// Whether every row chunk runs the `dp4a` frame under `plan` (what a folded post norm
    /// needs).
    pub(crate) fn runs_dp4a(&self, gpu: &Gpu, plan: &KernelPlan) -> bool {
        plan.gemv_for(gpu, self.tensor_format, self.layout, self.rows(), self.cols)
            == gpuscope_ops::gemv::GemvVariant::Dp4a
    }

    /// Whether every row chunk starts on an even row and holds whole row pairs (what the
    /// rope epilogue needs).
    pub(crate) fn whole_pairs(&self) -> bool {
        self.chunks
            .iter()
            .all(|c| c.first_row % 2 == 0 && c.rows % 2 == 0)
    }

    /// The batched op of each row chunk (`max_batch` input rows, output rows
    /// `y_stride` apart), with its weight buffer.
    pub(crate) fn batched_ops(
        &self,
        max_batch: u32,
        y_stride: u32,
    ) -> impl Iterator<Item = (&GpuBuffer, GemvBatched)> + '_ {
        self.chunk_gemvs().map(move |(buf, gemv)| {
            (
                buf,
                GemvBatched {
                    gemv,
                    max_batch,
                    y_stride,
                },
            )
        })
    }

    /// Whether some chunk goes through the gemm of `kind` in a batch of `max_batch`.
    pub(crate) fn uses_gemm(&self, kind: GemmKind, gpu: &Gpu, max_batch: u32) -> bool {
        self.batched_ops(max_batch, 0)
            .any(|(_, op)| op.runs_gemm(kind, gpu))
    }

    /// The lookup of `token`'s row into `out`, times `scale` where given (Gemma's √dim).
    pub(crate) fn embedding(
        &self,
        gpu: &Gpu,
        token: &GpuBuffer,
        out: &GpuBuffer,
        scale: Option<f32>,
    ) -> Result<Vec<Dispatch>, ModelError> {
        self.chunks
            .iter()
            .map(|c| {
                let op = Embedding {
                    rows: c.rows,
                    dim: self.cols,
                    format: self.tensor_format,
                    row_start: c.first_row,
                };
                Ok(op.dispatch_scaled(gpu, &c.buffer, token, out, scale.unwrap_or(1.0))?)
            })
            .collect()
    }
}

/// Matrices that write one output vector at the given rows (q/k/v, gate/up): each run
/// of consecutive parts sharing a format and width stacked into one matrix — one
/// dispatch — the others uploaded apart, each writing its rows through `out_offset`
/// (quantized files often keep `attn_v` in a different format from `attn_q` and `attn_k`:
/// Gemma 3 270M's Q4_K_M file has q and k in q5_0 and v in q8_0 in half its layers, two
/// dispatches there, not three).
fn upload_stacked(
    gpu: &Gpu,
    name: &str,
    parts: &[(&Tensor, u32)],
    plan: &KernelPlan,
) -> Result<Vec<GpuMatrix>, ModelError> {
    // Formats that differ but each widen to q8_0 exactly go up as one q8_0 matrix: one
    // dispatch, a few more weight bytes for the narrower parts.
    let first = parts[0].0;
    let widen = parts.len() > 1
        && parts.iter().any(|(t, _)| t.format != first.format)
        && parts
            .iter()
            .all(|(t, _)| t.cols == first.cols && t.format.widens_to_q8_0());
    if widen {
        let wide: Vec<Tensor> = parts.iter().map(|(t, _)| widened_to_q8_0(t)).collect();
        let group: Vec<(&Tensor, u32)> =
            wide.iter().zip(parts).map(|(t, (_, s))| (t, *s)).collect();
        let mut m = upload_matrix(gpu, &concat_rows(name, &group), plan)?;
        m.widened = true;
        return Ok(vec![m]);
    }
    let mut matrices = Vec::new();
    let mut rest = parts;
    while let Some(&(first, start)) = rest.first() {
        let run = rest
            .iter()
            .take_while(|(t, _)| t.format == first.format && t.cols == first.cols)
            .count();
        let mut m = if run == 1 {
            upload_matrix(gpu, first, plan)?
        } else {
            let group: Vec<(&Tensor, u32)> =
                rest[..run].iter().map(|&(t, s)| (t, s - start)).collect();
            let label = if run == parts.len() {
                name.to_string()
            } else {
                format!(
                    "{name}[{}]",
                    group
                        .iter()
                        .map(|(t, _)| t.name.as_str())
                        .collect::<Vec<_>>()
                        .join("+")
                )
            };
            upload_matrix(gpu, &concat_rows(&label, &group), plan)?
        };
        for chunk in &mut m.chunks {
            chunk.first_row += start;
        }
        matrices.push(m);
        rest = &rest[run..];
    }
    Ok(matrices)
}

/// `t` as q8_0 blocks, every weight unchanged ([`gpuscope_ops::WeightFormat::widen_to_q8_0`]).
fn widened_to_q8_0(t: &Tensor) -> Tensor {
    Tensor {
        name: t.name.clone(),
        format: gpuscope_ops::WeightFormat::Q8_0,
        rows: t.rows,
        cols: t.cols,
        data: t.format.widen_to_q8_0(&t.data).into(),
    }
}

/// Stacks matrices of one width and format into one, each part starting at the given row; rows
/// between parts (alignment padding) are zero blocks, which every format decodes to 0.
fn concat_rows(name: &str, parts: &[(&Tensor, u32)]) -> Tensor {
    let first = parts[0].0;
    let row_bytes = first.row_bytes();
    let rows = parts
        .iter()
        .map(|(t, start)| start + t.rows)
        .max()
        .unwrap_or(0);
    let mut data = vec![0u8; rows as usize * row_bytes];
    for (t, start) in parts {
        assert!(
            t.cols == first.cols && t.format == first.format,
            "concat_rows: parts differ in shape or format"
        );
        let at = *start as usize * row_bytes;
        data[at..at + t.data.len()].copy_from_slice(&t.data);
    }
    Tensor {
        name: name.to_string(),
        format: first.format,
        rows,
        cols: first.cols,
        data: data.into(),
    }
}

/// First row of `up` in the gate/up output: right after gate, rounded up so the `up`
/// view starts on the device's storage-offset alignment.
pub(crate) fn up_start_row(gpu: &Gpu, ffn_dim: u32) -> u32 {
    let align = gpu.limits().min_storage_buffer_offset_alignment.max(4);
    (ffn_dim * 4).next_multiple_of(align) / 4
}

/// Weight buffers of one layer.
pub(crate) struct GpuLayer {
    pub(crate) attn_norm: GpuBuffer,
    pub(crate) ffn_norm: GpuBuffer,
    pub(crate) wqkv: Vec<GpuMatrix>,
    pub(crate) wo: GpuMatrix,
    pub(crate) w_gate_up: Vec<GpuMatrix>,
    pub(crate) w_down: GpuMatrix,
    /// What the architecture adds ([`crate::weights::LayerExtras`]).
    pub(crate) extra: GpuExtras,
}

/// The buffers of an architecture's extra vectors, each where the layer has it.
#[derive(Default)]
pub(crate) struct GpuExtras {
    pub(crate) qkv_bias: Option<GpuBuffer>,
    pub(crate) q_norm: Option<GpuBuffer>,
    pub(crate) k_norm: Option<GpuBuffer>,
    pub(crate) post_attn_norm: Option<GpuBuffer>,
    pub(crate) post_ffn_norm: Option<GpuBuffer>,
}

impl GpuExtras {
    fn upload(
        gpu: &Gpu,
        layer: usize,
        e: &crate::weights::LayerExtras,
    ) -> Result<GpuExtras, ModelError> {
        let up = |name: &str, v: &Option<Vec<f32>>| -> Result<Option<GpuBuffer>, ModelError> {
            v.as_ref()
                .map(|v| {
                    gpu.create_buffer_init_as(
                        MemoryKind::Weights,
                        &format!("L{layer}.{name}"),
                        bytemuck::cast_slice(v),
                    )
                })
                .transpose()
                .map_err(ModelError::from)
        };
        Ok(GpuExtras {
            qkv_bias: up("attn_qkv_bias", &e.qkv_bias)?,
            q_norm: up("attn_q_norm", &e.q_norm)?,
            k_norm: up("attn_k_norm", &e.k_norm)?,
            post_attn_norm: up("post_attention_norm", &e.post_attn_norm)?,
            post_ffn_norm: up("post_ffw_norm", &e.post_ffn_norm)?,
        })
    }
}

/// Every weight buffer on the GPU: shared by the decode and prefill graphs (uploaded once).
pub(crate) struct GpuWeights {
    pub(crate) token_embd: GpuMatrix,
    pub(crate) output: GpuMatrix,
    pub(crate) output_norm: GpuBuffer,
    pub(crate) layers: Vec<GpuLayer>,
    /// First row of `up` in each stacked gate/up matrix ([`up_start_row`]).
    pub(crate) up_row: u32,
}

impl GpuWeights {
    /// Uploads every tensor once: q/k/v and gate/up stacked where they share a format.
    /// Matrices go up in the layout the plan gives them ([`KernelPlan::layout_for`]); the
    /// embedding table stays GGUF bytes (the embedding kernels read those).
    pub(crate) fn upload(
        gpu: &Gpu,
        weights: &ModelWeights,
        plan: &KernelPlan,
    ) -> Result<GpuWeights, ModelError> {
        let c = &weights.config;
        let up_row = up_start_row(gpu, c.ffn_dim);
        let e = &weights.token_embd;
        let token_embd = upload_matrix_as(gpu, e, WeightLayout::Gguf)?;
        let output = match &weights.output {
            Some(t) => upload_matrix(gpu, t, plan)?,
            // Tied, in another layout: the head gets its own copy of the table.
            None if plan
                .layout_for(e.format, e.rows, e.cols)
                .for_format(e.format)
                != WeightLayout::Gguf =>
            {
                let head = Tensor {
                    name: "output (token_embd repacked)".into(),
                    ..e.clone()
                };
                upload_matrix(gpu, &head, plan)?
            }
            // Tied: reuse the embedding table's buffers rather than uploading them twice.
            None => GpuMatrix {
                chunks: token_embd.chunks.clone(),
                tensor_format: token_embd.tensor_format,
                cols: token_embd.cols,
                layout: token_embd.layout,
                widened: false,
            },
        };
        let norm = |name: &str, w: &[f32]| {
            gpu.create_buffer_init_as(MemoryKind::Weights, name, bytemuck::cast_slice(w))
        };
        let layers = weights
            .layers
            .iter()
            .enumerate()
            .map(|(i, layer)| {
                let l = |name: &str| format!("L{i}.{name}");
                let uploaded = GpuLayer {
                    attn_norm: norm(&l("attn_norm"), &layer.attn_norm)?,
                    ffn_norm: norm(&l("ffn_norm"), &layer.ffn_norm)?,
                    // One gemv for q, k and v, one for gate and up: fewer dispatches.
                    wqkv: upload_stacked(
                        gpu,
                        &l("attn_qkv"),
                        &[
                            (&layer.wq, 0),
                            (&layer.wk, c.q_dim()),
                            (&layer.wv, c.q_dim() + c.kv_dim()),
                        ],
                        plan,
                    )?,
                    wo: upload_matrix(gpu, &layer.wo, plan)?,
                    w_gate_up: upload_stacked(
                        gpu,
                        &l("ffn_gate_up"),
                        &[(&layer.w_gate, 0), (&layer.w_up, up_row)],
                        plan,
                    )?,
                    w_down: upload_matrix(gpu, &layer.w_down, plan)?,
                    extra: GpuExtras::upload(gpu, i, &layer.extra)?,
                };
                // The layer's writes go to the GPU now, not all at the first step.
                gpu.flush_writes();
                Ok(uploaded)
            })
            .collect::<Result<_, ModelError>>()?;
        PACKED.with_borrow_mut(std::mem::take);
        Ok(GpuWeights {
            token_embd,
            output,
            output_norm: norm("output_norm", &weights.output_norm)?,
            layers,
            up_row,
        })
    }
}
