//! The GPU decoder: weights uploaded once, one graph built once, one step per token.
//!
//! Per token: upload the 16-byte step buffer (and the input token when one is given),
//! one submit, one readback (the argmax token, optionally the logits, and timestamps).
//! The embedding reads its token id from the buffer argmax wrote on the previous step,
//! so greedy decoding never waits on the CPU to feed the next token.
//!
//! Prompts can instead go through a second, batched graph ([`GpuDecoder::enable_prefill`],
//! [`GpuDecoder::prefill`]; see `prefill.rs`) that shares these weights and KV cache.

use gpuscope_ops::argmax::Argmax;
use gpuscope_ops::attention::AttnFused;
use gpuscope_ops::embedding::Embedding;
use gpuscope_ops::gemv::Gemv;
use gpuscope_ops::rms_norm::RmsNorm;
use gpuscope_ops::rope::Rope;
use gpuscope_ops::silu_mul::SiluMul;
use gpuscope_runtime::{
    Dispatch, Gpu, GpuBuffer, Graph, PendingStep, Section, StepOutput, StepRunner,
    STEP_BUFFER_BYTES,
};
use gpuscope_trace::TimingMode;

use crate::config::LlamaConfig;
use crate::error::ModelError;
use crate::weights::{ModelWeights, Tensor};

/// Decoder options.
#[derive(Debug, Clone)]
pub struct DecoderOptions {
    /// KV-cache capacity in tokens.
    pub max_ctx: u32,
    /// Read the logits back every step (tests and correctness checks; costs bandwidth).
    pub read_logits: bool,
}

/// What one GPU step produced.
pub struct GpuStep {
    /// The greedy next token.
    pub token: u32,
    pub logits: Option<Vec<f32>>,
    pub output: StepOutput,
}

/// A weight matrix on the GPU, split in row chunks when larger than one binding.
pub(crate) struct GpuMatrix {
    pub(crate) chunks: Vec<(GpuBuffer, u32, u32)>, // (buffer, first row, rows)
    pub(crate) tensor_format: gpuscope_ops::WeightFormat,
    pub(crate) cols: u32,
}

fn upload_matrix(gpu: &Gpu, t: &Tensor) -> Result<GpuMatrix, ModelError> {
    let max_binding = gpu.limits().max_storage_buffer_binding_size as u64;
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
        chunks.push((gpu.create_buffer_init(&label, bytes)?, first, rows));
        first += rows;
    }
    Ok(GpuMatrix {
        chunks,
        tensor_format: t.format,
        cols: t.cols,
    })
}

impl GpuMatrix {
    /// y = W·x, or y += W·x with `accumulate`, one dispatch per row chunk.
    pub(crate) fn gemv(
        &self,
        gpu: &Gpu,
        x: &GpuBuffer,
        y: &GpuBuffer,
        accumulate: bool,
    ) -> Result<Vec<Dispatch>, ModelError> {
        self.chunks
            .iter()
            .map(|(buf, first, rows)| {
                let op = Gemv {
                    rows: *rows,
                    cols: self.cols,
                    format: self.tensor_format,
                    out_offset: *first,
                };
                Ok(if accumulate {
                    op.dispatch_accumulate(gpu, buf, x, y)?
                } else {
                    op.dispatch(gpu, buf, x, y)?
                })
            })
            .collect()
    }

    fn embedding(
        &self,
        gpu: &Gpu,
        token: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Vec<Dispatch>, ModelError> {
        self.chunks
            .iter()
            .map(|(buf, first, rows)| {
                let op = Embedding {
                    rows: *rows,
                    dim: self.cols,
                    format: self.tensor_format,
                    row_start: *first,
                };
                Ok(op.dispatch(gpu, buf, token, out)?)
            })
            .collect()
    }
}

/// Matrices that write one output vector at the given rows (q/k/v, gate/up): stacked
/// into one matrix — one dispatch — when they share a format, else uploaded apart, each
/// writing its rows through `out_offset` (quantized files often keep `attn_v` in a
/// different format from `attn_q`).
fn upload_stacked(
    gpu: &Gpu,
    name: &str,
    parts: &[(&Tensor, u32)],
) -> Result<Vec<GpuMatrix>, ModelError> {
    let first = parts[0].0;
    if parts
        .iter()
        .all(|(t, _)| t.format == first.format && t.cols == first.cols)
    {
        return Ok(vec![upload_matrix(gpu, &concat_rows(name, parts))?]);
    }
    parts
        .iter()
        .map(|(t, start)| {
            let mut m = upload_matrix(gpu, t)?;
            for chunk in &mut m.chunks {
                chunk.1 += start;
            }
            Ok(m)
        })
        .collect()
}

fn gemv_stacked(
    gpu: &Gpu,
    parts: &[GpuMatrix],
    x: &GpuBuffer,
    y: &GpuBuffer,
) -> Result<Vec<Dispatch>, ModelError> {
    let mut out = Vec::new();
    for m in parts {
        out.extend(m.gemv(gpu, x, y, false)?);
    }
    Ok(out)
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

/// Activations and caches of the decoder.
pub(crate) struct Activations {
    pub(crate) step: GpuBuffer,
    pub(crate) token: GpuBuffer,
    pub(crate) x: GpuBuffer,
    pub(crate) xn: GpuBuffer,
    /// q, k and v, written by one gemv over the concatenated matrices.
    pub(crate) qkv: GpuBuffer,
    /// The q part of `qkv` (attention reads it).
    pub(crate) q: GpuBuffer,
    pub(crate) attn: GpuBuffer,
    /// gate and up, written by one gemv; `up` starts at row `up_row` (aligned for binding).
    pub(crate) gate_up: GpuBuffer,
    pub(crate) gate: GpuBuffer,
    pub(crate) up: GpuBuffer,
    pub(crate) hidden: GpuBuffer,
    pub(crate) logits: GpuBuffer,
    pub(crate) k_cache: Vec<GpuBuffer>,
    pub(crate) v_cache: Vec<GpuBuffer>,
}

pub struct GpuDecoder {
    pub(crate) config: LlamaConfig,
    pub(crate) options: DecoderOptions,
    pub(crate) graph: Graph,
    pub(crate) runner: StepRunner,
    pub(crate) acts: Activations,
    /// (section, dispatch) of the attention dispatches, whose cost depends on the position.
    pub(crate) attention_dispatches: Vec<(usize, usize)>,
    pub(crate) position: u32,
    /// The uploaded weights, kept for graphs built later ([`GpuDecoder::enable_prefill`]).
    pub(crate) weights: GpuWeights,
    /// The batched prompt-processing graph, when enabled.
    pub(crate) prefill: Option<crate::prefill::Prefill>,
}

/// Weight buffers of one layer, as uploaded by [`GpuDecoder::new`].
pub(crate) struct GpuLayer {
    pub(crate) attn_norm: GpuBuffer,
    pub(crate) ffn_norm: GpuBuffer,
    pub(crate) wqkv: Vec<GpuMatrix>,
    pub(crate) wo: GpuMatrix,
    pub(crate) w_gate_up: Vec<GpuMatrix>,
    pub(crate) w_down: GpuMatrix,
}

/// Every weight buffer on the GPU: shared by the decode and prefill graphs (uploaded once).
pub(crate) struct GpuWeights {
    pub(crate) token_embd: GpuMatrix,
    pub(crate) output: GpuMatrix,
    pub(crate) output_norm: GpuBuffer,
    pub(crate) layers: Vec<GpuLayer>,
}

impl GpuDecoder {
    /// Uploads `weights` and builds the per-token graph. All resources are created here.
    pub fn new(
        gpu: &Gpu,
        weights: &ModelWeights,
        options: DecoderOptions,
    ) -> Result<GpuDecoder, ModelError> {
        let _span = tracing::info_span!("gpu_decoder_new").entered();
        let c = weights.config.clone();
        c.validate().map_err(ModelError::Config)?;
        let f32s = |n: u32| n as u64 * 4;
        let buf = |label: &str, bytes: u64| gpu.create_buffer(label, bytes);
        let kv_bytes = f32s(c.kv_dim()) * options.max_ctx as u64;
        let qkv_rows = c.q_dim() + 2 * c.kv_dim();
        let up_row = up_start_row(gpu, c.ffn_dim);
        let qkv = buf("qkv", f32s(qkv_rows))?;
        let gate_up = buf("ffn_gate_up", f32s(up_row + c.ffn_dim))?;
        let acts = Activations {
            step: buf("step", STEP_BUFFER_BYTES)?,
            token: buf("token", 4)?,
            x: buf("x", f32s(c.dim))?,
            xn: buf("x_norm", f32s(c.dim))?,
            q: qkv.view("q", 0, f32s(c.q_dim()))?,
            qkv,
            attn: buf("attn_out", f32s(c.q_dim()))?,
            gate: gate_up.view("ffn_gate", 0, f32s(c.ffn_dim))?,
            up: gate_up.view("ffn_up", f32s(up_row), f32s(c.ffn_dim))?,
            gate_up,
            hidden: buf("ffn_hidden", f32s(c.ffn_dim))?,
            logits: buf("logits", f32s(c.vocab))?,
            k_cache: (0..c.n_layers)
                .map(|i| buf(&format!("L{i}.k_cache"), kv_bytes))
                .collect::<Result<_, _>>()?,
            v_cache: (0..c.n_layers)
                .map(|i| buf(&format!("L{i}.v_cache"), kv_bytes))
                .collect::<Result<_, _>>()?,
        };
        let a = &acts;
        let token_embd = upload_matrix(gpu, &weights.token_embd)?;
        let output = match &weights.output {
            Some(t) => upload_matrix(gpu, t)?,
            None => upload_matrix(gpu, &weights.token_embd)?,
        };
        let output = if weights.output.is_none() {
            // Tied: reuse the embedding table's buffers rather than uploading them twice.
            drop(output);
            GpuMatrix {
                chunks: token_embd.chunks.clone(),
                tensor_format: token_embd.tensor_format,
                cols: token_embd.cols,
            }
        } else {
            output
        };

        let mut sections = Vec::new();
        let embed = token_embd
            .embedding(gpu, &a.token, &a.x)?
            .into_iter()
            .map(|d| d.labelled("token_embd", None))
            .collect();
        sections.push(Section::new("embed", None, embed));

        let mut attention_dispatches = Vec::new();
        let mut gpu_layers = Vec::new();
        let rms = RmsNorm {
            n: c.dim,
            eps: c.rms_eps,
        };
        let attn_shape = (c.n_heads, c.n_kv_heads, c.head_dim, options.max_ctx);
        for (i, layer) in weights.layers.iter().enumerate() {
            let li = i as u32;
            let l = |name: &str| format!("L{li}.{name}");
            let mut ds: Vec<Dispatch> = Vec::new();
            let attn_norm =
                gpu.create_buffer_init(&l("attn_norm"), bytemuck::cast_slice(&layer.attn_norm))?;
            let ffn_norm =
                gpu.create_buffer_init(&l("ffn_norm"), bytemuck::cast_slice(&layer.ffn_norm))?;
            // One gemv for q, k and v, one for gate and up: fewer dispatches, same math.
            let wqkv = upload_stacked(
                gpu,
                &l("attn_qkv"),
                &[
                    (&layer.wq, 0),
                    (&layer.wk, c.q_dim()),
                    (&layer.wv, c.q_dim() + c.kv_dim()),
                ],
            )?;
            let wo = upload_matrix(gpu, &layer.wo)?;
            let w_gate_up = upload_stacked(
                gpu,
                &l("ffn_gate_up"),
                &[(&layer.w_gate, 0), (&layer.w_up, up_row)],
            )?;
            let w_down = upload_matrix(gpu, &layer.w_down)?;
            let push = |ds: &mut Vec<Dispatch>, name: &str, list: Vec<Dispatch>| {
                ds.extend(list.into_iter().map(|d| d.labelled(l(name), Some(li))));
            };
            push(
                &mut ds,
                "attn_norm",
                vec![rms.dispatch(gpu, &a.x, &attn_norm, &a.xn)?],
            );
            push(
                &mut ds,
                "attn_qkv",
                gemv_stacked(gpu, &wqkv, &a.xn, &a.qkv)?,
            );
            let rope = Rope {
                n_heads: c.n_heads,
                n_kv_heads: c.n_kv_heads,
                head_dim: c.head_dim,
                rope_dims: c.rope_dims,
                base: c.rope_base,
                max_ctx: options.max_ctx,
            };
            let (kc, vc) = (&a.k_cache[i], &a.v_cache[i]);
            let offsets = (0, c.q_dim(), c.q_dim() + c.kv_dim());
            push(
                &mut ds,
                "rope",
                vec![rope.dispatch_qkv(gpu, &a.step, &a.qkv, offsets, kc, vc)?],
            );
            let (h, kvh, hd, ctx) = attn_shape;
            let attention = AttnFused {
                n_heads: h,
                n_kv_heads: kvh,
                head_dim: hd,
                max_ctx: ctx,
            };
            attention_dispatches.push((sections.len(), ds.len()));
            push(
                &mut ds,
                "attention",
                vec![attention.dispatch(gpu, &a.step, &a.q, kc, vc, &a.attn)?],
            );
            // x += Wo·attn: the residual add fused into the projection.
            push(&mut ds, "attn_output", wo.gemv(gpu, &a.attn, &a.x, true)?);
            push(
                &mut ds,
                "ffn_norm",
                vec![rms.dispatch(gpu, &a.x, &ffn_norm, &a.xn)?],
            );
            push(
                &mut ds,
                "ffn_gate_up",
                gemv_stacked(gpu, &w_gate_up, &a.xn, &a.gate_up)?,
            );
            let silu = SiluMul { n: c.ffn_dim };
            push(
                &mut ds,
                "ffn_silu_mul",
                vec![silu.dispatch(gpu, &a.gate, &a.up, &a.hidden)?],
            );
            push(
                &mut ds,
                "ffn_down",
                w_down.gemv(gpu, &a.hidden, &a.x, true)?,
            );
            sections.push(Section::new(format!("L{li}"), Some(li), ds));
            gpu_layers.push(GpuLayer {
                attn_norm,
                ffn_norm,
                wqkv,
                wo,
                w_gate_up,
                w_down,
            });
        }

        let output_norm =
            gpu.create_buffer_init("output_norm", bytemuck::cast_slice(&weights.output_norm))?;
        let mut head = vec![rms
            .dispatch(gpu, &a.x, &output_norm, &a.xn)?
            .labelled("output_norm", None)];
        head.extend(
            output
                .gemv(gpu, &a.xn, &a.logits, false)?
                .into_iter()
                .map(|d| d.labelled("output", None)),
        );
        head.push(
            Argmax { n: c.vocab }
                .dispatch(gpu, &a.logits, &a.token)?
                .labelled("argmax", None),
        );
        sections.push(Section::new("head", None, head));

        let graph = Graph { sections };
        let runner = Self::make_runner(gpu, &graph, &acts, options.read_logits, gpu.timing())?;
        Ok(GpuDecoder {
            config: c,
            options,
            graph,
            runner,
            acts,
            attention_dispatches,
            position: 0,
            weights: GpuWeights {
                token_embd,
                output,
                output_norm,
                layers: gpu_layers,
            },
            prefill: None,
        })
    }

    pub(crate) fn make_runner(
        gpu: &Gpu,
        graph: &Graph,
        acts: &Activations,
        read_logits: bool,
        timing: TimingMode,
    ) -> Result<StepRunner, ModelError> {
        let mut readbacks = vec![&acts.token];
        if read_logits {
            readbacks.push(&acts.logits);
        }
        Ok(StepRunner::with_timing(gpu, graph, &readbacks, timing)?)
    }

    /// Switches the timing mode (rebuilds the step runner's query set; setup-time only).
    pub fn set_timing(&mut self, gpu: &Gpu, timing: TimingMode) -> Result<(), ModelError> {
        self.runner = Self::make_runner(
            gpu,
            &self.graph,
            &self.acts,
            self.options.read_logits,
            timing,
        )?;
        if let Some(p) = &mut self.prefill {
            p.runner =
                Self::make_runner(gpu, &p.graph, &self.acts, self.options.read_logits, timing)?;
        }
        Ok(())
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn config(&self) -> &LlamaConfig {
        &self.config
    }

    pub fn position(&self) -> u32 {
        self.position
    }

    /// Clears the KV cache position (the cache contents are overwritten as it refills).
    pub fn reset(&mut self) {
        self.position = 0;
    }

    /// Decodes one token at the next position and waits for it. `input` feeds a given
    /// token (the first one, a prompt token, a forced token); `None` continues from the
    /// GPU's own argmax.
    pub fn step(&mut self, gpu: &Gpu, input: Option<u32>) -> Result<GpuStep, ModelError> {
        let pending = self.submit(gpu, input)?;
        self.finish(gpu, pending)
    }

    /// Submits one token without waiting for it; up to
    /// [`gpuscope_runtime::MAX_IN_FLIGHT`] tokens may be in flight. Finish them in order.
    pub fn submit(&mut self, gpu: &Gpu, input: Option<u32>) -> Result<PendingStep, ModelError> {
        if self.position >= self.options.max_ctx {
            return Err(ModelError::ContextFull {
                max_ctx: self.options.max_ctx,
            });
        }
        if let Some(t) = input {
            if t >= self.config.vocab {
                return Err(ModelError::Config(format!(
                    "token {t} is outside the vocabulary ({})",
                    self.config.vocab
                )));
            }
        }
        let n_ctx = self.position + 1;
        self.update_attention_costs(n_ctx);
        let step: [u32; 4] = [self.position, n_ctx, 0, 0];
        let token_bytes;
        let mut uploads: Vec<(&GpuBuffer, u64, &[u8])> =
            vec![(&self.acts.step, 0, bytemuck::cast_slice(&step))];
        if let Some(t) = input {
            token_bytes = t.to_le_bytes();
            uploads.push((&self.acts.token, 0, &token_bytes));
        }
        let pending = self.runner.submit(gpu, &self.graph, &uploads)?;
        self.position += 1;
        Ok(pending)
    }

    /// Waits for a submitted token and reads its results.
    pub fn finish(&mut self, gpu: &Gpu, pending: PendingStep) -> Result<GpuStep, ModelError> {
        let output = self.runner.finish(gpu, &self.graph, pending)?;
        let token = u32::from_le_bytes(output.readbacks[0][..4].try_into().unwrap());
        let logits = self.options.read_logits.then(|| {
            bytemuck::pod_collect_to_vec::<u8, f32>(&output.readbacks[1])
                [..self.config.vocab as usize]
                .to_vec()
        });
        Ok(GpuStep {
            token,
            logits,
            output,
        })
    }

    /// Attention's bytes and FLOPs grow with the context; keep the declared costs exact.
    fn update_attention_costs(&mut self, n_ctx: u32) {
        let c = &self.config;
        let op = AttnFused {
            n_heads: c.n_heads,
            n_kv_heads: c.n_kv_heads,
            head_dim: c.head_dim,
            max_ctx: self.options.max_ctx,
        };
        let cost = op.cost_at(n_ctx);
        for &(s, d) in &self.attention_dispatches {
            self.graph.sections[s].dispatches[d].cost = cost;
        }
    }
}
