//! Running steps with a readback after every dispatch: how captured outputs are made
//! and how a replay checks them.
//!
//! Buffers are first set to captured contents; then every step's uploads are written
//! and its graph run. Steps before `range` run whole (one submit each, no wait); steps
//! in `range` run each dispatch in a pass of its own followed by copies of its
//! read-write bindings, one submit and one readback per step. Splitting passes changes
//! no result: wgpu orders dispatches of one queue the same within and across passes.
//! This is slow by design and never part of a timed run.

use std::ops::Range;

use crate::device::{AtomicCounters, Gpu};
use crate::dispatch::Graph;
use crate::error::GpuError;
use crate::resources::GpuBuffer;

/// Per step in `range`: per dispatch of its graph, `(binding, bytes)` of each
/// read-write binding after the dispatch.
pub type StepOutputsBytes = Vec<Vec<(u32, Vec<u8>)>>;

/// Runs steps `0..range.end` (see the module doc). `graphs[i]`, `written[i]` (the
/// read-write binding indices of each dispatch) and `uploads[i]` describe step i;
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
    for (buf, bytes) in contents {
        gpu.write_buffer(&buf.whole(), 0, bytes);
    }
    let mut out = Vec::new();
    for step in 0..range.end {
        for (buf, offset, data) in &uploads[step] {
            gpu.write_buffer(&buf.whole(), *offset, data);
        }
        let graph = graphs[step];
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        if step < range.start {
            for section in &graph.sections {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                for d in &section.dispatches {
                    pass.set_pipeline(d.pipeline.raw());
                    pass.set_bind_group(0, d.bind_group.raw(), &[]);
                    pass.dispatch_workgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
                }
                AtomicCounters::add(&gpu.counters.passes, 1);
            }
            AtomicCounters::add(&gpu.counters.dispatches, graph.dispatch_count() as u64);
            gpu.queue.submit([encoder.finish()]);
            AtomicCounters::add(&gpu.counters.submits, 1);
            continue;
        }
        // Where each output lands in the staging buffer.
        let mut places: Vec<Vec<(u32, u64, u64)>> = Vec::new();
        let mut size = 0u64;
        for (i, d) in graph.dispatches().enumerate() {
            let mut list = Vec::new();
            for &b in &written[step][i] {
                let Some(buf) = d.bind_group.bindings().get(b as usize) else {
                    return Err(GpuError::Invalid(format!(
                        "dispatch {} has no binding {b}",
                        d.label
                    )));
                };
                list.push((b, size, buf.size()));
                size += buf.size().div_ceil(4) * 4;
            }
            places.push(list);
        }
        let staging = gpu.staging_buffer(size.max(4));
        for (d, list) in graph.dispatches().zip(&places) {
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                pass.set_pipeline(d.pipeline.raw());
                pass.set_bind_group(0, d.bind_group.raw(), &[]);
                pass.dispatch_workgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
            }
            AtomicCounters::add(&gpu.counters.passes, 1);
            for &(b, at, len) in list {
                let buf = &d.bind_group.bindings()[b as usize];
                encoder.copy_buffer_to_buffer(&buf.buffer, buf.offset(), &staging, at, len);
            }
        }
        AtomicCounters::add(&gpu.counters.dispatches, graph.dispatch_count() as u64);
        gpu.queue.submit([encoder.finish()]);
        AtomicCounters::add(&gpu.counters.submits, 1);
        let bytes = gpu.map_read(&staging, size.max(4), "dispatch outputs");
        gpu.staging.give(staging);
        let bytes = bytes?;
        let step_out = places
            .iter()
            .map(|list| {
                list.iter()
                    .map(|&(b, at, len)| (b, bytes[at as usize..(at + len) as usize].to_vec()))
                    .collect()
            })
            .collect();
        out.push((step, step_out));
    }
    gpu.wait_idle()?;
    Ok(out)
}
