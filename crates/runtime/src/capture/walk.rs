//! Running a [`Graph`]'s steps with a readback after every dispatch (how a replay checks
//! captured outputs): [`gpuscope_record::walk`] over the graph's dispatches.

use std::ops::Range;

use gpuscope_record::walk::WalkDispatch;

use crate::device::{AtomicCounters, Gpu};
use crate::dispatch::Graph;
use crate::error::GpuError;
use crate::resources::GpuBuffer;

pub use gpuscope_record::walk::StepOutputsBytes;

/// Runs steps `0..range.end` (see [`gpuscope_record::walk`]). `graphs[i]`, `written[i]`
/// (the read-write binding indices of each dispatch) and `uploads[i]` describe step i;
/// upload offsets are from the start of the (whole) buffer given.
pub fn walk(
    gpu: &Gpu,
    graphs: &[&Graph],
    written: &[&[Vec<u32>]],
    contents: &[(GpuBuffer, &[u8])],
    uploads: &[Vec<(GpuBuffer, u64, &[u8])>],
    range: Range<usize>,
) -> Result<Vec<(usize, StepOutputsBytes)>, GpuError> {
    if range.end > graphs.len() || range.end > uploads.len() || range.end > written.len() {
        return Err(GpuError::Invalid(format!(
            "steps {range:?} asked of {} steps",
            uploads.len().min(graphs.len())
        )));
    }
    let mut steps = Vec::with_capacity(range.end);
    for (step, graph) in graphs[..range.end].iter().enumerate() {
        let mut list = Vec::with_capacity(graph.dispatch_count());
        for (i, d) in graph.dispatches().enumerate() {
            let mut out = Vec::new();
            for &b in written[step].get(i).map(Vec::as_slice).unwrap_or(&[]) {
                let Some(buf) = d.bind_group.bindings().get(b as usize) else {
                    return Err(GpuError::Invalid(format!(
                        "dispatch {} has no binding {b}",
                        d.label
                    )));
                };
                out.push((b, &buf.buffer, buf.offset(), buf.size()));
            }
            list.push(WalkDispatch {
                pipeline: d.pipeline.raw(),
                bind_groups: vec![(0, &d.bind_group.raw)],
                workgroups: d.workgroups,
                written: out,
            });
        }
        steps.push(list);
    }
    let contents: Vec<(&wgpu::Buffer, &[u8])> = contents
        .iter()
        .map(|(b, bytes)| (&b.buffer, *bytes))
        .collect();
    let uploads: Vec<Vec<(&wgpu::Buffer, u64, &[u8])>> = uploads[..range.end]
        .iter()
        .map(|u| u.iter().map(|(b, off, d)| (&b.buffer, *off, *d)).collect())
        .collect();
    let dispatches: usize = steps.iter().map(Vec::len).sum();
    let out =
        gpuscope_record::walk::walk(&gpu.device, &gpu.queue, &steps, &contents, &uploads, range)
            .map_err(|e| GpuError::Invalid(e.to_string()))?;
    // A tool's work with plain wgpu: counted in the device's tool counters.
    AtomicCounters::add(&gpu.counters.dispatches, dispatches as u64);
    Ok(out)
}
