//! The memory view from buffer records.

use gpuscope_report::analysis::memory;
use gpuscope_report::render::render_text;
use gpuscope_trace::{BufferRecord, MemoryKind};

use gpuscope_trace::fixtures as fixture;

fn buffer(
    label: &str,
    kind: MemoryKind,
    bytes: u64,
    created: Option<u32>,
    dropped: Option<u32>,
) -> BufferRecord {
    BufferRecord {
        label: label.into(),
        kind,
        bytes,
        created_token: created,
        dropped_token: dropped,
    }
}

fn with_buffers() -> gpuscope_trace::Profile {
    let mut p = fixture::small();
    p.buffers = vec![
        buffer("weights", MemoryKind::Weights, 900_000, None, None),
        buffer("kv", MemoryKind::KvCache, 64_000, None, None),
        buffer("x", MemoryKind::Activations, 16_000, None, None),
        buffer("staging", MemoryKind::Staging, 4_000, None, None),
        buffer("queries", MemoryKind::Timestamps, 1_000, None, None),
        buffer("tmp", MemoryKind::Activations, 8_000, Some(1), Some(2)),
        buffer("tmp2", MemoryKind::Activations, 8_000, Some(2), None),
    ];
    p
}

#[test]
fn by_kind_totals_peak_limits_and_churn() {
    let m = memory(&with_buffers()).unwrap();
    assert_eq!(m.total.bytes, 1_001_000);
    assert_eq!(m.total.buffers, 7);
    let act = m.by_kind[&MemoryKind::Activations];
    assert_eq!((act.buffers, act.bytes), (3, 32_000));
    assert_eq!(m.by_kind[&MemoryKind::Timestamps].bytes, 1_000);
    // Setup 985 kB; token 1 adds tmp (993 kB); token 2 adds tmp2 while tmp is still
    // live (dropped during token 2): 1001 kB.
    assert_eq!((m.peak_bytes, m.peak_token), (1_001_000, Some(2)));
    let big = m.largest_buffer.as_ref().unwrap();
    assert_eq!(
        (big.label.as_str(), big.bytes, big.limit),
        ("weights", 900_000, 2 << 30)
    );
    // No recorded bindings: the largest storage buffer stands in.
    assert!(!m.binding_from_graph);
    assert_eq!(m.largest_binding.as_ref().unwrap().limit, 128 << 20);
    let c = &m.churn;
    assert_eq!(
        (c.created, c.created_bytes, c.dropped, c.dropped_bytes),
        (2, 16_000, 1, 8_000)
    );
    assert_eq!(c.tokens_with_creation, 2);
    assert_eq!(c.first, Some(("tmp".to_string(), 1)));
    let r = render_text(&with_buffers());
    assert!(
        r.contains("Memory: 1.00 MB in 7 buffers; peak 1.00 MB live (token 2)"),
        "{r}"
    );
    assert!(r.contains("by kind: weights 900.00 kB (1), kv_cache 64.00 kB (1), activations 32.00 kB (3), staging 4.00 kB (1), timestamps 1.00 kB (1)"), "{r}");
    assert!(r.contains("churn: 2 buffers (16.00 kB) created and 1 (8.00 kB) released after setup, in 2 of 3 tokens"), "{r}");
}

#[test]
fn a_run_without_buffer_records_says_so() {
    assert!(memory(&fixture::small()).is_none());
    assert!(render_text(&fixture::small()).contains("Memory: no buffer records in this profile"));
}
