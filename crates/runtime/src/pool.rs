//! A pool of readback (staging) buffers, reused by size.
//!
//! Readbacks outside the decode loop (`Gpu::read_buffer` in tests and tools, step
//! runners rebuilt when the timing mode changes, replays) would otherwise create a
//! mapped buffer each time; the pool hands back one of the same size instead, and only
//! new buffers count as created. Storage buffers are not pooled: the decoder creates all
//! of them once, at setup.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub(crate) struct StagingPool {
    free: Mutex<HashMap<u64, Vec<wgpu::Buffer>>>,
}

impl StagingPool {
    /// A free staging buffer of exactly `size` bytes, or `None` (the caller creates one).
    pub(crate) fn take(&self, size: u64) -> Option<wgpu::Buffer> {
        self.free.lock().unwrap().get_mut(&size).and_then(Vec::pop)
    }

    /// Returns an unmapped staging buffer for reuse.
    pub(crate) fn give(&self, buffer: wgpu::Buffer) {
        self.free
            .lock()
            .unwrap()
            .entry(buffer.size())
            .or_default()
            .push(buffer);
    }

    pub(crate) fn free_count(&self) -> usize {
        self.free.lock().unwrap().values().map(Vec::len).sum()
    }
}

/// Shared handle: step runners keep one to give their buffers back when dropped.
pub(crate) type SharedPool = Arc<StagingPool>;
