//! Running recorded steps again with a readback after every dispatch: how captured
//! outputs are made and how a replay checks them.
//!
//! Buffers are first set to captured contents; then every step's uploads are written
//! and its dispatches run. Steps before `range` run whole (one submit each, no wait);
//! steps in `range` run each dispatch in a pass of its own followed by copies of its
//! read-write bindings, one submit and one readback per step. Splitting passes changes
//! no result: wgpu orders dispatches of one queue the same within and across passes.
//! This is slow by design, uses plain wgpu (it is a tool, not the program's work), and
//! is never part of a timed run.

use std::ops::Range;

use crate::error::RecorderError;

/// One dispatch to run again.
pub struct WalkDispatch<'a> {
    pub pipeline: &'a wgpu::ComputePipeline,
    /// Bind group per group index.
    pub bind_groups: Vec<(u32, &'a wgpu::BindGroup)>,
    pub workgroups: [u32; 3],
    /// `(binding, buffer, offset, size)` of each read-write binding: what the dispatch
    /// may have written.
    pub written: Vec<(u32, &'a wgpu::Buffer, u64, u64)>,
}

/// Per step in `range`: per dispatch, `(binding, bytes)` of each read-write binding
/// after the dispatch.
pub type StepOutputsBytes = Vec<Vec<(u32, Vec<u8>)>>;

/// Runs steps `0..range.end` (see the module doc). `uploads[i]` are step i's
/// `(buffer, offset, bytes)` writes; `contents` the buffers' contents before step 0.
pub fn walk(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    steps: &[Vec<WalkDispatch>],
    contents: &[(&wgpu::Buffer, &[u8])],
    uploads: &[Vec<(&wgpu::Buffer, u64, &[u8])>],
    range: Range<usize>,
) -> Result<Vec<(usize, StepOutputsBytes)>, RecorderError> {
    if range.end > steps.len() || range.end > uploads.len() {
        return Err(RecorderError::Capture(format!(
            "steps {range:?} asked of {} steps",
            uploads.len().min(steps.len())
        )));
    }
    for (buf, bytes) in contents {
        queue.write_buffer(buf, 0, bytes);
    }
    let mut out = Vec::new();
    for step in 0..range.end {
        for (buf, offset, data) in &uploads[step] {
            queue.write_buffer(buf, *offset, data);
        }
        let mut encoder = device.create_command_encoder(&Default::default());
        let dispatch = |pass: &mut wgpu::ComputePass, d: &WalkDispatch| {
            pass.set_pipeline(d.pipeline);
            for (g, bg) in &d.bind_groups {
                pass.set_bind_group(*g, *bg, &[]);
            }
            pass.dispatch_workgroups(d.workgroups[0], d.workgroups[1], d.workgroups[2]);
        };
        if step < range.start {
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                for d in &steps[step] {
                    dispatch(&mut pass, d);
                }
            }
            queue.submit([encoder.finish()]);
            continue;
        }
        // Where each output lands in the staging buffer.
        let mut places: Vec<Vec<(u32, u64, u64)>> = Vec::new();
        let mut size = 0u64;
        for d in &steps[step] {
            let mut list = Vec::new();
            for &(b, _, _, len) in &d.written {
                list.push((b, size, len));
                size += len.div_ceil(4) * 4;
            }
            places.push(list);
        }
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpuscope.walk"),
            size: size.max(4),
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        for (d, list) in steps[step].iter().zip(&places) {
            {
                let mut pass = encoder.begin_compute_pass(&Default::default());
                dispatch(&mut pass, d);
            }
            for (&(_, buf, offset, len), &(_, at, _)) in d.written.iter().zip(list) {
                encoder.copy_buffer_to_buffer(buf, offset, &staging, at, len.div_ceil(4) * 4);
            }
        }
        queue.submit([encoder.finish()]);
        let bytes = map_read(device, &staging, size.max(4))?;
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
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| gpu_error("waiting for the walk", e))?;
    Ok(out)
}

fn gpu_error(what: &str, e: impl std::fmt::Display) -> RecorderError {
    RecorderError::Gpu {
        what: what.to_string(),
        message: e.to_string(),
    }
}

/// Maps a MAP_READ buffer, waits, and copies its first `size` bytes out.
pub(crate) fn map_read(
    device: &wgpu::Device,
    staging: &wgpu::Buffer,
    size: u64,
) -> Result<Vec<u8>, RecorderError> {
    let slice = staging.slice(..size);
    let (tx, rx) = std::sync::mpsc::channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    device
        .poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| gpu_error("reading a buffer back", e))?;
    match rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(gpu_error("mapping a readback", e)),
        Err(_) => {
            return Err(gpu_error(
                "mapping a readback",
                "the map callback never ran",
            ))
        }
    }
    let bytes = slice
        .get_mapped_range()
        .map_err(|e| gpu_error("mapping a readback", e))?
        .to_vec();
    staging.unmap();
    Ok(bytes)
}

/// Reads `size` bytes of `buffer` from `offset` (one submit, one wait).
pub(crate) fn read_back(
    device: &wgpu::Device,
    queue: &wgpu::Queue,
    buffer: &wgpu::Buffer,
    offset: u64,
    size: u64,
) -> Result<Vec<u8>, RecorderError> {
    let padded = size.div_ceil(4) * 4;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("gpuscope.capture_readback"),
        size: padded.max(4),
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    encoder.copy_buffer_to_buffer(buffer, offset, &staging, 0, padded);
    queue.submit([encoder.finish()]);
    let mut bytes = map_read(device, &staging, padded.max(4))?;
    bytes.truncate(size as usize);
    Ok(bytes)
}
