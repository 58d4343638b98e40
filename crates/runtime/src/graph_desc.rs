//! The plain-data description of a [`Graph`]'s bindings that profiles carry
//! ([`gpuscope_trace::GraphDesc`]): which buffer ranges each dispatch reads and writes,
//! for the fusion analysis. Built once per graph, not per token.

use std::collections::HashMap;

use gpuscope_trace::graph::{Binding, GraphBuffer, GraphDesc, GraphDispatch};

use crate::dispatch::Graph;
use crate::resources::BufferId;

/// Describes `graph`: its buffers (by id, labelled as first bound) and, per dispatch in
/// order, the ranges it binds, split by whether it writes them (a binding the
/// dispatch declares neither way counts as read).
pub fn graph_desc(graph: &Graph) -> GraphDesc {
    let mut index: HashMap<BufferId, u32> = HashMap::new();
    let mut desc = GraphDesc::default();
    for d in graph.dispatches() {
        let mut gd = GraphDispatch::default();
        for b in d.bind_group.bindings() {
            let buffer = *index.entry(b.id()).or_insert_with(|| {
                desc.buffers.push(GraphBuffer {
                    label: b.label().to_string(),
                    bytes: b.raw().size(),
                });
                desc.buffers.len() as u32 - 1
            });
            let binding = Binding {
                buffer,
                offset: b.offset(),
                bytes: b.size(),
            };
            if d.writes.contains(&b.id()) {
                gd.writes.push(binding);
                if d.reads.contains(&b.id()) {
                    gd.reads.push(binding);
                }
            } else {
                gd.reads.push(binding);
            }
        }
        desc.dispatches.push(gd);
    }
    desc
}
