//! Queue mirrors: uploads, copies, submits and polls, counted in the step they belong to.

use std::time::Instant;

use gpuscope_trace::capture::BufferRange;

use super::{field, Recorder};
use crate::step::{StepId, UploadRec};

impl Recorder {
    /// `queue.write_buffer`, counted as bytes uploaded (and kept while capturing).
    pub fn write_buffer(&self, buffer: &wgpu::Buffer, offset: u64, data: &[u8]) {
        let start = Instant::now();
        self.shared.queue.write_buffer(buffer, offset, data);
        let end = Instant::now();
        let mut st = self.state();
        self.count(&mut st, field::UPLOADED, data.len() as u64);
        let capturing = st.capturing.is_some();
        let id = if capturing {
            st.registry.buffer(buffer).map(|b| b.id)
        } else {
            None
        };
        if st.open {
            let s = st.live.back_mut().expect("an open step is live");
            s.cpu.upload_ns += (end - start).as_nanos() as u64;
            if let Some(buffer) = id {
                s.uploads.push(UploadRec {
                    buffer,
                    offset,
                    data: data.to_vec(),
                });
            }
            let step = s.id;
            self.push_span(&mut st, "upload", start, end, Some(step), None);
        }
    }

    /// `encoder.copy_buffer_to_buffer`; a copy into a mappable buffer counts as bytes
    /// downloaded (the program's readback).
    pub fn copy_buffer_to_buffer(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        source: &wgpu::Buffer,
        source_offset: u64,
        destination: &wgpu::Buffer,
        destination_offset: u64,
        size: u64,
    ) {
        encoder.copy_buffer_to_buffer(source, source_offset, destination, destination_offset, size);
        if destination.usage().contains(wgpu::BufferUsages::MAP_READ) {
            let mut st = self.state();
            self.count(&mut st, field::DOWNLOADED, size);
            let src = st.registry.buffer(source).map(|b| b.id);
            if let (true, Some(src)) = (st.open, src) {
                st.live
                    .back_mut()
                    .expect("an open step is live")
                    .readbacks
                    .push(BufferRange {
                        buffer: src,
                        offset: source_offset,
                        size,
                    });
            }
        }
    }

    /// `queue.submit`. Timestamps written since the last resolve are resolved in a
    /// command buffer appended to the same submission (no extra submit); a program that
    /// calls [`Recorder::resolve_timestamps`] on its own encoder first saves even that.
    pub fn submit<I: IntoIterator<Item = wgpu::CommandBuffer>>(
        &self,
        command_buffers: I,
    ) -> wgpu::SubmissionIndex {
        let mut buffers: Vec<wgpu::CommandBuffer> = command_buffers.into_iter().collect();
        let start = Instant::now();
        {
            let mut st = self.state();
            if st.open && st.has_unresolved() {
                let mut encoder =
                    self.shared
                        .device
                        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                            label: Some("gpuscope.resolve"),
                        });
                self.resolve_open(&mut st, &mut encoder);
                buffers.push(encoder.finish());
            }
            let passes_since = std::mem::take(&mut st.passes_since_submit);
            if passes_since == 0 && !buffers.is_empty() {
                // Nothing instrumented was encoded since the last submit: whatever these
                // command buffers hold went past the recorder.
                st.instrumentation.uninstrumented_command_buffers += 1;
            }
        }
        let index = self.shared.queue.submit(buffers);
        let end = Instant::now();
        let mut st = self.state();
        self.count(&mut st, field::SUBMITS, 1);
        if st.open {
            let s = st.live.back_mut().expect("an open step is live");
            s.first_submit.get_or_insert(start);
            s.cpu.submit_ns += (end - start).as_nanos() as u64;
            let id = s.id;
            self.push_span(&mut st, "submit", start, end, Some(id), None);
        }
        index
    }

    /// `device.poll`. A blocking poll counts one sync, in the open step, else in the
    /// step ended last (a program polls after ending a step for its results), else in
    /// setup. A pipelined program that waits for an older step says which with
    /// [`Recorder::poll_for`]. Finished readbacks of timestamps are collected on the way.
    pub fn poll(&self, poll_type: wgpu::PollType) -> Result<wgpu::PollStatus, wgpu::PollError> {
        self.poll_attributed(poll_type, None)
    }

    /// [`Recorder::poll`], counting the wait in `step`.
    pub fn poll_for(
        &self,
        step: StepId,
        poll_type: wgpu::PollType,
    ) -> Result<wgpu::PollStatus, wgpu::PollError> {
        self.poll_attributed(poll_type, Some(step.0))
    }

    fn poll_attributed(
        &self,
        poll_type: wgpu::PollType,
        step: Option<u32>,
    ) -> Result<wgpu::PollStatus, wgpu::PollError> {
        let blocking = matches!(poll_type, wgpu::PollType::Wait { .. });
        let start = Instant::now();
        let status = self.shared.device.poll(poll_type);
        let end = Instant::now();
        let mut st = self.state();
        if blocking {
            self.shared.totals.add(field::SYNCS, 1);
            let target = match step {
                Some(id) => st.live.iter().position(|s| s.id == id),
                None if st.open => Some(st.live.len() - 1),
                None => st.live.iter().rposition(|s| s.ended.is_some()),
            };
            if let Some(i) = target {
                let s = &mut st.live[i];
                s.counters.syncs += 1;
                s.cpu.wait_ns += (end - start).as_nanos() as u64;
                let id = s.id;
                self.push_span(&mut st, "wait", start, end, Some(id), None);
            }
        }
        self.collect_ticks(&mut st, false);
        status
    }
}
