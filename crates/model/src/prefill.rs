//! Prompt processing: the prompt's tokens in one batched pass, then decoding continues
//! from the KV cache with [`GpuDecoder::submit`].
//!
//! Decisions:
//! - A second [`Graph`] built once, by [`GpuDecoder::enable_prefill`], for at most
//!   `max_batch` rows: its own activations (`max_batch` rows of x, x_norm, qkv, attention
//!   output, gate/up and hidden), the decode graph's weight buffers and KV cache (nothing
//!   uploaded twice), and its own [`StepRunner`]. A call uploads only the token ids and a
//!   16-byte params buffer `[pos0, n_rows, 0, 0]`; kernels skip rows past `n_rows`, so
//!   nothing is created per call.
//! - Same sections as the decode graph (`embed`, `L0`.., `head`), with batched kernels:
//!   gemv over chunks of 8 rows per weight pass, rms_norm per row, rope at positions
//!   `pos0 + b` writing cache rows, causal attention (row b sees cache rows
//!   `0..=pos0 + b`), silu_mul per row, embedding from the token-id buffer.
//! - The head runs on the last row only: a batched rms_norm in "last row" mode writes it
//!   into the decode graph's `x_norm`, then the decode graph's own output gemv and argmax
//!   dispatches (rebuilt here, same pipelines) write `logits` and `token`. So after a
//!   prefill the GPU token buffer holds the greedy next token and `submit(gpu, None)`
//!   continues from it, exactly as after a step.
//! - Opt-in ([`GpuDecoder::enable_prefill`]) rather than built by [`GpuDecoder::new`]:
//!   decode-only users (profiles, captures) pay no extra pipelines or memory.
//! - Captures: the capture tap records what a runner uploads, but a capture's stream has
//!   one graph; prefill steps are not meant to be recorded into it (`run --capture`
//!   keeps the token-by-token prompt).

use gpuscope_ops::attention::{AttnBatched, AttnVariant};
use gpuscope_ops::embedding::{Embedding, EmbeddingBatched};
use gpuscope_ops::gemv::{GemmKind, GemvBatched, GemvVariant, QuantizeX};
use gpuscope_ops::rms_norm::{RmsNorm, RmsNormBatched};
use gpuscope_ops::rope::RopeBatched;
use gpuscope_ops::silu_mul::SiluMulBatched;
use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, Graph, Section, StepRunner};

use crate::error::ModelError;
use crate::gpu::{up_start_row, GpuDecoder, GpuMatrix, GpuStep};

/// The prefill graph and its buffers.
pub(crate) struct Prefill {
    pub(crate) max_batch: u32,
    pub(crate) graph: Graph,
    pub(crate) runner: StepRunner,
    params: GpuBuffer,
    tokens: GpuBuffer,
    attention: AttnBatched,
    /// (section, dispatch) of the attention dispatches (cost depends on the positions).
    attention_dispatches: Vec<(usize, usize)>,
}

impl GpuMatrix {
    /// The batched op of each row chunk, with its weight buffer.
    fn batched_ops(
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

    /// Whether some chunk goes through the gemm of `kind`.
    fn uses_gemm(&self, kind: GemmKind, gpu: &Gpu, max_batch: u32) -> bool {
        self.batched_ops(max_batch, 0)
            .any(|(_, op)| op.runs_gemm(kind, gpu))
    }

    /// Y[b] (+)= W·X[b] for every row chunk of the matrix, Y rows `y_stride` apart,
    /// through `gemm` where it has a form for the matrix's format (else the batched gemv).
    #[allow(clippy::too_many_arguments)]
    fn gemv_batched(
        &self,
        gpu: &Gpu,
        x: &GpuBuffer,
        gemm: PromptGemm<'_>,
        y: &GpuBuffer,
        params: &GpuBuffer,
        max_batch: u32,
        y_stride: u32,
        accumulate: bool,
    ) -> Result<Vec<Dispatch>, ModelError> {
        self.batched_ops(max_batch, y_stride)
            .map(|(buf, op)| {
                Ok(match gemm.kind() {
                    _ if matches!(gemm, PromptGemm::Rows) && op.runs_wide(gpu) => {
                        op.dispatch_wide(gpu, buf, x, y, params, accumulate)?
                    }
                    Some(kind) if op.runs_gemm(kind, gpu) => {
                        let input = match gemm {
                            PromptGemm::Dp4a(xq) => xq,
                            _ => x,
                        };
                        op.dispatch_gemm(kind, gpu, buf, input, y, params, accumulate)?
                    }
                    _ => op.dispatch(gpu, buf, x, y, params, accumulate)?,
                })
            })
            .collect()
    }
}

/// The gemm a prefill graph multiplies through, with what it reads besides x.
#[derive(Clone, Copy)]
enum PromptGemm<'a> {
    /// The batched gemv only.
    Batched,
    /// dp4a, reading x quantized into this buffer (by one [`QuantizeX`] per input).
    Dp4a(&'a GpuBuffer),
    /// coopmat, reading x as it is.
    Coopmat,
    /// The wide rows frame's batched form where it runs (CPU adapters), else the batched
    /// gemv.
    Rows,
}

impl PromptGemm<'_> {
    fn kind(self) -> Option<GemmKind> {
        match self {
            PromptGemm::Batched | PromptGemm::Rows => None,
            PromptGemm::Dp4a(_) => Some(GemmKind::Dp4a),
            PromptGemm::Coopmat => Some(GemmKind::Coopmat),
        }
    }
}

/// The batched products of one input: the parts' dispatches, preceded by the input's
/// quantization where the dp4a gemm multiplies some part.
#[allow(clippy::too_many_arguments)]
fn products(
    gpu: &Gpu,
    parts: &[&GpuMatrix],
    x: &GpuBuffer,
    gemm: PromptGemm<'_>,
    y: &GpuBuffer,
    params: &GpuBuffer,
    max_batch: u32,
    y_stride: u32,
    accumulate: bool,
) -> Result<Vec<Dispatch>, ModelError> {
    let mut out = Vec::new();
    if let PromptGemm::Dp4a(xq) = gemm {
        if parts
            .iter()
            .any(|p| p.uses_gemm(GemmKind::Dp4a, gpu, max_batch))
        {
            let quantize = QuantizeX {
                cols: parts[0].cols,
                max_batch,
            };
            out.push(quantize.dispatch(gpu, x, xq, params)?);
        }
    }
    for part in parts {
        out.extend(part.gemv_batched(gpu, x, gemm, y, params, max_batch, y_stride, accumulate)?);
    }
    Ok(out)
}

/// The prefill graph, or the error that says it was never built. (A function of the
/// field, not of the decoder, so the decoder's other fields stay free to borrow.)
fn enabled(prefill: &mut Option<Prefill>) -> Result<&mut Prefill, ModelError> {
    prefill.as_mut().ok_or_else(|| {
        ModelError::Config("prefill is not enabled (GpuDecoder::enable_prefill)".into())
    })
}

/// A prefill submitted and not yet waited for ([`GpuDecoder::prefill_submit`]).
pub enum PendingPrefill {
    /// On the GPU: [`GpuDecoder::prefill_finish`] waits for it.
    Submitted(gpuscope_runtime::PendingStep),
    /// Fed through decode steps, already finished.
    Done(GpuStep),
}

impl GpuDecoder {
    /// Builds the batched prompt-processing graph for prompts chunks of up to `max_batch`
    /// tokens (setup time: buffers, pipelines and bind groups are created here, none per
    /// call). Calling it again rebuilds it for the new size.
    ///
    /// With the CPU-style gemv variant (`rows`: lavapipe and other CPU adapters) the
    /// graph multiplies through the wide rows frame's batched form
    /// ([`GemvBatched::dispatch_wide`]) where every quantized matrix of the layers runs
    /// it; where not, no graph is built: the lanes frame's batched gemv is slow there (on
    /// lavapipe a prompt went 3.4x faster through decode steps, 28 tokens: 4.9 against
    /// 1.4 tok/s). [`Self::prefill`] then runs the decode graph once per token, and
    /// [`Self::prefill_method`] says so.
    pub fn enable_prefill(&mut self, gpu: &Gpu, max_batch: u32) -> Result<(), ModelError> {
        let _span = tracing::info_span!("gpu_prefill_new").entered();
        if max_batch == 0 {
            return Err(ModelError::Config("prefill max_batch must be > 0".into()));
        }
        self.prefill = None;
        self.prefill_steps = None;
        if self.plan.gemv == GemvVariant::Rows && !self.layers_run_wide(gpu, max_batch) {
            self.prefill_steps = Some(max_batch);
            return Ok(());
        }
        let c = self.config.clone();
        let max_ctx = self.options.max_ctx;
        let m = max_batch;
        let f32s = |n: u32| u64::from(n) * 4 * u64::from(m);
        let buf = |label: &str, bytes: u64| gpu.create_buffer(label, bytes);
        let qkv_stride = c.q_dim() + 2 * c.kv_dim();
        let up_row = up_start_row(gpu, c.ffn_dim);
        let gu_stride = up_row + c.ffn_dim;
        let params = buf("prefill.params", 16)?;
        let tokens = buf("prefill.tokens", 4 * u64::from(m))?;
        let x = buf("prefill.x", f32s(c.dim))?;
        let xn = buf("prefill.x_norm", f32s(c.dim))?;
        let qkv = buf("prefill.qkv", f32s(qkv_stride))?;
        let attn = buf("prefill.attn_out", f32s(c.q_dim()))?;
        let gate_up = buf("prefill.ffn_gate_up", f32s(gu_stride))?;
        let hidden = buf("prefill.ffn_hidden", f32s(c.ffn_dim))?;
        let w = &self.weights;
        let a = &self.acts;
        // x quantized for the dp4a gemm, sized for the widest input (the FFN's hidden).
        let xq = if self.plan.prefill == Some(GemmKind::Dp4a) {
            let widest = c.dim.max(c.q_dim()).max(c.ffn_dim);
            let bytes = QuantizeX {
                cols: widest,
                max_batch: m,
            }
            .buffer_bytes();
            Some(buf("prefill.x_q8", bytes.max(16))?)
        } else {
            None
        };
        let gemm = match (self.plan.prefill, &xq) {
            _ if self.plan.gemv == GemvVariant::Rows => PromptGemm::Rows,
            (Some(GemmKind::Dp4a), Some(xq)) => PromptGemm::Dp4a(xq),
            (Some(GemmKind::Coopmat), _) => PromptGemm::Coopmat,
            _ => PromptGemm::Batched,
        };

        let mut sections = Vec::new();
        let embed = w
            .token_embd
            .chunks
            .iter()
            .map(|(table, first, rows)| {
                let emb = Embedding {
                    rows: *rows,
                    dim: w.token_embd.cols,
                    format: w.token_embd.tensor_format,
                    row_start: *first,
                };
                Ok(EmbeddingBatched { emb, max_batch: m }
                    .dispatch(gpu, table, &tokens, &x, &params)?
                    .labelled("token_embd", None))
            })
            .collect::<Result<Vec<_>, ModelError>>()?;
        sections.push(Section::new("embed", None, embed));

        let rms = RmsNormBatched {
            norm: RmsNorm {
                n: c.dim,
                eps: c.rms_eps,
            },
            max_batch: m,
            last_only: false,
        };
        let attention = AttnBatched {
            attn: c.attention(max_ctx),
            max_batch: m,
            q_stride: qkv_stride,
            out_stride: c.q_dim(),
        };
        // The decode graph's variant for this context; its batched form (`subgroup` has
        // one of its own, every other variant takes the fused kernel's).
        let attention_variant = self
            .plan
            .attention
            .unwrap_or_else(|| AttnVariant::for_adapter(gpu, &attention.attn));
        let mut attention_dispatches = Vec::new();
        for (i, layer) in w.layers.iter().enumerate() {
            let li = i as u32;
            let l = |name: &str| format!("L{li}.{name}");
            let mut ds: Vec<Dispatch> = Vec::new();
            let push = |ds: &mut Vec<Dispatch>, name: &str, list: Vec<Dispatch>| {
                ds.extend(list.into_iter().map(|d| d.labelled(l(name), Some(li))));
            };
            push(
                &mut ds,
                "attn_norm",
                vec![rms.dispatch(gpu, &x, &layer.attn_norm, &xn, &params)?],
            );
            let qkv_parts: Vec<&GpuMatrix> = layer.wqkv.iter().collect();
            push(
                &mut ds,
                "attn_qkv",
                products(
                    gpu, &qkv_parts, &xn, gemm, &qkv, &params, m, qkv_stride, false,
                )?,
            );
            let rope = RopeBatched {
                rope: c.rope(max_ctx),
                max_batch: m,
                qkv_stride,
                offsets: (0, c.q_dim(), c.q_dim() + c.kv_dim()),
            };
            let (kc, vc) = (&a.k_cache[i], &a.v_cache[i]);
            push(
                &mut ds,
                "rope",
                vec![rope.dispatch(gpu, &params, &qkv, kc, vc)?],
            );
            attention_dispatches.push((sections.len(), ds.len()));
            push(
                &mut ds,
                "attention",
                vec![attention.dispatch_variant(
                    gpu,
                    attention_variant,
                    [&params, &qkv, kc, vc, &attn],
                )?],
            );
            push(
                &mut ds,
                "attn_output",
                products(gpu, &[&layer.wo], &attn, gemm, &x, &params, m, c.dim, true)?,
            );
            push(
                &mut ds,
                "ffn_norm",
                vec![rms.dispatch(gpu, &x, &layer.ffn_norm, &xn, &params)?],
            );
            let gu_parts: Vec<&GpuMatrix> = layer.w_gate_up.iter().collect();
            push(
                &mut ds,
                "ffn_gate_up",
                products(
                    gpu, &gu_parts, &xn, gemm, &gate_up, &params, m, gu_stride, false,
                )?,
            );
            let silu = SiluMulBatched {
                n: c.ffn_dim,
                max_batch: m,
                in_stride: gu_stride,
                up_offset: up_row,
            };
            push(
                &mut ds,
                "ffn_silu_mul",
                vec![silu.dispatch(gpu, &gate_up, &hidden, &params)?],
            );
            push(
                &mut ds,
                "ffn_down",
                products(
                    gpu,
                    &[&layer.w_down],
                    &hidden,
                    gemm,
                    &x,
                    &params,
                    m,
                    c.dim,
                    true,
                )?,
            );
            sections.push(Section::new(format!("L{li}"), Some(li), ds));
        }

        // Head on the last row only, into the decode graph's buffers.
        let last = RmsNormBatched {
            last_only: true,
            ..rms
        };
        let mut head = vec![last
            .dispatch(gpu, &x, &w.output_norm, &a.xn, &params)?
            .labelled("output_norm", None)];
        head.extend(crate::graph::output_and_argmax(
            gpu, &self.plan, w, a, &a.xn, None, c.vocab,
        )?);
        sections.push(Section::new("head", None, head));

        let graph = Graph { sections };
        self.settings.insert(
            "prefill".into(),
            match gemm {
                PromptGemm::Dp4a(_) => "dp4a gemm (64x64 tiles, x quantized to int8 blocks once per input) for q4_0/q4_1/q8_0 matrices, the batched gemv (8 rows per weight pass) for the rest".into(),
                PromptGemm::Coopmat => "coopmat gemm (64x64 tiles of f16 on cooperative matrices: tensor cores) for q4_0/q4_1/q8_0 matrices, the batched gemv (8 rows per weight pass) for the rest".into(),
                PromptGemm::Batched => "batched gemv (8 rows per weight pass)".into(),
                PromptGemm::Rows => "wide rows frame, batched (one lane per 8 weight rows, 8 prompt rows per weight pass)".into(),
            },
        );
        let mut runner = Self::make_runner(gpu, &graph, &self.acts, self.options.read_logits)?;
        // Prompt steps are timed apart (the profile's `prompt`), not as decoded tokens.
        runner.set_recorded(false);
        self.prefill = Some(Prefill {
            max_batch: m,
            graph,
            runner,
            params,
            tokens,
            attention,
            attention_dispatches,
        });
        Ok(())
    }

    /// Whether every quantized matrix of the layers has the wide rows frame's batched
    /// form on `gpu` ([`GemvBatched::runs_wide`]).
    fn layers_run_wide(&self, gpu: &Gpu, max_batch: u32) -> bool {
        self.weights.layers.iter().all(|layer| {
            layer
                .wqkv
                .iter()
                .chain([&layer.wo, &layer.w_down])
                .chain(&layer.w_gate_up)
                .all(|m| m.batched_ops(max_batch, 0).all(|(_, op)| op.runs_wide(gpu)))
        })
    }

    /// The largest prompt chunk [`Self::prefill`] takes (0 when not enabled).
    pub fn prefill_max_batch(&self) -> u32 {
        self.prefill
            .as_ref()
            .map(|p| p.max_batch)
            .or(self.prefill_steps)
            .unwrap_or(0)
    }

    /// How [`Self::prefill`] processes a prompt, for reports.
    pub fn prefill_method(&self) -> String {
        match (&self.prefill, self.prefill_steps) {
            (Some(p), _) => format!("batched prefill, up to {} tokens per submit", p.max_batch),
            (None, Some(_)) => format!(
                "one decode step per token, up to {} in flight (gemv variant {}: the batched kernels have no CPU-style form)",
                gpuscope_runtime::MAX_IN_FLIGHT,
                self.plan.gemv.name()
            ),
            (None, None) => "prefill not enabled".into(),
        }
    }

    /// The prefill graph, when enabled.
    pub fn prefill_graph(&self) -> Option<&Graph> {
        self.prefill.as_ref().map(|p| &p.graph)
    }

    /// Processes `tokens` (at most [`Self::prefill_max_batch`]) at positions
    /// `position..position + len` in one submit and waits for it: fills their KV-cache
    /// rows, advances the position and returns the greedy next token after the last one
    /// (with its logits when `read_logits`). The token is also left in the GPU token
    /// buffer, so `submit(gpu, None)` continues from it.
    pub fn prefill(&mut self, gpu: &Gpu, tokens: &[u32]) -> Result<GpuStep, ModelError> {
        let pending = self.prefill_submit(gpu, tokens)?;
        self.prefill_finish(gpu, pending)
    }

    /// [`Self::prefill`]'s first half: the submit, the position advanced. Decode steps
    /// submitted before [`Self::prefill_finish`] run behind it on the GPU, continuing
    /// from the token it leaves in the token buffer. (Through decode steps, where the
    /// plan has no prefill graph, the whole prefill happens here.)
    pub fn prefill_submit(
        &mut self,
        gpu: &Gpu,
        tokens: &[u32],
    ) -> Result<PendingPrefill, ModelError> {
        if let Some(max_batch) = self.prefill_steps {
            return self
                .prefill_by_steps(gpu, tokens, max_batch)
                .map(PendingPrefill::Done);
        }
        let max_ctx = self.options.max_ctx;
        let vocab = self.config.vocab;
        let pos0 = self.position;
        let p = enabled(&mut self.prefill)?;
        let n = tokens.len();
        if n == 0 || n > p.max_batch as usize {
            return Err(ModelError::Config(format!(
                "prefill takes 1 to {} tokens, got {n}",
                p.max_batch
            )));
        }
        if u64::from(pos0) + n as u64 > u64::from(max_ctx) {
            return Err(ModelError::ContextFull { max_ctx });
        }
        if let Some(t) = tokens.iter().find(|&&t| t >= vocab) {
            return Err(ModelError::Config(format!(
                "token {t} is outside the vocabulary ({vocab})"
            )));
        }
        let n = n as u32;
        let cost = p.attention.cost_at(pos0, n);
        for &(s, d) in &p.attention_dispatches {
            p.graph.sections[s].dispatches[d].cost = cost;
        }
        let params: [u32; 4] = [pos0, n, 0, 0];
        let uploads: Vec<(&GpuBuffer, u64, &[u8])> = vec![
            (&p.params, 0, bytemuck::cast_slice(&params)),
            (&p.tokens, 0, bytemuck::cast_slice(tokens)),
        ];
        let pending = p.runner.submit(gpu, &p.graph, &uploads)?;
        self.position += n;
        Ok(PendingPrefill::Submitted(pending))
    }

    /// [`Self::prefill`]'s second half: waits for the submit and reads its token back.
    pub fn prefill_finish(
        &mut self,
        gpu: &Gpu,
        pending: PendingPrefill,
    ) -> Result<GpuStep, ModelError> {
        let pending = match pending {
            PendingPrefill::Done(step) => return Ok(step),
            PendingPrefill::Submitted(pending) => pending,
        };
        let vocab = self.config.vocab;
        let p = enabled(&mut self.prefill)?;
        let output = p.runner.finish(gpu, &p.graph, pending)?;
        let token = u32::from_le_bytes(output.readbacks[0][..4].try_into().unwrap());
        let logits = self.options.read_logits.then(|| {
            bytemuck::pod_collect_to_vec::<u8, f32>(&output.readbacks[1])[..vocab as usize].to_vec()
        });
        Ok(GpuStep {
            token,
            logits,
            output,
        })
    }

    /// [`Self::prefill`] through the decode graph: each token one step, up to
    /// [`gpuscope_runtime::MAX_IN_FLIGHT`] in flight, the last one's result returned.
    fn prefill_by_steps(
        &mut self,
        gpu: &Gpu,
        tokens: &[u32],
        max_batch: u32,
    ) -> Result<GpuStep, ModelError> {
        if tokens.is_empty() || tokens.len() > max_batch as usize {
            return Err(ModelError::Config(format!(
                "prefill takes 1 to {max_batch} tokens, got {}",
                tokens.len()
            )));
        }
        if u64::from(self.position) + tokens.len() as u64 > u64::from(self.options.max_ctx) {
            return Err(ModelError::ContextFull {
                max_ctx: self.options.max_ctx,
            });
        }
        // Prompt steps are not decoded tokens: kept out of the profile like the batched
        // prefill's (see `enable_prefill`).
        self.runner.set_recorded(false);
        let result = self.prefill_steps_unrecorded(gpu, tokens);
        self.runner.set_recorded(self.recorded);
        result
    }

    fn prefill_steps_unrecorded(
        &mut self,
        gpu: &Gpu,
        tokens: &[u32],
    ) -> Result<GpuStep, ModelError> {
        let mut pending = std::collections::VecDeque::new();
        let mut last = None;
        for &t in tokens {
            if pending.len() == gpuscope_runtime::MAX_IN_FLIGHT {
                last = Some(self.finish(gpu, pending.pop_front().unwrap())?);
            }
            pending.push_back(self.submit(gpu, Some(t))?);
        }
        while let Some(p) = pending.pop_front() {
            last = Some(self.finish(gpu, p)?);
        }
        Ok(last.expect("at least one token"))
    }
}
