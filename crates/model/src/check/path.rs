//! Running a decoder's graph on a GPU one step at a time with every dispatch's written
//! bindings read back ([`gpuscope_runtime::capture::walk`]), normally (one submit per step)
//! or serially (a submit and a wait after every dispatch).

use std::collections::HashMap;

use gpuscope_runtime::capture::walk::walk;
use gpuscope_runtime::capture::{reflect, ShaderInterface};
use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, Graph, Section};
use gpuscope_trace::capture::Access;

/// Per dispatch of a step: `(binding, bytes)` of each read-write binding after it ran.
pub(crate) type StepBytes = Vec<Vec<(u32, Vec<u8>)>>;

/// The read-write binding indices of every dispatch of `graph` (from the WGSL).
pub(crate) fn written_bindings(graph: &Graph) -> Result<Vec<Vec<u32>>, GpuError> {
    let mut cache: HashMap<&str, ShaderInterface> = HashMap::new();
    graph
        .dispatches()
        .map(|d| {
            let p = &d.pipeline;
            if !cache.contains_key(p.shader()) {
                let iface = reflect(p.wgsl()).map_err(|e| {
                    GpuError::Invalid(format!("shader {} does not parse: {e}", p.shader()))
                })?;
                cache.insert(p.shader(), iface);
            }
            Ok(cache[p.shader()]
                .bindings
                .iter()
                .filter(|(_, a)| **a == Access::ReadWrite)
                .map(|(b, _)| *b)
                .collect())
        })
        .collect()
}

/// A graph made of some dispatches of another, in one section.
pub(crate) fn sub_graph(dispatches: &[Dispatch]) -> Graph {
    Graph {
        sections: vec![Section::new("check", None, dispatches.to_vec())],
    }
}

/// One GPU path: a device, a graph and its written bindings.
pub(crate) struct GpuPath<'g> {
    pub(crate) gpu: &'g Gpu,
    pub(crate) dispatches: Vec<Dispatch>,
    pub(crate) written: Vec<Vec<u32>>,
    /// Submit and wait after every dispatch.
    pub(crate) serial: bool,
}

/// What happens between two dispatches of the tested path (after dispatch `i` ran and its
/// outputs were read): a planted fault changes them on the GPU.
pub(crate) type Between<'a> = &'a mut dyn FnMut(&Gpu, usize, &Dispatch, &mut Vec<(u32, Vec<u8>)>);

impl<'g> GpuPath<'g> {
    pub(crate) fn new(gpu: &'g Gpu, graph: &Graph, serial: bool) -> Result<GpuPath<'g>, GpuError> {
        Ok(GpuPath {
            gpu,
            dispatches: graph.dispatches().cloned().collect(),
            written: written_bindings(graph)?,
            serial,
        })
    }

    /// Runs one step: `uploads` first, then every dispatch; returns each one's outputs.
    /// `cut_after(i)` splits the submission after dispatch `i` so `between` can act on
    /// the GPU before anything reads its outputs. A GPU error names the dispatch range it
    /// happened in (one dispatch when serial).
    pub(crate) fn run_step(
        &self,
        uploads: &[(GpuBuffer, u64, Vec<u8>)],
        cut_after: &dyn Fn(usize) -> bool,
        between: Between,
    ) -> Result<StepBytes, (usize, GpuError)> {
        let n = self.dispatches.len();
        let mut out: StepBytes = Vec::with_capacity(n);
        let mut start = 0;
        while start < n {
            let mut end = start + 1;
            while !self.serial && end < n && !cut_after(end - 1) {
                end += 1;
            }
            let graph = sub_graph(&self.dispatches[start..end]);
            let ups: Vec<(GpuBuffer, u64, &[u8])> = if start == 0 {
                uploads
                    .iter()
                    .map(|(b, o, d)| (b.whole(), b.offset() + o, d.as_slice()))
                    .collect()
            } else {
                Vec::new()
            };
            let written: Vec<&[Vec<u32>]> = vec![&self.written[start..end]];
            let mut walked =
                walk(self.gpu, &[&graph], &written, &[], &[ups], 0..1).map_err(|e| (start, e))?;
            let (_, step) = walked.pop().expect("one step walked");
            for (k, mut outputs) in step.into_iter().enumerate() {
                let i = start + k;
                if i + 1 == end && cut_after(i) {
                    between(self.gpu, i, &self.dispatches[i], &mut outputs);
                }
                out.push(outputs);
            }
            start = end;
        }
        Ok(out)
    }

    /// Runs dispatch `i` alone after writing `inputs` (binding, bytes) into its bindings;
    /// returns its outputs. For the local error of a GPU reference.
    pub(crate) fn run_one(
        &self,
        i: usize,
        inputs: &[(u32, &[u8])],
    ) -> Result<Vec<(u32, Vec<u8>)>, GpuError> {
        let d = &self.dispatches[i];
        let ups: Vec<(GpuBuffer, u64, &[u8])> = inputs
            .iter()
            .filter_map(|(b, bytes)| {
                let buf = d.bind_group.bindings().get(*b as usize)?;
                // A binding of another size (another device's alignment) is left alone.
                (buf.size() == bytes.len() as u64).then(|| (buf.whole(), buf.offset(), *bytes))
            })
            .collect();
        let graph = sub_graph(std::slice::from_ref(d));
        let written: Vec<&[Vec<u32>]> = vec![std::slice::from_ref(&self.written[i])];
        let mut walked = walk(self.gpu, &[&graph], &written, &[], &[ups], 0..1)?;
        let (_, mut step) = walked.pop().expect("one step walked");
        Ok(step.pop().unwrap_or_default())
    }
}
