//! Dispatch nodes and the per-token graph the runtime encodes.
//!
//! A model builds its [`Graph`] once; every token the runtime encodes the same nodes
//! again (wgpu command buffers cannot be replayed), which is what keeps steady-state
//! decoding free of resource creation.

use std::collections::HashSet;

use crate::resources::{BindGroup, BufferId, GpuBuffer, Pipeline};

/// The bytes a dispatch must move and the FLOPs it must do, as the op declares them.
pub use gpuscope_record::Cost;

/// One compute dispatch, ready to encode.
#[derive(Debug, Clone)]
pub struct Dispatch {
    /// Kernel family, e.g. `gemv_q4_1`.
    pub op: String,
    /// Op plus place, e.g. `L12.ffn_up`; the op name until [`Dispatch::labelled`].
    pub label: String,
    pub layer: Option<u32>,
    pub pipeline: Pipeline,
    pub bind_group: BindGroup,
    pub workgroups: [u32; 3],
    pub cost: Cost,
    pub reads: Vec<BufferId>,
    pub writes: Vec<BufferId>,
}

impl Dispatch {
    pub fn new(
        op: impl Into<String>,
        pipeline: Pipeline,
        bind_group: BindGroup,
        workgroups: [u32; 3],
        cost: Cost,
        reads: &[&GpuBuffer],
        writes: &[&GpuBuffer],
    ) -> Dispatch {
        let op = op.into();
        Dispatch {
            label: op.clone(),
            op,
            layer: None,
            pipeline,
            bind_group,
            workgroups,
            cost,
            reads: reads.iter().map(|b| b.id()).collect(),
            writes: writes.iter().map(|b| b.id()).collect(),
        }
    }

    /// Sets the label (`L3.attn_q`) and the layer it belongs to.
    pub fn labelled(mut self, label: impl Into<String>, layer: Option<u32>) -> Dispatch {
        self.label = label.into();
        self.layer = layer;
        self
    }
}

/// A run of dispatches encoded into one compute pass.
#[derive(Debug, Clone)]
pub struct Section {
    /// `embed`, `L0`, ..., `head`.
    pub name: String,
    pub layer: Option<u32>,
    pub dispatches: Vec<Dispatch>,
}

impl Section {
    pub fn new(name: impl Into<String>, layer: Option<u32>, dispatches: Vec<Dispatch>) -> Section {
        Section {
            name: name.into(),
            layer,
            dispatches,
        }
    }

    /// Dispatches of this pass that must wait for an earlier dispatch of the same pass:
    /// a read-after-write, write-after-write or write-after-read hazard on a buffer.
    ///
    /// Models a barrier placed just before each such dispatch: after a barrier, the
    /// hazard sets start again from the dispatch that needed it.
    pub fn barriers(&self) -> u64 {
        let mut written: HashSet<BufferId> = HashSet::new();
        let mut read: HashSet<BufferId> = HashSet::new();
        let mut barriers = 0;
        for d in &self.dispatches {
            let raw_or_waw = d.reads.iter().chain(&d.writes).any(|b| written.contains(b));
            let war = d.writes.iter().any(|b| read.contains(b));
            if raw_or_waw || war {
                barriers += 1;
                written.clear();
                read.clear();
            }
            written.extend(d.writes.iter().copied());
            read.extend(d.reads.iter().copied());
        }
        barriers
    }
}

/// Everything one token (or one replayed step) encodes: one compute pass per section.
#[derive(Debug, Clone, Default)]
pub struct Graph {
    pub sections: Vec<Section>,
}

impl Graph {
    pub fn dispatch_count(&self) -> usize {
        self.sections.iter().map(|s| s.dispatches.len()).sum()
    }

    pub fn barriers(&self) -> u64 {
        self.sections.iter().map(Section::barriers).sum()
    }

    pub fn dispatches(&self) -> impl Iterator<Item = &Dispatch> {
        self.sections.iter().flat_map(|s| s.dispatches.iter())
    }

    pub fn dispatches_mut(&mut self) -> impl Iterator<Item = &mut Dispatch> {
        self.sections
            .iter_mut()
            .flat_map(|s| s.dispatches.iter_mut())
    }
}

/// A workgroup grid for `n` workgroups that respects the 65535-per-dimension limit.
///
/// Kernels compute their linear id as `wg.x + wg.y * num_workgroups.x` and return early
/// when it is `>= n`.
pub fn grid_2d(n: u32) -> [u32; 3] {
    const MAX: u32 = 65535;
    if n <= MAX {
        [n.max(1), 1, 1]
    } else {
        let y = n.div_ceil(MAX);
        [n.div_ceil(y), y, 1]
    }
}
