//! GPU memory: what the run's buffers hold, by kind, at the peak, against the device's
//! limits, and what the decode loop allocates per token (the seeds' "Allocations"
//! view), from `Profile::buffers`.
//!
//! Live bytes change only when a buffer is created or dropped: setup buffers
//! (`created_token` = `None`) are live from the start; a buffer created during token
//! `t` is live from `t`, one dropped during token `u` is live through `u` (the peak
//! counts both at once, as the allocator had to). Churn is creation and release after
//! setup, per token.

use std::collections::BTreeMap;

use gpuscope_trace::{MemoryKind, Profile};

/// Buffers of one kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct KindTotal {
    pub buffers: u64,
    pub bytes: u64,
}

/// The largest of something, by label.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Largest {
    pub label: String,
    pub bytes: u64,
    /// The device limit it is held against.
    pub limit: u64,
}

impl Largest {
    pub fn percent_of_limit(&self) -> Option<f64> {
        (self.limit > 0).then(|| self.bytes as f64 / self.limit as f64 * 100.0)
    }
}

/// Allocation in the decode loop.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Churn {
    /// Buffers created after setup, and their bytes.
    pub created: u64,
    pub created_bytes: u64,
    /// Buffers dropped before the end of the run, and their bytes.
    pub dropped: u64,
    pub dropped_bytes: u64,
    /// Tokens during which anything was created.
    pub tokens_with_creation: u64,
    /// The label of the first buffer created after setup, and the token.
    pub first: Option<(String, u32)>,
    /// Buffers created after setup per recorded token.
    pub created_per_token: f64,
}

/// The memory view.
#[derive(Debug, Clone, PartialEq)]
pub struct Memory {
    /// By kind, in [`MemoryKind`] order; kinds without buffers are absent.
    pub by_kind: BTreeMap<MemoryKind, KindTotal>,
    pub total: KindTotal,
    /// The most bytes live at once, and the token it happened (`None`: during setup).
    pub peak_bytes: u64,
    pub peak_token: Option<u32>,
    /// Largest buffer vs `max_buffer_size`.
    pub largest_buffer: Option<Largest>,
    /// Largest binding (from the graph's bindings; else the largest storage buffer)
    /// vs `max_storage_buffer_binding_size`.
    pub largest_binding: Option<Largest>,
    /// Whether `largest_binding` came from recorded bindings (else a buffer stands in).
    pub binding_from_graph: bool,
    pub churn: Churn,
    /// Tokens in the run (per-token churn divides by this).
    pub tokens: usize,
}

/// Computes the memory view; `None` when the profile records no buffers.
pub fn memory(p: &Profile) -> Option<Memory> {
    if p.buffers.is_empty() {
        return None;
    }
    let mut by_kind: BTreeMap<MemoryKind, KindTotal> = BTreeMap::new();
    let mut total = KindTotal::default();
    let mut churn = Churn::default();
    // (token, +bytes or -bytes); setup creations are at "token -1".
    let mut events: Vec<(i64, i64)> = Vec::with_capacity(2 * p.buffers.len());
    let mut creation_tokens = std::collections::BTreeSet::new();
    for b in &p.buffers {
        let k = by_kind.entry(b.kind).or_default();
        k.buffers += 1;
        k.bytes = k.bytes.saturating_add(b.bytes);
        total.buffers += 1;
        total.bytes = total.bytes.saturating_add(b.bytes);
        let created = b.created_token.map_or(-1, |t| t as i64);
        events.push((created, b.bytes as i64));
        if let Some(t) = b.created_token {
            churn.created += 1;
            churn.created_bytes = churn.created_bytes.saturating_add(b.bytes);
            creation_tokens.insert(t);
            if churn.first.as_ref().is_none_or(|(_, f)| t < *f) {
                churn.first = Some((b.label.clone(), t));
            }
        }
        if let Some(t) = b.dropped_token {
            churn.dropped += 1;
            churn.dropped_bytes = churn.dropped_bytes.saturating_add(b.bytes);
            // Released after the token it was dropped in: it counts in that token's peak.
            events.push((t as i64 + 1, -(b.bytes as i64)));
        }
    }
    churn.tokens_with_creation = creation_tokens.len() as u64;
    churn.created_per_token = churn.created as f64 / p.tokens.len().max(1) as f64;
    // The level is read once per token, after all of its changes: a buffer released at
    // the start of token t (dropped during t - 1) and one created during t never
    // overlap, while one dropped during t still counts in t.
    events.sort_unstable();
    let (mut live, mut peak_bytes, mut peak_token) = (0i64, 0i64, None);
    let mut i = 0;
    while i < events.len() {
        let token = events[i].0;
        while i < events.len() && events[i].0 == token {
            live += events[i].1;
            i += 1;
        }
        if live > peak_bytes {
            peak_bytes = live;
            peak_token = (token >= 0).then_some(token as u32);
        }
    }
    let largest_buffer = p.buffers.iter().max_by_key(|b| b.bytes).map(|b| Largest {
        label: b.label.clone(),
        bytes: b.bytes,
        limit: p.adapter.max_buffer_size,
    });
    let binding_from_graph = p.graph.as_ref().and_then(|g| g.largest_binding()).is_some();
    let largest_binding = match p.graph.as_ref().and_then(|g| g.largest_binding()) {
        Some((label, bytes)) => Some(Largest {
            label: label.to_string(),
            bytes,
            limit: p.adapter.max_storage_buffer_binding_size,
        }),
        None => p
            .buffers
            .iter()
            .filter(|b| b.kind != MemoryKind::Staging && b.kind != MemoryKind::Timestamps)
            .max_by_key(|b| b.bytes)
            .map(|b| Largest {
                label: b.label.clone(),
                bytes: b.bytes,
                limit: p.adapter.max_storage_buffer_binding_size,
            }),
    };
    Some(Memory {
        by_kind,
        total,
        peak_bytes: peak_bytes.max(0) as u64,
        peak_token,
        largest_buffer,
        largest_binding,
        binding_from_graph,
        churn,
        tokens: p.tokens.len(),
    })
}
