//! The kernels the adapter's default plan runs, for `ops test | perf`: the harness's
//! table builds each op in a portable frame, while the decoder runs the variants its plan
//! picks for the adapter (rows, packed, wide, subgroup attention, the fused
//! norm + gemv + rope / silu_mul epilogues). These are those kernels, each taken from a
//! decode graph of real shape, one per shader (the first dispatch that runs it).

use std::collections::HashMap;

use gpuscope_runtime::{Dispatch, Gpu};
use gpuscope_trace::compare::{TensorError, Thresholds};

use super::{check, CheckError, CheckOptions};
use crate::decoder::{DecoderOptions, GpuDecoder};
use crate::weights::ModelWeights;

/// One shader of the decode graph, at its first dispatch.
#[derive(Debug, Clone)]
pub struct PlanKernel {
    /// The shader with its variant, e.g. `rms_norm+gemv_q8_0+rope.rows.packed.xshared`.
    pub shader: String,
    pub op: String,
    /// The first dispatch's label, e.g. `L0.attn_qkv`.
    pub label: String,
    /// Dispatches of one token that run it.
    pub calls: usize,
}

/// A plan kernel compared with the CPU executor inside a decode step.
#[derive(Debug, Clone)]
pub struct KernelCheck {
    pub kernel: PlanKernel,
    /// The worst output's local error over its dispatches (the reference op on the same
    /// inputs); `None` when no output could be compared.
    pub worst: Option<TensorError>,
    /// Why it failed: the first limit crossed, or an output without a comparison.
    pub failure: Option<String>,
}

/// Each shader of `dispatches` once, in graph order.
pub fn plan_kernels<'d>(dispatches: impl Iterator<Item = &'d Dispatch>) -> Vec<PlanKernel> {
    first_dispatches(dispatches)
        .into_iter()
        .map(|(k, _)| k)
        .collect()
}

/// Each shader of `dispatches` once, in graph order, with its first dispatch.
fn first_dispatches<'d>(
    dispatches: impl Iterator<Item = &'d Dispatch>,
) -> Vec<(PlanKernel, &'d Dispatch)> {
    let mut out: Vec<(PlanKernel, &Dispatch)> = Vec::new();
    let mut at: HashMap<&str, usize> = HashMap::new();
    for d in dispatches {
        let shader = d.pipeline.shader();
        match at.get(shader) {
            Some(&i) => out[i].0.calls += 1,
            None => {
                at.insert(shader, out.len());
                let kernel = PlanKernel {
                    shader: shader.to_string(),
                    op: d.op.clone(),
                    label: d.label.clone(),
                    calls: 1,
                };
                out.push((kernel, d));
            }
        }
    }
    out
}

/// The decoder of `weights` on `gpu` with the adapter's plan, and the first dispatch of
/// each of its decode graph's shaders (for timing them where they run).
pub fn plan_dispatches(
    gpu: &Gpu,
    weights: &ModelWeights,
) -> Result<(GpuDecoder, Vec<(PlanKernel, Dispatch)>), crate::ModelError> {
    let dec = GpuDecoder::new(
        gpu,
        weights,
        DecoderOptions {
            max_ctx: 8,
            read_logits: false,
        },
    )?;
    let firsts = first_dispatches(dec.graph().dispatches())
        .into_iter()
        .map(|(k, d)| (k, d.clone()))
        .collect();
    Ok((dec, firsts))
}

/// Two decode tokens of `weights` checked dispatch by dispatch against the CPU
/// executors (f32), judged per shader by the local limits of `thresholds`.
pub fn check_plan_kernels(
    gpu: &Gpu,
    weights: &ModelWeights,
    model: &str,
    thresholds: &Thresholds,
) -> Result<Vec<KernelCheck>, CheckError> {
    let opts = CheckOptions {
        thresholds: thresholds.clone(),
        ..CheckOptions::new(model, vec![1], 2)
    };
    let report = check(gpu, weights, &opts)?.report;
    let mut checks: Vec<KernelCheck> = Vec::new();
    let mut at: HashMap<String, usize> = HashMap::new();
    for d in report.dispatches.iter().filter(|d| d.token == 0) {
        let i = *at.entry(d.shader.clone()).or_insert_with(|| {
            checks.push(KernelCheck {
                kernel: PlanKernel {
                    shader: d.shader.clone(),
                    op: d.op.clone(),
                    label: d.label.clone(),
                    calls: 0,
                },
                worst: None,
                failure: None,
            });
            checks.len() - 1
        });
        checks[i].kernel.calls += 1;
    }
    for d in &report.dispatches {
        let c = &mut checks[at[&d.shader]];
        let limits = report
            .thresholds
            .local_for_dispatch(&d.op, d.int8_activations);
        for o in &d.outputs {
            let Some(e) = &o.local else {
                c.failure.get_or_insert_with(|| {
                    format!(
                        "{} token {}: output {} not compared",
                        d.label, d.token, o.buffer
                    )
                });
                continue;
            };
            if let Some(why) = limits.exceeded(e) {
                c.failure
                    .get_or_insert_with(|| format!("{} token {}: {why}", d.label, d.token));
            }
            if c.worst.as_ref().is_none_or(|w| e.nmse > w.nmse) {
                c.worst = Some(e.clone());
            }
        }
    }
    Ok(checks)
}
