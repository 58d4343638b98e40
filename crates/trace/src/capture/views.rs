//! The four views candle's `wgpu_debug` writes, with the same roles, computed from a
//! capture's commands and stream (so they can never disagree with what replays).
//!
//! - `<name>_measurements.json`: per command label, the live run's GPU duration (mean,
//!   min, max, std, count), the bytes the command writes, its workgroup count.
//! - `<name>_shaders.json`: every shader with the constant sets it was built with; many
//!   sets for one shader means many compiles (a uniform may do instead).
//! - `<name>_used_consts.json`: constant set id → constants.
//! - `<name>_used_pipelines.json`: each unique command with how often it ran.
//!
//! Durations are in nanoseconds; only valid GPU spans count (see
//! [`crate::valid_span_ns`]), and `count` is how many there were.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::capture::model::{Access, Commands, Stream};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DurationStats {
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub std_ns: f64,
    pub count: u64,
}

impl DurationStats {
    pub fn of(values: &[u64]) -> Option<DurationStats> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = values
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        Some(DurationStats {
            mean_ns: mean,
            min_ns: *values.iter().min()?,
            max_ns: *values.iter().max()?,
            std_ns: var.sqrt(),
            count: values.len() as u64,
        })
    }
}

/// One row of `<name>_measurements.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MeasurementView {
    pub label: String,
    pub op: String,
    pub pipeline: String,
    /// Times the label ran in the stream.
    pub dispatches: u64,
    /// `None` when no valid GPU span was recorded (timing `pass` or `off`).
    pub duration: Option<DurationStats>,
    /// Bytes of the read-write bindings.
    pub output_bytes: u64,
    pub workgroups: [u32; 3],
}

pub fn measurements(c: &Commands, stream: &Stream) -> Vec<MeasurementView> {
    let mut rows: Vec<MeasurementView> = Vec::new();
    let mut times: Vec<Vec<u64>> = Vec::new();
    let mut by_label: BTreeMap<&str, usize> = BTreeMap::new();
    for step in &stream.steps {
        let Some(g) = stream.graphs.get(step.graph) else {
            continue;
        };
        for (i, d) in g.dispatches().enumerate() {
            let row = *by_label.entry(d.label.as_str()).or_insert_with(|| {
                rows.push(MeasurementView {
                    label: d.label.clone(),
                    op: d.op.clone(),
                    pipeline: c
                        .pipelines
                        .get(d.pipeline)
                        .map(|p| p.name.clone())
                        .unwrap_or_default(),
                    dispatches: 0,
                    duration: None,
                    output_bytes: output_bytes(c, d.pipeline, d.bind_group),
                    workgroups: d.workgroups,
                });
                times.push(Vec::new());
                rows.len() - 1
            });
            rows[row].dispatches += 1;
            if let Some(ns) = step
                .measured
                .as_ref()
                .and_then(|m| m.dispatches.get(i))
                .and_then(|m| m.valid_gpu_ns())
            {
                times[row].push(ns);
            }
        }
    }
    for (r, t) in rows.iter_mut().zip(&times) {
        r.duration = DurationStats::of(t);
    }
    rows
}

/// Bytes of the bindings the pipeline's layout declares read-write.
pub fn output_bytes(c: &Commands, pipeline: usize, bind_group: usize) -> u64 {
    let (Some(p), Some(bg)) = (c.pipelines.get(pipeline), c.bind_groups.get(bind_group)) else {
        return 0;
    };
    let Some(layout) = c.layouts.get(p.layout) else {
        return 0;
    };
    layout
        .entries
        .iter()
        .filter(|e| e.access == Access::ReadWrite)
        .filter_map(|e| bg.entries.get(e.binding as usize))
        .map(|e| e.size)
        .sum()
}

/// One row of `<name>_shaders.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShaderView {
    pub shader: String,
    pub entry_points: Vec<String>,
    /// Ids (into `_used_consts.json`) of the constant sets pipelines built it with.
    pub constant_sets: Vec<usize>,
    pub constants: Vec<BTreeMap<String, f64>>,
    pub pipelines: usize,
}

pub fn shaders(c: &Commands) -> Vec<ShaderView> {
    c.shaders
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut sets: Vec<usize> = c
                .pipelines
                .iter()
                .filter(|p| p.shader == i)
                .map(|p| p.constants)
                .collect();
            sets.sort_unstable();
            sets.dedup();
            ShaderView {
                shader: s.name.clone(),
                entry_points: s.entry_points.clone(),
                constants: sets
                    .iter()
                    .filter_map(|&k| c.constant_sets.get(k))
                    .map(|k| k.values.iter().cloned().collect())
                    .collect(),
                constant_sets: sets,
                pipelines: c.pipelines.iter().filter(|p| p.shader == i).count(),
            }
        })
        .collect()
}

pub fn used_consts(c: &Commands) -> BTreeMap<usize, BTreeMap<String, f64>> {
    c.constant_sets
        .iter()
        .enumerate()
        .map(|(i, s)| (i, s.values.iter().cloned().collect()))
        .collect()
}

/// One row of `<name>_used_pipelines.json`: a unique command.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsedPipeline {
    pub pipeline: String,
    pub shader: String,
    pub entry: String,
    pub consts: usize,
    pub bind_group: usize,
    pub workgroups: [u32; 3],
    pub count: u64,
    /// The first label that ran it (`L0.attn_qkv`).
    pub label: String,
    pub bindings: Vec<BindingView>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BindingView {
    pub binding: u32,
    pub buffer: u64,
    pub label: String,
    pub offset: u64,
    pub size: u64,
    pub access: Option<Access>,
}

pub fn used_pipelines(c: &Commands, stream: &Stream) -> Vec<UsedPipeline> {
    stream
        .command_counts()
        .into_iter()
        .filter_map(|((p, bg, wg), count, d)| {
            let pipe = c.pipelines.get(p)?;
            let group = c.bind_groups.get(bg)?;
            let layout = c.layouts.get(pipe.layout)?;
            Some(UsedPipeline {
                pipeline: pipe.name.clone(),
                shader: c.shaders.get(pipe.shader)?.name.clone(),
                entry: pipe.entry.clone(),
                consts: pipe.constants,
                bind_group: bg,
                workgroups: wg,
                count,
                label: d.label.clone(),
                bindings: group
                    .entries
                    .iter()
                    .map(|e| BindingView {
                        binding: e.binding,
                        buffer: e.buffer,
                        label: e.label.clone(),
                        offset: e.offset,
                        size: e.size,
                        access: layout
                            .entries
                            .iter()
                            .find(|l| l.binding == e.binding)
                            .map(|l| l.access),
                    })
                    .collect(),
            })
        })
        .collect()
}
