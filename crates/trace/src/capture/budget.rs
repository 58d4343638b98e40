//! What replaying a capture will ask of a device and of memory, checked before anything
//! is allocated: a capture is input like any other file, and its numbers (buffer sizes,
//! workgroup counts, dispatches per step) are claims until checked.
//!
//! [`check_budget`] compares every buffer, binding and dispatch with the device's
//! limits, and the memory a replay holds at once with a budget (`replay --max-memory`):
//!
//! - on the device: every buffer, plus the readback ranges (copied to staging buffers);
//! - in host memory: every step's uploads (read before the first step), the largest blob
//!   file (blobs are read whole, one at a time), and when comparing outputs, every
//!   read-write binding of every dispatch of the steps compared (read back per dispatch).
//!
//! The first number over its limit is refused, named with the limit (and the option
//! that moves it, for the budget).

use crate::capture::model::Capture;
use crate::capture::Access;

/// wgpu's limit on queries in one query set: the timestamps one step may take.
pub const MAX_TIMESTAMPS_PER_STEP: u64 = 4096;

/// The device's limits and the memory budget a replay must fit.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayLimits {
    pub max_buffer_size: u64,
    pub max_storage_buffer_binding_size: u64,
    pub min_storage_buffer_offset_alignment: u64,
    pub max_compute_workgroups_per_dimension: u64,
    /// Timestamps per step the timing mode takes: `Some(per_pass, per_dispatch)` (pass
    /// timing: 2 per pass; dispatch timing: 1 per pass and 1 per dispatch), `None` when
    /// timing is off.
    pub timestamps: Option<(u64, u64)>,
    /// `--max-memory`, bytes.
    pub max_memory: u64,
}

/// What a replay will hold, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ReplayMemory {
    pub buffers: u64,
    pub readbacks: u64,
    pub uploads: u64,
    pub largest_blob: u64,
    /// Dispatch outputs read back when comparing (0 otherwise).
    pub outputs: u64,
}

impl ReplayMemory {
    pub fn total(&self) -> u64 {
        self.buffers
            .saturating_add(self.readbacks)
            .saturating_add(self.uploads)
            .saturating_add(self.largest_blob)
            .saturating_add(self.outputs)
    }
}

/// A capture asks more than the device or the budget allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}; nothing was allocated")]
pub struct OverBudget {
    pub what: String,
    /// A device limit (another device may take it) rather than `--max-memory`.
    pub device_limit: bool,
}

/// Checks a capture against `limits` before a replay allocates anything (see the module
/// doc); `comparing` when the recorded outputs will be compared. Returns the memory the
/// replay will hold.
pub fn check_budget(
    capture: &Capture,
    limits: &ReplayLimits,
    comparing: bool,
) -> Result<ReplayMemory, OverBudget> {
    let over = |what: String| {
        Err(OverBudget {
            what,
            device_limit: true,
        })
    };
    let c = &capture.commands;
    let mut memory = ReplayMemory::default();
    for b in &c.buffers {
        if b.size > limits.max_buffer_size {
            return over(format!(
                "buffer {} \"{}\" is {} bytes, more than this device's max_buffer_size ({})",
                b.id, b.label, b.size, limits.max_buffer_size
            ));
        }
        memory.buffers = memory.buffers.saturating_add(b.size);
    }
    for (i, g) in c.bind_groups.iter().enumerate() {
        for e in &g.entries {
            if e.size > limits.max_storage_buffer_binding_size {
                return over(format!(
                    "bind group {i} binding {} \"{}\" is {} bytes, more than this device's max_storage_buffer_binding_size ({})",
                    e.binding, e.label, e.size, limits.max_storage_buffer_binding_size
                ));
            }
            if e.offset % limits.min_storage_buffer_offset_alignment.max(1) != 0 {
                return over(format!(
                    "bind group {i} binding {} \"{}\" starts at byte {}, not a multiple of this device's min_storage_buffer_offset_alignment ({})",
                    e.binding, e.label, e.offset, limits.min_storage_buffer_offset_alignment
                ));
            }
        }
    }
    for (gi, graph) in capture.stream.graphs.iter().enumerate() {
        for (di, d) in graph.dispatches().enumerate() {
            if let Some(&n) = d
                .workgroups
                .iter()
                .find(|&&n| u64::from(n) > limits.max_compute_workgroups_per_dimension)
            {
                return over(format!(
                    "graph {gi} dispatch {di} ({}) asks for {n} workgroups in one dimension ({:?}), more than this device's max_compute_workgroups_per_dimension ({})",
                    d.label, d.workgroups, limits.max_compute_workgroups_per_dimension
                ));
            }
        }
        if let Some((per_pass, per_dispatch)) = limits.timestamps {
            let needed = (graph.passes.len() as u64)
                .saturating_mul(per_pass)
                .saturating_add((graph.dispatch_count() as u64).saturating_mul(per_dispatch));
            if needed > MAX_TIMESTAMPS_PER_STEP {
                return over(format!(
                    "graph {gi} ({} dispatches in {} passes) needs {needed} timestamps per step, more than wgpu's {MAX_TIMESTAMPS_PER_STEP}: replay with --timing pass or off",
                    graph.dispatch_count(),
                    graph.passes.len()
                ));
            }
        }
    }
    memory.readbacks = capture
        .stream
        .readbacks
        .iter()
        .fold(0u64, |s, r| s.saturating_add(r.size));
    memory.uploads = capture
        .stream
        .steps
        .iter()
        .flat_map(|s| &s.uploads)
        .fold(0u64, |s, u| s.saturating_add(u.data.len));
    memory.largest_blob = capture
        .manifest
        .files
        .iter()
        .filter(|f| f.role == "blob")
        .map(|f| f.bytes)
        .max()
        .unwrap_or(0);
    if comparing {
        memory.outputs = compared_output_bytes(capture);
    }
    let total = memory.total();
    if total > limits.max_memory {
        return Err(OverBudget {
            device_limit: false,
            what: format!(
            "replaying needs about {total} bytes ({} of buffers, {} of readbacks, {} of uploads, {} for the largest blob, {} of outputs to compare), more than --max-memory {}: raise --max-memory if the machine has the memory",
            memory.buffers, memory.readbacks, memory.uploads, memory.largest_blob, memory.outputs, limits.max_memory
        ),
        });
    }
    Ok(memory)
}

/// Bytes read back when comparing outputs: every read-write binding of every dispatch
/// of the steps from the first compared one to the last (as the comparison walks them).
fn compared_output_bytes(capture: &Capture) -> u64 {
    let Some(data) = &capture.data else { return 0 };
    let steps = data.outputs.iter().map(|o| o.step);
    let (Some(first), Some(last)) = (steps.clone().min(), steps.max()) else {
        return 0;
    };
    let c = &capture.commands;
    let mut total = 0u64;
    for step in capture.stream.steps.iter().take(last + 1).skip(first) {
        let Some(graph) = capture.stream.graphs.get(step.graph) else {
            continue;
        };
        for d in graph.dispatches() {
            let (Some(p), Some(g)) = (c.pipelines.get(d.pipeline), c.bind_groups.get(d.bind_group))
            else {
                continue;
            };
            let Some(layout) = c.layouts.get(p.layout) else {
                continue;
            };
            for e in &layout.entries {
                if e.access == Access::ReadWrite {
                    let size = g.entries.get(e.binding as usize).map_or(0, |b| b.size);
                    total = total.saturating_add(size);
                }
            }
        }
    }
    total
}
