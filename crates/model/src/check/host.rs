//! Host copies of a graph's buffers: what the reference path computes on, and the mirror
//! of the GPU's state (its contents before each dispatch, for local errors).
//!
//! Buffers no dispatch writes and no step uploads to (the weights) are read back once and
//! shared by every copy; the others are kept per copy as the GPU's bytes and, for an f64
//! reference, the wide values beside them (an f64 path must not round to f32 between ops).

use std::collections::{HashMap, HashSet};

use gpuscope_ops::exec::{BindingData, Output};
use gpuscope_ops::Real;
use gpuscope_runtime::{BufferId, Gpu, GpuBuffer, GpuError, Graph};

/// The initial contents of every buffer a graph binds, split into read-only and mutable.
pub(crate) struct Initial {
    pub(crate) shared: HashMap<BufferId, Vec<u8>>,
    pub(crate) mutable: HashMap<BufferId, Vec<u8>>,
}

impl Initial {
    /// Reads every buffer bound by `graph` back; `mutable` are the ids that dispatches
    /// write or steps upload to.
    pub(crate) fn read(
        gpu: &Gpu,
        graph: &Graph,
        mutable: &HashSet<BufferId>,
    ) -> Result<Initial, GpuError> {
        let mut init = Initial {
            shared: HashMap::new(),
            mutable: HashMap::new(),
        };
        for d in graph.dispatches() {
            for b in d.bind_group.bindings() {
                let id = b.id();
                if init.shared.contains_key(&id) || init.mutable.contains_key(&id) {
                    continue;
                }
                let bytes = gpu.read_buffer(&b.whole())?;
                if mutable.contains(&id) {
                    init.mutable.insert(id, bytes);
                } else {
                    init.shared.insert(id, bytes);
                }
            }
        }
        Ok(init)
    }
}

/// One copy of the buffers (see the module docs).
pub(crate) struct Store<'s, T> {
    shared: &'s HashMap<BufferId, Vec<u8>>,
    own: HashMap<BufferId, Vec<u8>>,
    wide: HashMap<BufferId, Vec<T>>,
}

fn range(b: &GpuBuffer) -> std::ops::Range<usize> {
    b.offset() as usize..(b.offset() + b.size()) as usize
}

fn words(b: &GpuBuffer) -> std::ops::Range<usize> {
    b.offset() as usize / 4..(b.offset() + b.size()) as usize / 4
}

impl<'s, T: Real> Store<'s, T> {
    pub(crate) fn new(init: &'s Initial) -> Store<'s, T> {
        Store {
            shared: &init.shared,
            own: init.mutable.clone(),
            wide: HashMap::new(),
        }
    }

    fn whole(&self, id: BufferId) -> &[u8] {
        self.own
            .get(&id)
            .or_else(|| self.shared.get(&id))
            .map_or(&[], |v| v.as_slice())
    }

    /// The bytes of a binding (a view's range of its buffer).
    pub(crate) fn bytes(&self, b: &GpuBuffer) -> &[u8] {
        let whole = self.whole(b.id());
        whole.get(range(b)).unwrap_or(&[])
    }

    /// The bytes of the binding's whole underlying buffer.
    pub(crate) fn whole_bytes(&self, b: &GpuBuffer) -> &[u8] {
        self.whole(b.id())
    }

    pub(crate) fn binding(&self, b: &GpuBuffer) -> BindingData<'_, T> {
        BindingData {
            bytes: self.bytes(b),
            wide: self.wide.get(&b.id()).and_then(|w| w.get(words(b))),
        }
    }

    fn own_mut(&mut self, b: &GpuBuffer) -> &mut Vec<u8> {
        let shared = self.shared;
        self.own
            .entry(b.id())
            .or_insert_with(|| shared.get(&b.id()).cloned().unwrap_or_default())
    }

    /// Writes `data` at byte `at` of the binding (GPU bytes: an upload or a readback).
    pub(crate) fn write_bytes(&mut self, b: &GpuBuffer, at: u64, data: &[u8]) {
        let start = (b.offset() + at) as usize;
        let own = self.own_mut(b);
        let end = (start + data.len()).min(own.len());
        if start >= end {
            return;
        }
        own[start..end].copy_from_slice(&data[..end - start]);
        if let Some(w) = self.wide.get_mut(&b.id()) {
            for (i, word) in data[..end - start].chunks_exact(4).enumerate() {
                w[start / 4 + i] = T::of(f32::from_le_bytes(word.try_into().unwrap()));
            }
        }
    }

    /// Applies what an executor wrote to binding `b`.
    pub(crate) fn write_output(&mut self, b: &GpuBuffer, out: &Output<T>) {
        match out {
            Output::Words(ws) => {
                let bytes: Vec<u8> = ws.iter().flat_map(|w| w.to_le_bytes()).collect();
                self.write_bytes(b, 0, &bytes);
            }
            Output::Floats(vs) => {
                let bytes: Vec<u8> = vs.iter().flat_map(|v| v.as_f32().to_le_bytes()).collect();
                self.write_bytes(b, 0, &bytes);
                if T::WIDER_THAN_F32 {
                    let own = &self.own[&b.id()];
                    let wide = self.wide.entry(b.id()).or_insert_with(|| {
                        own.chunks_exact(4)
                            .map(|w| T::of(f32::from_le_bytes(w.try_into().unwrap())))
                            .collect()
                    });
                    let at = b.offset() as usize / 4;
                    let n = vs.len().min(wide.len().saturating_sub(at));
                    wide[at..at + n].copy_from_slice(&vs[..n]);
                }
            }
        }
    }
}
