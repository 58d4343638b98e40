//! Timestamp slots: a query set, its resolve buffer and a staging buffer, one per step
//! in flight. A slot is taken when a step writes its first timestamp and given back once
//! the step's ticks are read, so steady state creates nothing; a program that keeps
//! more steps in flight than there are slots gets a new one (counted as the recorder's
//! own, never in the program's counters).

use crate::registry::Registry;

/// wgpu resolves queries into a buffer at offsets that are multiples of 256 bytes
/// (`QUERY_RESOLVE_BUFFER_ALIGNMENT`): a resolve starts on a multiple of 32 queries.
pub(crate) const RESOLVE_ALIGN_QUERIES: u32 = 32;

pub(crate) struct Slot {
    pub(crate) set: wgpu::QuerySet,
    pub(crate) capacity: u32,
    pub(crate) resolve: wgpu::Buffer,
    pub(crate) staging: wgpu::Buffer,
    pub(crate) busy: bool,
}

impl Slot {
    pub(crate) fn new(device: &wgpu::Device, registry: &mut Registry, capacity: u32) -> Slot {
        let capacity = capacity
            .clamp(RESOLVE_ALIGN_QUERIES, wgpu::QUERY_SET_MAX_QUERIES)
            .next_multiple_of(RESOLVE_ALIGN_QUERIES)
            .min(wgpu::QUERY_SET_MAX_QUERIES);
        let set = device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("gpuscope.timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: capacity,
        });
        let bytes = 8 * capacity as u64;
        let resolve = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpuscope.timestamp_resolve"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpuscope.timestamp_staging"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        use gpuscope_trace::MemoryKind;
        registry.add_buffer(
            &resolve,
            "gpuscope.timestamp_resolve",
            MemoryKind::Timestamps,
            None,
            true,
        );
        registry.add_buffer(
            &staging,
            "gpuscope.timestamp_staging",
            MemoryKind::Timestamps,
            None,
            true,
        );
        Slot {
            set,
            capacity,
            resolve,
            staging,
            busy: false,
        }
    }
}
