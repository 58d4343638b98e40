//! The checklist: each item on a fixture that trips it, with its evidence and next
//! command, and on one that does not.

use gpuscope_report::analysis::checklist::{fusion_candidates, is_elementwise};
use gpuscope_report::analysis::*;
use gpuscope_trace::graph::{Binding, GraphBuffer, GraphDesc, GraphDispatch};
use gpuscope_trace::{CpuSpan, Overhead, Profile, TimingMode};

use gpuscope_trace::fixtures as fixture;

fn item<'a>(a: &'a Analysis, id: &str) -> &'a Item {
    a.checklist.items.iter().find(|i| i.id == id).unwrap()
}

#[test]
fn every_item_is_there_in_order() {
    let a = analyze(&fixture::small_with_ceilings());
    let ids: Vec<&str> = a.checklist.items.iter().map(|i| i.id).collect();
    assert_eq!(
        ids,
        [
            "syncs",
            "created",
            "cpu_fallback",
            "fusion",
            "under_ceiling",
            "launch_bound",
            "timestamps",
            "overhead",
            "small_grids"
        ]
    );
}

#[test]
fn syncs_creation_and_overhead() {
    let mut p = fixture::small();
    p.tokens[2].counters.syncs = 3;
    p.tokens[1].counters.buffers_created = 1;
    p.overhead = Some(Overhead {
        mode: TimingMode::Dispatch,
        tok_per_s_profiled: 75.0,
        tok_per_s_off: 100.0,
        off_wall_ns: Vec::new(),
    });
    let a = analyze(&p);
    let s = item(&a, "syncs");
    assert_eq!(s.status, ItemStatus::Warn);
    assert!(
        s.summary
            .contains("1 of 3 tokens sync more than once (token 2 syncs 3 times)"),
        "{}",
        s.summary
    );
    assert!(s.next.as_ref().unwrap().contains("GPUSCOPE_LOG=info"));
    let c = item(&a, "created");
    assert_eq!(c.status, ItemStatus::Warn);
    assert!(c
        .summary
        .starts_with("1 resources created after the first token (first in token 1"));
    let o = item(&a, "overhead");
    assert_eq!(o.status, ItemStatus::Warn);
    assert!(o.summary.contains("costs 25.0%"));
    assert!(o.next.as_ref().unwrap().contains("--timing pass"));

    let a = analyze(&fixture::small());
    for id in ["syncs", "created"] {
        assert_eq!(item(&a, id).status, ItemStatus::Ok);
    }
    let o = item(&a, "overhead");
    assert_eq!(o.status, ItemStatus::Unknown);
    assert!(o.next.as_ref().unwrap().contains("--overhead"));
}

#[test]
fn cpu_fallback_spans_are_reported() {
    let mut p = fixture::small();
    p.threads = vec!["main".into()];
    p.cpu_spans = vec![
        CpuSpan {
            name: "encode".into(),
            thread: 0,
            token: Some(1),
            start_ns: 0,
            end_ns: 10,
            detail: None,
        },
        CpuSpan {
            name: "cpu_fallback".into(),
            thread: 0,
            token: Some(1),
            start_ns: 100,
            end_ns: 6100,
            detail: Some("L0.softmax: n < 128".into()),
        },
    ];
    let a = analyze(&p);
    let f = item(&a, "cpu_fallback");
    assert_eq!(f.status, ItemStatus::Warn);
    assert_eq!(
        f.summary,
        "1 CPU fallback spans, 0.002 ms of CPU time per token"
    );
    assert_eq!(
        f.evidence,
        ["L0.softmax: n < 128: 1 times, 0.006 ms in all"]
    );
    // With CPU spans and no fallback: ok; without CPU spans: unknown.
    p.cpu_spans.pop();
    assert_eq!(item(&analyze(&p), "cpu_fallback").status, ItemStatus::Ok);
    assert_eq!(
        item(&analyze(&fixture::small()), "cpu_fallback").status,
        ItemStatus::Unknown
    );
}

#[test]
fn kernels_under_their_ceiling_and_small_grids() {
    // Copy 1000 bytes/ns and a dispatch floor of 500 ns: gemv_q4_1 at L0.ffn_down has
    // t* = max(100, 200, 500) = 500 ns per call against 10 µs measured: 5%.
    let mut p = fixture::small_with_ceilings();
    let c = p.ceilings.as_mut().unwrap();
    let copy = c.copy_gbps.as_mut().unwrap();
    (copy.p10, copy.median, copy.p90) = (900.0, 1000.0, 1100.0);
    let d = c.dispatch_ns.as_mut().unwrap();
    (d.p10, d.median, d.p90) = (450.0, 500.0, 550.0);
    let a = analyze(&p);
    let u = item(&a, "under_ceiling");
    assert_eq!(u.status, ItemStatus::Warn, "{u:?}");
    // Time above t*: 39 µs (output) + 2 x 19 µs = 77 µs over 2 tokens.
    assert_eq!(
        u.summary,
        "3 dispatches per token run under 10% of their ceiling (median call), 0.038 ms per token above the ceiling's time"
    );
    // The most time lost first: output (gemv_f16, 2.5%), then the two ffn_down.
    assert!(
        u.evidence[0].starts_with("#5 output (gemv_f16): 2.5% of ceiling, median 20.0 µs per call"),
        "{:?}",
        u.evidence
    );
    assert!(
        u.evidence[1].starts_with("#2 L0.ffn_down (gemv_q4_1, layer 0): 5.0% of ceiling"),
        "{:?}",
        u.evidence
    );
    // A gemv far from its bandwidth ceiling: the sweep is the next step, with why.
    let next = u.next.as_ref().unwrap();
    assert!(
        next.contains("bench --sweep") && next.contains("why: output is a gemv"),
        "{next}"
    );
    // Every dispatch has 4 workgroups, fewer than the 64 that fill the device.
    let g = item(&a, "small_grids");
    assert_eq!(g.status, ItemStatus::Warn);
    assert!(g
        .summary
        .starts_with("7 of 7 dispatches per token have fewer than 64 workgroups"));
    assert!(
        g.evidence[0].starts_with("#5 output (gemv_f16): 4 workgroups"),
        "{:?}",
        g.evidence
    );
    // Without ceilings neither can be checked.
    let a = analyze(&fixture::small());
    for id in ["under_ceiling", "launch_bound", "small_grids"] {
        let i = item(&a, id);
        assert_eq!(i.status, ItemStatus::Unknown);
        assert!(i.summary.contains("gpuscope peak"), "{}", i.summary);
    }
}

#[test]
fn launch_bound_tokens() {
    let mut p = fixture::small_with_ceilings();
    assert_eq!(item(&analyze(&p), "launch_bound").status, ItemStatus::Ok);
    // 7 dispatches x 30 µs = 210 µs: 70% of token 2's 300 µs, 52.5% of token 1's 400 µs.
    let d = p.ceilings.as_mut().unwrap().dispatch_ns.as_mut().unwrap();
    (d.p10, d.median, d.p90) = (29_000.0, 30_000.0, 31_000.0);
    let a = analyze(&p);
    let l = item(&a, "launch_bound");
    assert_eq!(l.status, ItemStatus::Warn);
    assert_eq!(
        l.summary,
        "2 of 2 steady tokens are launch-bound: 7 dispatches × 30.0 µs = 52.5% of wall (median)"
    );
}

#[test]
fn flagged_timestamps_name_the_dispatch() {
    let a = analyze(&fixture::small());
    let t = item(&a, "timestamps");
    assert_eq!(t.status, ItemStatus::Warn);
    assert_eq!(
        t.evidence,
        [
            "token 1 dispatch #3 L1.attn_norm (rms_norm): out of order",
            "token 2 dispatch #6 argmax (argmax): zero",
            "token 0 pass 3 head: negative"
        ]
    );
    assert_eq!(
        item(&analyze(&fixture::untimed()), "timestamps").status,
        ItemStatus::Unknown
    );
}

fn binding(buffer: u32, bytes: u64) -> Binding {
    Binding {
        buffer,
        offset: 0,
        bytes,
    }
}

/// gemv (writes gate, 4 kB) -> silu_mul (reads gate, writes act) -> add (reads act and
/// x, writes x) -> gemv (reads x): an epilogue and a chain.
fn fusable() -> Profile {
    let mut p = fixture::tokens_only(&[(1_000_000, Some(500_000)); 2]);
    let ops = ["gemv_q4_1", "silu_mul", "add", "gemv_q4_1"];
    for token in 0..2u32 {
        for (i, op) in ops.iter().enumerate() {
            let start = token as u64 * 1_000_000 + i as u64 * 10_000;
            p.dispatches.push(fixture::dispatch(
                token,
                i as u32,
                op,
                Some((start, start + 8_000)),
            ));
        }
    }
    p.graph = Some(GraphDesc {
        buffers: ["gate", "act", "x", "w"]
            .iter()
            .map(|l| GraphBuffer {
                label: l.to_string(),
                bytes: 4096,
            })
            .collect(),
        dispatches: vec![
            GraphDispatch {
                reads: vec![binding(3, 4096), binding(2, 4096)],
                writes: vec![binding(0, 4096)],
            },
            GraphDispatch {
                reads: vec![binding(0, 4096)],
                writes: vec![binding(1, 4096)],
            },
            GraphDispatch {
                reads: vec![binding(1, 4096), binding(2, 4096)],
                writes: vec![binding(2, 4096)],
            },
            GraphDispatch {
                reads: vec![binding(3, 4096), binding(2, 4096)],
                writes: vec![binding(0, 4096)],
            },
        ],
    });
    p
}

#[test]
fn fusion_candidates_from_bindings() {
    let p = fusable();
    let a = analyze(&p);
    let f = &a.checklist.fusion;
    assert_eq!(f.len(), 2, "{f:?}");
    // gemv -> silu_mul through `gate`: an epilogue. Nothing after reads `gate` before
    // it is written again... but dispatch 3 writes it, and nothing reads it: 2 x 4096.
    assert!(!f[0].chain);
    assert_eq!((f[0].producer.index, f[0].consumer.index), (0, 1));
    assert_eq!(f[0].via.as_deref(), Some("gate"));
    assert_eq!(f[0].bytes_saved, Some(8192));
    // silu_mul -> add through `act`: a chain; `act` is read by nobody later.
    assert!(f[1].chain);
    assert_eq!(f[1].via.as_deref(), Some("act"));
    assert_eq!(f[1].bytes_saved, Some(8192));
    assert_eq!(f[1].consumer_ns, Some(8000.0));
    let i = item(&a, "fusion");
    assert_eq!(i.status, ItemStatus::Warn);
    assert_eq!(
        i.summary,
        "2 fusions would save 2 dispatches per token and 16.38 kB of traffic (up to 16.0 µs of GPU time)"
    );
    assert!(i.evidence.iter().any(|e| e.starts_with("element-wise chain: #1 silu_mul#1 (silu_mul) -> #2 add#2 (add) via act: 1 dispatch, 8.19 kB")), "{:?}", i.evidence);
}

#[test]
fn a_later_reader_keeps_the_producers_write() {
    let mut p = fusable();
    // The last gemv now reads `act` too: fusing silu_mul into add saves only the read.
    p.graph.as_mut().unwrap().dispatches[3]
        .reads
        .push(binding(1, 4096));
    let f = fusion_candidates(p.graph.as_ref(), &analyze(&p).sites.sites);
    assert_eq!(f[1].bytes_saved, Some(4096));
}

#[test]
fn without_bindings_only_element_wise_neighbours_in_a_pass_count() {
    let mut p = fusable();
    p.graph = None;
    let a = analyze(&p);
    let f = &a.checklist.fusion;
    assert_eq!(f.len(), 1);
    assert!(f[0].chain && f[0].via.is_none() && f[0].bytes_saved.is_none());
    assert!(analyze(&fixture::small()).checklist.fusion.is_empty());
}

#[test]
fn element_wise_families() {
    for op in ["add", "silu_mul", "rope", "add_f16", "mul"] {
        assert!(is_elementwise(op), "{op}");
    }
    for op in [
        "rms_norm",
        "gemv_q4_1",
        "attention",
        "softmax",
        "argmax",
        "addition",
        // llama.cpp's matrix products start with `mul` but are not element-wise.
        "mul_mat_vec_q4_1_f32_f32",
        "mul_mm_f16_f32",
        "add_rms_f32_f32_f32_norepeat",
    ] {
        assert!(!is_elementwise(op), "{op}");
    }
}

/// Regression: the checklist's only WARN on lavapipe was `#0 token_embd 2.4% of ceiling,
/// 649.5 µs per call`: a mean over per-token times from 54 to 1601 µs. Calls are judged
/// by their median now, with the spread shown.
#[test]
fn a_site_is_judged_by_its_median_call_not_a_mean_one_slow_call_moves() {
    let mut p = fixture::small_with_ceilings();
    let c = p.ceilings.as_mut().unwrap();
    let copy = c.copy_gbps.as_mut().unwrap();
    (copy.p10, copy.median, copy.p90) = (900.0, 1000.0, 1100.0);
    let d = c.dispatch_ns.as_mut().unwrap();
    (d.p10, d.median, d.p90) = (450.0, 500.0, 550.0);
    // Three more tokens copying token 1; then token 0's output call 100 times slower.
    let a = analyze(&p);
    let before = item(&a, "under_ceiling").evidence.clone();
    let slow = p
        .dispatches
        .iter_mut()
        .find(|d| d.token == 1 && d.label == "output")
        .unwrap();
    let g = slow.gpu.as_mut().unwrap();
    g.end_ns = g.start_ns + 2_000_000;
    let a = analyze(&p);
    let after = &item(&a, "under_ceiling").evidence;
    assert!(after[0].contains("p10-p90"), "{after:?}");
    assert_ne!(before, *after, "the slow call shows in the spread");
}

/// An attached program's setup runs in its first steps (llama.cpp compiles pipelines
/// and sizes buffers on its first decode tokens): creations confined to the first half
/// of its tokens are its warm-up, shown and not judged; creations that recur later are
/// churn. gpuscope's own engine records its setup apart, so any creation after its
/// first token counts.
#[test]
fn an_attached_programs_warm_up_is_not_churn() {
    let mut p = fixture::long(8, 2);
    p.workload
        .settings
        .insert("source".into(), gpuscope_trace::SOURCE_VULKAN_LAYER.into());
    p.tokens[1].counters.pipelines_created = 12;
    p.tokens[2].counters.buffers_created = 4;
    let a = analyze(&p);
    let c = item(&a, "created");
    assert_eq!(c.status, ItemStatus::Ok, "{}", c.summary);
    assert!(
        c.summary
            .starts_with("16 resources created in tokens 1-2 only, none in the 5 tokens after"),
        "{}",
        c.summary
    );
    let check = a
        .counters
        .checks
        .iter()
        .find(|k| k.name.starts_with("resources created in tokens 4-7"))
        .expect("the attached program's creation check");
    assert_eq!((check.observed.as_str(), check.failed()), ("0", false));

    p.tokens[5].counters.buffers_created = 1;
    let a = analyze(&p);
    assert_eq!(item(&a, "created").status, ItemStatus::Warn);
    assert!(a.counters.checks.iter().any(|k| k.failed()));

    p.workload.settings.remove("source");
    p.tokens[5].counters.buffers_created = 0;
    let a = analyze(&p);
    assert_eq!(
        item(&a, "created").status,
        ItemStatus::Warn,
        "gpuscope's own engine: any creation after the first token"
    );
}
