//! Replaying a capture: the whole stream timed like a live run, or the captured steps
//! with every output compared against the recorded one; kernels may be substituted.

use std::collections::HashMap;

use gpuscope_trace::capture::{Capture, Comparison, Mismatch, ReplayLimits};
use gpuscope_trace::compare::word_diff;
use gpuscope_trace::{Profile, TimingInfo, TimingMode, TokenRecord, PROFILE_FORMAT};

use crate::capture::error::ReplayError;
use crate::capture::progress::{suspect, ReplayProgress};
use crate::capture::rebuild::rebuild;
use crate::capture::substitute::Substitution;
use crate::capture::walk::walk;
use crate::device::Gpu;
use crate::dispatch::{Cost, Graph};
use crate::resources::GpuBuffer;
use crate::step::{step_events, StepRunner};

// Where the CLI finds it.
pub use crate::capture::substitute::check_substitution;

/// The limits a replay on `gpu` must fit ([`gpuscope_trace::capture::check_budget`]),
/// with `max_memory` bytes of budget.
pub fn replay_limits(gpu: &Gpu, max_memory: u64) -> ReplayLimits {
    let l = gpu.limits();
    ReplayLimits {
        max_buffer_size: l.max_buffer_size,
        max_storage_buffer_binding_size: l.max_storage_buffer_binding_size,
        min_storage_buffer_offset_alignment: l.min_storage_buffer_offset_alignment as u64,
        max_compute_workgroups_per_dimension: l.max_compute_workgroups_per_dimension as u64,
        // As the step runner places them: per pass a start and an end, or a start and
        // one after each dispatch.
        timestamps: match gpu.timing() {
            TimingMode::Off => None,
            TimingMode::Pass => Some((2, 0)),
            TimingMode::Dispatch => Some((1, 1)),
        },
        max_memory,
    }
}

/// Per step, its uploads as (whole buffer, offset, bytes).
type Uploads = Vec<Vec<(GpuBuffer, u64, Vec<u8>)>>;

/// The uploads of every step.
fn step_uploads(
    capture: &Capture,
    buffers: &std::collections::BTreeMap<u64, GpuBuffer>,
) -> Result<Uploads, ReplayError> {
    capture
        .stream
        .steps
        .iter()
        .map(|s| {
            s.uploads
                .iter()
                .map(|u| {
                    let b = buffers.get(&u.buffer).ok_or_else(|| {
                        ReplayError::Invalid(format!("upload to unknown buffer {}", u.buffer))
                    })?;
                    Ok((b.clone(), u.offset, capture.blob(&u.data)?))
                })
                .collect()
        })
        .collect()
}

/// Replays the whole stream, timed with the device's timing mode, one submit and one
/// readback per step as the live run did. Each step declares the costs the live run
/// recorded, so the report's rates match. `token_id` is the first 4 bytes of the first
/// readback (the decoder's next token), or 0 when nothing is read back.
pub fn replay_stream(
    gpu: &Gpu,
    capture: &Capture,
    subs: &[Substitution],
    progress: &ReplayProgress,
) -> Result<Profile, ReplayError> {
    let mut rebuilt = rebuild(gpu, capture, subs, true)?;
    let uploads = step_uploads(capture, &rebuilt.buffers)?;
    let readbacks: Vec<&GpuBuffer> = rebuilt.readbacks.iter().collect();
    let mut runners: HashMap<usize, StepRunner> = HashMap::new();
    let first_graph = capture.stream.steps.first().map_or(0, |s| s.graph);
    let m = &capture.manifest;
    let mut workload = m.workload.clone();
    if let Some(g) = rebuilt.graphs.get(first_graph) {
        workload.graph_dispatches_per_token = g.dispatch_count() as u32;
        workload.graph_passes_per_token = crate::step::passes_per_step(g, gpu.timing()) as u32;
    }
    let mut profile = Profile {
        format: PROFILE_FORMAT,
        tool: format!(
            "gpuscope {} (replay of {})",
            env!("CARGO_PKG_VERSION"),
            capture.root().display()
        ),
        adapter: gpu.adapter_desc(),
        timing: TimingInfo {
            mode: gpu.timing(),
            reason: gpu.timing_reason().to_string(),
            timestamp_period_ns: gpu.queue().get_timestamp_period() as f64,
            sampling: None,
        },
        workload,
        setup: rebuilt.setup,
        setup_wall_ns: rebuilt.setup_wall_ns,
        tokens: Vec::new(),
        dispatches: Vec::new(),
        passes: Vec::new(),
        overhead: None,
        prompt: None,
        ..Default::default()
    };
    let mut outputs = Vec::new();
    let steps = capture.stream.steps.len();
    for (i, (step, ups)) in capture.stream.steps.iter().zip(&uploads).enumerate() {
        progress.enter(format!(
            "replaying step {i} of {steps}: {}",
            suspect(capture, &capture.stream.graphs[step.graph], subs)
        ));
        let graph: &mut Graph = &mut rebuilt.graphs[step.graph];
        if let Some(measured) = &step.measured {
            for (d, m) in graph.dispatches_mut().zip(&measured.dispatches) {
                d.cost = Cost {
                    bytes: m.bytes,
                    flops: m.flops,
                };
            }
        }
        let runner = match runners.entry(step.graph) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert(StepRunner::new(gpu, graph, &readbacks)?)
            }
        };
        let refs: Vec<(&GpuBuffer, u64, &[u8])> =
            ups.iter().map(|(b, o, d)| (b, *o, d.as_slice())).collect();
        let out = runner.step(gpu, graph, &refs)?;
        let token_id = out
            .readbacks
            .first()
            .and_then(|r| r.get(..4))
            .map_or(0, |b| u32::from_le_bytes(b.try_into().unwrap()));
        profile.tokens.push(TokenRecord {
            other_counters: Default::default(),
            gpu_track: 0,
            index: step.index,
            position: step.position,
            token_id,
            wall_ns: out.wall_ns,
            gpu_busy_ns: out.gpu_busy_ns,
            counters: out.counters,
            cpu: out.cpu,
            name: None,
        });
        let (d, p) = step_events(graph, step.index, &out);
        outputs.push((d, p));
    }
    for (d, p) in outputs {
        profile.dispatches.extend(d);
        profile.passes.extend(p);
    }
    Ok(profile)
}

/// Runs the captured steps again from the captured buffer contents and compares every
/// recorded dispatch output: bitwise with `tolerance` `None`, else f32 word by word
/// within it, except bindings the (original) shader declares with integer words, which
/// always compare exactly.
///
/// Steps before the first captured one run too (whole, untimed), with the
/// substitutions: an edited kernel that changes their results shows up at the first
/// captured dispatch its effect reaches, which may not be its own. Capture outputs
/// from token 0 to find the edited kernel's own first dispatch.
pub fn compare_outputs(
    gpu: &Gpu,
    capture: &Capture,
    subs: &[Substitution],
    tolerance: Option<f32>,
    progress: &ReplayProgress,
) -> Result<Comparison, ReplayError> {
    let data = match &capture.data {
        Some(d) if !d.initial.is_empty() && !d.outputs.is_empty() => d,
        _ => {
            return Err(ReplayError::Invalid(format!(
                "{}: the capture has no dispatch outputs to compare; record it with --capture-data --capture-tokens A..B",
                capture.root().display()
            )))
        }
    };
    let rebuilt = rebuild(gpu, capture, subs, true)?;
    let steps: Vec<usize> = data.outputs.iter().map(|o| o.step).collect();
    let first = *steps.iter().min().unwrap();
    let end = steps.iter().max().unwrap() + 1;
    let uploads = step_uploads(capture, &rebuilt.buffers)?;
    let upload_refs: Vec<Vec<(GpuBuffer, u64, &[u8])>> = uploads[..end]
        .iter()
        .map(|s| {
            s.iter()
                .map(|(b, o, d)| (b.clone(), *o, d.as_slice()))
                .collect()
        })
        .collect();
    let graphs: Vec<&Graph> = capture.stream.steps[..end]
        .iter()
        .map(|s| &rebuilt.graphs[s.graph])
        .collect();
    let written: Vec<&[Vec<u32>]> = capture.stream.steps[..end]
        .iter()
        .map(|s| rebuilt.written[s.graph].as_slice())
        .collect();
    progress.enter(format!(
        "comparing the outputs of steps {first}..{end} (steps 0..{end} run dispatch by dispatch): {}",
        suspect(
            capture,
            &capture.stream.graphs[capture.stream.steps[first].graph],
            subs
        )
    ));
    let walked = walk(gpu, &graphs, &written, &[], &upload_refs, first..end)?;
    let c = &capture.commands;
    let mut cmp = Comparison {
        tolerance,
        steps: steps.clone(),
        outputs_compared: 0,
        outputs_mismatched: 0,
        first_mismatch: None,
        substituted: rebuilt.substituted.clone(),
    };
    let mut integer: HashMap<usize, Vec<u32>> = HashMap::new();
    for (step, dispatches) in walked {
        let Some(recorded) = data.outputs.iter().find(|o| o.step == step) else {
            continue;
        };
        let graph = &capture.stream.graphs[capture.stream.steps[step].graph];
        for (i, ((outs, rec), d)) in dispatches
            .iter()
            .zip(&recorded.dispatches)
            .zip(graph.dispatches())
            .enumerate()
        {
            for (binding, bytes) in outs {
                let Some(r) = rec.outputs.iter().find(|o| o.binding == *binding) else {
                    continue;
                };
                let expected = capture.blob(&r.data)?;
                cmp.outputs_compared += 1;
                let shader = c.pipelines[d.pipeline].shader;
                let ints = integer
                    .entry(shader)
                    .or_insert_with(|| integer_bindings(capture, shader));
                let tolerance = tolerance.filter(|_| !ints.contains(binding));
                if let Some(diff) = word_diff(&expected, bytes, tolerance) {
                    cmp.outputs_mismatched += 1;
                    if cmp.first_mismatch.is_none() {
                        let entry = &c.bind_groups[d.bind_group].entries[*binding as usize];
                        cmp.first_mismatch = Some(Mismatch {
                            step,
                            dispatch: i,
                            label: d.label.clone(),
                            pipeline: c.pipelines[d.pipeline].name.clone(),
                            binding: *binding,
                            buffer_label: entry.label.clone(),
                            first_word: diff.first_word,
                            words_differing: diff.words,
                            expected: diff.expected,
                            found: diff.found,
                            max_abs_diff: diff.max_abs,
                        });
                    }
                }
            }
        }
    }
    capture.forget_blobs();
    Ok(cmp)
}

/// The group-0 bindings of shader `shader` that hold integers (see
/// [`gpuscope_record::ShaderInterface::integer_bindings`]); none when it does not parse.
fn integer_bindings(capture: &Capture, shader: usize) -> Vec<u32> {
    capture
        .shader_sources
        .get(shader)
        .and_then(|src| gpuscope_record::reflect(src).ok())
        .map(|i| i.integer_bindings)
        .unwrap_or_default()
}
