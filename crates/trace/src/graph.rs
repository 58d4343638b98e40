//! The token graph's buffer bindings, stored once per profile (format 1.3).
//!
//! Every token encodes the same graph, so which buffers dispatch `i` reads and writes
//! is a property of the graph, not of each event: storing it once keeps a profile of a
//! million dispatches small. [`GraphDesc::dispatches`]`[i]` describes the dispatch whose
//! [`crate::DispatchEvent::index`] is `i` in every token.

use serde::{Deserialize, Serialize};

/// The buffers of the graph and what each dispatch binds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphDesc {
    pub buffers: Vec<GraphBuffer>,
    pub dispatches: Vec<GraphDispatch>,
}

/// One GPU buffer the graph binds (views of it are [`Binding`] ranges).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphBuffer {
    pub label: String,
    pub bytes: u64,
}

/// A range of one buffer bound by a dispatch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// Index into [`GraphDesc::buffers`].
    pub buffer: u32,
    pub offset: u64,
    pub bytes: u64,
}

impl Binding {
    /// Whether two bindings touch a common byte.
    pub fn overlaps(&self, o: &Binding) -> bool {
        self.buffer == o.buffer
            && self.offset < o.offset + o.bytes
            && o.offset < self.offset + self.bytes
    }
}

/// What one dispatch of the graph reads and writes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphDispatch {
    pub reads: Vec<Binding>,
    pub writes: Vec<Binding>,
}

impl GraphDesc {
    /// The largest single binding, in bytes (against `max_storage_buffer_binding_size`).
    pub fn largest_binding(&self) -> Option<(&str, u64)> {
        self.dispatches
            .iter()
            .flat_map(|d| d.reads.iter().chain(&d.writes))
            .max_by_key(|b| b.bytes)
            .map(|b| (self.label(b.buffer), b.bytes))
    }

    /// A buffer's label, or `?` for an index out of range (a malformed file).
    pub fn label(&self, buffer: u32) -> &str {
        self.buffers
            .get(buffer as usize)
            .map_or("?", |b| b.label.as_str())
    }

    /// The first binding that names a buffer outside [`GraphDesc::buffers`], as
    /// `(dispatch index, buffer index)`.
    pub fn dangling_binding(&self) -> Option<(usize, u32)> {
        self.dispatches.iter().enumerate().find_map(|(i, d)| {
            d.reads
                .iter()
                .chain(&d.writes)
                .find(|b| b.buffer as usize >= self.buffers.len())
                .map(|b| (i, b.buffer))
        })
    }
}
