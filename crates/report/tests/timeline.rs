//! Timeline metrics and clock alignment on `fixture::timeline()` (numbers in its docs).

use gpuscope_report::analysis::timeline::KernelSource;
use gpuscope_report::analysis::*;
use gpuscope_trace::{GpuSpan, TimestampIssue, TimingMode};

use gpuscope_trace::fixtures as fixture;

fn all(p: &gpuscope_trace::Profile) -> Timeline {
    timeline(p, &TokenSet::all(p))
}

#[test]
fn busy_gaps_overlap_and_efficiency() {
    let t = all(&fixture::timeline());
    assert_eq!(t.source, Some(KernelSource::Dispatches));
    assert_eq!(
        (t.tokens, t.wall_ns, t.kernel_count, t.timed_kernels),
        (2, 1400, 6, 6)
    );
    // Union: 0-300, 350-400, 1000-1300.
    assert_eq!(t.busy_ns, Some(650));
    assert!((t.utilization_percent.unwrap() - 650.0 / 1400.0 * 100.0).abs() < 1e-9);
    assert_eq!(t.mean_kernel_ns, Some(700.0 / 6.0));
    // Gaps: 0 and 50 in token 0, 600 between tokens, 0 (overlap) and 0 in token 1.
    let g = t.gaps.unwrap();
    assert_eq!((g.count, g.total_ns, g.p90_ns), (5, 650, 600));
    assert_eq!(g.mean_ns, 130.0);
    assert_eq!((t.overlaps, t.unknown_gaps), (1, 0));
    // (350 + 300) busy over (400 + 300) of the tokens' own spans.
    let e = t.launch_efficiency_percent.unwrap();
    assert!((e - 650.0 / 700.0 * 100.0).abs() < 1e-9, "{e}");
}

#[test]
fn clocks_align_from_submit_and_wait() {
    let a = align_clocks(&fixture::timeline()).unwrap();
    assert_eq!(
        a,
        ClockAlignment {
            offset_ns: 700,
            slack_ns: Some(400),
            tokens: 2
        }
    );
    assert_eq!(a.to_cpu(1000), 1700);
    assert_eq!(a.to_gpu(1700), 1000);
}

#[test]
fn idle_splits_into_kernel_gaps_and_host_wait() {
    let t = all(&fixture::timeline());
    let i = t.idle.unwrap();
    // Token 0's last kernel ends at GPU 400 = CPU 1100; token 1 is submitted at CPU
    // 1700: the 600 ns gap is host wait. The 50 ns gap inside token 0 is a kernel gap.
    assert_eq!(i.idle_ns, 750);
    assert_eq!(i.kernel_gaps_ns, 50);
    assert_eq!(i.host_wait_ns, Some(600));
    assert_eq!(i.other_ns, 100);
    assert!(t.unavailable.is_empty(), "{:?}", t.unavailable);
}

#[test]
fn a_gap_whose_work_was_already_submitted_is_a_kernel_gap() {
    let mut p = fixture::timeline();
    // Token 1 submitted at CPU 1000: now token 0 pins the offset at 500.
    for s in &mut p.cpu_spans {
        if s.token == Some(1) && s.name == "submit" {
            (s.start_ns, s.end_ns) = (1000, 1020);
        }
    }
    let a = align_clocks(&p).unwrap();
    assert_eq!(a.offset_ns, 500, "token 0 now binds: submit 500 - start 0");
    let i = all(&p).idle.unwrap();
    // Token 0 ends at CPU 900, token 1 was submitted at 1000: still host wait.
    assert_eq!(i.host_wait_ns, Some(600));
    for s in &mut p.cpu_spans {
        if s.token == Some(1) && s.name == "submit" {
            (s.start_ns, s.end_ns) = (800, 820);
        }
    }
    // Submitted at CPU 800 = GPU 300, before token 0's last kernel ended (GPU 400).
    let i = all(&p).idle.unwrap();
    assert_eq!((i.host_wait_ns, i.kernel_gaps_ns), (Some(0), 650));
}

#[test]
fn missing_timestamps_leave_their_gaps_out() {
    let mut p = fixture::timeline();
    p.dispatches[4].gpu = None;
    p.dispatches[4].timestamp_issue = Some(TimestampIssue::Zero);
    let t = all(&p);
    assert_eq!(t.timed_kernels, 5);
    assert_eq!(t.busy_ns, Some(550));
    let g = t.gaps.unwrap();
    // 0, 50, 600 measured; the gap into and out of the missing kernel is unknown.
    assert_eq!((g.count, g.total_ns), (3, 650));
    assert_eq!(t.unknown_gaps, 1);
    // Only token 0 is fully timed: 350 of 400.
    assert_eq!(t.launch_efficiency_percent, Some(87.5));
}

#[test]
fn pass_timing_says_what_it_cannot_compute() {
    let mut p = fixture::timeline();
    p.timing.mode = TimingMode::Pass;
    p.passes = (0..2u32)
        .map(|token| gpuscope_trace::PassEvent {
            token,
            index: 0,
            name: "L0".into(),
            layer: Some(0),
            dispatches: 3,
            gpu: Some(if token == 0 {
                GpuSpan {
                    start_ns: 0,
                    end_ns: 400,
                }
            } else {
                GpuSpan {
                    start_ns: 1000,
                    end_ns: 1300,
                }
            }),
            timestamp_issue: None,
        })
        .collect();
    for d in &mut p.dispatches {
        d.gpu = None;
    }
    let t = all(&p);
    assert_eq!(t.source, Some(KernelSource::Passes));
    assert_eq!(t.busy_ns, Some(700));
    assert_eq!(t.gaps.unwrap().total_ns, 600);
    assert_eq!(t.launch_efficiency_percent, None);
    assert_eq!(t.mean_kernel_ns, None);
    let missing: Vec<&str> = t.unavailable.iter().map(|u| u.metric).collect();
    assert!(missing.contains(&"launch efficiency"), "{missing:?}");
    assert!(missing.contains(&"mean kernel time"), "{missing:?}");
    assert!(t
        .unavailable
        .iter()
        .any(|u| u.reason.contains("timing pass")));
}

#[test]
fn timing_off_computes_nothing_and_says_why() {
    let t = all(&fixture::untimed());
    assert_eq!(t.source, None);
    assert_eq!((t.busy_ns, t.gaps, t.idle), (None, None, None));
    assert_eq!(t.kernel_count, 21);
    for m in [
        "busy",
        "utilization",
        "gaps",
        "launch efficiency",
        "idle split",
    ] {
        let u = t.unavailable.iter().find(|u| u.metric == m).unwrap();
        assert_eq!(u.reason, "timing off: no GPU timestamps");
    }
}

#[test]
fn without_cpu_spans_host_wait_is_not_guessed() {
    let mut p = fixture::timeline();
    p.cpu_spans.clear();
    let t = all(&p);
    assert_eq!(t.alignment, Err(AlignError::NoCpuSpans));
    let i = t.idle.unwrap();
    assert_eq!(i.host_wait_ns, None);
    assert_eq!(i.between_tokens_unattributed_ns, 600);
    assert!(t.unavailable.iter().any(|u| u.metric == "host wait"));
}

#[test]
fn contradicting_spans_are_not_aligned() {
    let mut p = fixture::timeline();
    // Token 1's wait ends before its kernels could have: 1720 - 1300 < 700.
    for s in &mut p.cpu_spans {
        if s.token == Some(1) && s.name == "wait" {
            s.end_ns = 1800;
        }
    }
    let e = align_clocks(&p).unwrap_err();
    assert!(
        matches!(
            e,
            AlignError::Inconsistent {
                lo: 700,
                hi: 500,
                late_start: 1,
                early_end: 1
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().contains("contradict"));
}
