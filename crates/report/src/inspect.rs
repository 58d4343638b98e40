//! `gpuscope inspect`: what a capture holds, and where its recorded time went.
//!
//! A shader built with more than [`MANY_CONSTANT_SETS`] override-constant sets is
//! flagged: each set is a separate pipeline compile, and when the constants are shapes
//! that vary per call site a uniform (or a storage parameter) often does the same job
//! with one pipeline (candle's `_shaders.json` exists to spot exactly this).

use std::collections::{BTreeSet, HashMap, HashSet};

use serde::{Deserialize, Serialize};

use gpuscope_trace::capture::model::{Capture, CommandKey, Commands};
use gpuscope_trace::profile::TimingMode;
use gpuscope_trace::FormatVersion;

/// More constant sets than this for one shader is flagged.
pub const MANY_CONSTANT_SETS: usize = 4;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Inspection {
    pub name: String,
    pub tool: String,
    pub format: FormatVersion,
    pub adapter: String,
    pub backend: String,
    pub workload: String,
    pub timing: TimingMode,
    /// Why the run stopped early, when it did (the capture holds the steps before it).
    pub incomplete: Option<String>,
    pub steps: usize,
    pub dispatches: usize,
    pub passes: usize,
    pub unique_commands: usize,
    pub pipelines: usize,
    pub bind_groups: usize,
    pub shaders: Vec<ShaderSummary>,
    pub buffers: usize,
    pub buffer_bytes: u64,
    /// Buffer contents captured (`--capture-data`).
    pub has_initial_data: bool,
    /// Steps whose dispatch outputs were captured.
    pub output_steps: Vec<usize>,
    /// Sum of the valid per-dispatch GPU spans recorded; 0 without dispatch timing.
    pub measured_total_ns: u64,
    /// Commands by total recorded GPU time (by count when no time was recorded).
    pub top_commands: Vec<CommandTotal>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShaderSummary {
    pub name: String,
    pub entry_points: Vec<String>,
    pub pipelines: usize,
    pub constant_sets: usize,
    /// More than [`MANY_CONSTANT_SETS`] constant sets.
    pub many_constant_sets: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommandTotal {
    pub pipeline: String,
    /// The first label that ran it; `labels` counts the distinct ones.
    pub label: String,
    pub labels: usize,
    pub workgroups: [u32; 3],
    pub count: u64,
    /// Valid recorded GPU time, summed; `None` when none was recorded.
    pub total_ns: Option<u64>,
    /// Dispatches of this command with a valid span.
    pub timed: u64,
}

/// Recorded time and distinct labels of one command, summed over the steps.
#[derive(Default)]
struct Recorded<'a> {
    total_ns: u64,
    timed: u64,
    labels: HashSet<&'a str>,
}

/// Summarises `capture`, keeping the `top` commands. Linear in the dispatches (plus a
/// sort of the commands), whatever the labels: a capture of a million dispatches is
/// inspected in about the time it takes to read.
pub fn inspect(capture: &Capture, top: usize) -> Inspection {
    let c = &capture.commands;
    let s = &capture.stream;
    let mut totals: HashMap<CommandKey, Recorded> = HashMap::new();
    let mut measured_total_ns: u64 = 0;
    let mut passes = 0;
    for step in &s.steps {
        let Some(g) = s.graphs.get(step.graph) else {
            continue;
        };
        passes += g.passes.len();
        for (i, d) in g.dispatches().enumerate() {
            let entry = totals.entry(d.command()).or_default();
            entry.labels.insert(&d.label);
            if let Some(ns) = step
                .measured
                .as_ref()
                .and_then(|m| m.dispatches.get(i))
                .and_then(|m| m.valid_gpu_ns())
            {
                entry.total_ns = entry.total_ns.saturating_add(ns);
                entry.timed += 1;
                measured_total_ns = measured_total_ns.saturating_add(ns);
            }
        }
    }
    let mut top_commands: Vec<CommandTotal> = capture
        .command_counts()
        .into_iter()
        .map(|(key, count, d)| {
            let r = totals.get(&key);
            let timed = r.map_or(0, |r| r.timed);
            CommandTotal {
                pipeline: c
                    .pipelines
                    .get(key.0)
                    .map(|p| p.name.clone())
                    .unwrap_or_default(),
                label: d.label.clone(),
                labels: r.map_or(0, |r| r.labels.len()),
                workgroups: key.2,
                count,
                total_ns: r.filter(|_| timed > 0).map(|r| r.total_ns),
                timed,
            }
        })
        .collect();
    let unique_commands = top_commands.len();
    top_commands.sort_by(|a, b| b.total_ns.cmp(&a.total_ns).then(b.count.cmp(&a.count)));
    top_commands.truncate(top);
    let shaders = shader_summaries(c);
    let m = &capture.manifest;
    Inspection {
        name: m.name.clone(),
        tool: m.tool.clone(),
        format: m.format,
        adapter: m.adapter.name.clone(),
        backend: m.adapter.backend.clone(),
        workload: m.workload.name.clone(),
        timing: m.timing.mode,
        incomplete: m.incomplete.clone(),
        steps: s.steps.len(),
        dispatches: s.dispatch_count(),
        passes,
        unique_commands,
        pipelines: c.pipelines.len(),
        bind_groups: c.bind_groups.len(),
        shaders,
        buffers: c.buffers.len(),
        // Saturating: a hand-made capture may declare sizes that wrap a u64 sum.
        buffer_bytes: c.buffers.iter().fold(0u64, |t, b| t.saturating_add(b.size)),
        has_initial_data: capture.data.as_ref().is_some_and(|d| !d.initial.is_empty()),
        output_steps: capture
            .data
            .as_ref()
            .map(|d| d.outputs.iter().map(|o| o.step).collect())
            .unwrap_or_default(),
        measured_total_ns,
        top_commands,
    }
}

/// Each shader with its pipelines and distinct constant sets (one pass over the
/// pipelines, not one per shader).
fn shader_summaries(c: &Commands) -> Vec<ShaderSummary> {
    let mut pipelines = vec![0usize; c.shaders.len()];
    let mut sets: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); c.shaders.len()];
    for p in &c.pipelines {
        if let (Some(n), Some(set)) = (pipelines.get_mut(p.shader), sets.get_mut(p.shader)) {
            *n += 1;
            set.insert(p.constants);
        }
    }
    c.shaders
        .iter()
        .zip(pipelines.into_iter().zip(sets))
        .map(|(sh, (pipelines, sets))| ShaderSummary {
            name: sh.name.clone(),
            entry_points: sh.entry_points.clone(),
            pipelines,
            constant_sets: sets.len(),
            many_constant_sets: sets.len() > MANY_CONSTANT_SETS,
        })
        .collect()
}
