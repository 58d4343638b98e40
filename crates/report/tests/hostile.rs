//! Profiles no program could have made, as a hostile file or a corrupt recording gives
//! them: every analysis and renderer must finish (overflow checks are on in tests).

use gpuscope_report::analysis::{analyze, diff, gate, DiffOptions, GateOptions};
use gpuscope_report::render;
use gpuscope_trace::{GpuSpan, Profile};

use gpuscope_trace::fixtures as fixture;

/// Every analysis, every renderer, and the diff against itself with its gate (what the
/// `profile_pipeline` fuzz target drives); the text report.
fn everything(p: &Profile) -> String {
    let a = analyze(p);
    let text = render::render_analysis_text(p, &a);
    let _ = render::render_analysis_markdown(p, &a);
    let _ = render::render_analysis_html(p, &a);
    let _ = render::perfetto::write_perfetto(p, None, std::io::sink());
    let d = diff(p, p, &DiffOptions::default()).expect("a profile diffs against itself");
    let limits = GateOptions {
        max_regress: Some(0.05),
        max_regress_op: Vec::new(),
        max_counter_increase: Some(0),
    };
    let g = gate(&d, &limits).ok();
    let _ = render::render_diff_text(&d, g.as_ref());
    let _ = render::render_diff_md(&d, g.as_ref());
    text
}

/// Spans and wall times near `u64::MAX` ns: their sums (a token's busy time, a layer's,
/// the timeline's) saturate instead of overflowing. The `recording_pipeline` fuzz target
/// found the overflow in the timeline's and the layers' sums (a recording's ticks
/// scaled to nanoseconds).
#[test]
fn spans_near_the_largest_time_do_not_overflow_a_sum() {
    let mut p = fixture::long(4, 2);
    let huge = GpuSpan {
        start_ns: 1,
        end_ns: u64::MAX - 1,
    };
    for d in &mut p.dispatches {
        d.gpu = Some(huge);
    }
    for s in &mut p.passes {
        s.gpu = Some(huge);
    }
    for t in &mut p.tokens {
        t.wall_ns = u64::MAX / 2;
    }
    let text = everything(&p);
    assert!(text.contains("Tokens:"), "{text}");
}
