//! The text report: every section, in order, with the right numbers; a golden file
//! for the whole report (`GPUSCOPE_BLESS=1 cargo test -p gpuscope-trace` rewrites it).

use gpuscope_report::render::render_text;
use gpuscope_trace::{Overhead, TimingMode};

use gpuscope_trace::fixtures as fixture;

/// Asserts each of `parts` occurs in `text`, in that order.
#[track_caller]
fn assert_in_order(text: &str, parts: &[&str]) {
    let mut from = 0;
    for part in parts {
        match text[from..].find(part) {
            Some(i) => from += i + part.len(),
            None => panic!("{part:?} missing (or out of order) in:\n{text}"),
        }
    }
}

fn line_with<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|l| l.trim_start().starts_with(start))
        .unwrap_or_else(|| panic!("no line starting {start:?} in:\n{text}"))
}

#[test]
fn sections_in_order() {
    let r = render_text(&fixture::small());
    assert_in_order(
        &r,
        &[
            "Adapter:  Test GPU, backend Vulkan, driver llvmpipe (Mesa 22.3.6), device type Cpu",
            "Timing:   dispatch (TIMESTAMP_QUERY_INSIDE_PASSES offered)",
            "Workload: tiny (synthetic) (llama), weights q4_1, 1.5 M params, 900.00 kB of weights, 2 layers; graph: 7 dispatches, 4 passes per token",
            "Tokens: 3 decoded",
            "Ops (",
            "Layers (",
            "Counters per token",
            "Checks",
            "Timestamps:",
            "Bottleneck: ",
        ],
    );
}

#[test]
fn token_lines_and_summary() {
    let r = render_text(&fixture::small());
    let cols: Vec<&str> = line_with(&r, "1 ").split_whitespace().collect();
    assert_eq!(cols, ["1", "6", "42", "0.400", "0.150", "2500.0"]);
    let cols: Vec<&str> = line_with(&r, "2 ").split_whitespace().collect();
    assert_eq!(cols, ["2", "7", "99", "0.300", "-", "3333.3"]);
    assert!(r.contains(
        "all 3 tokens: wall median 0.400 ms (p10-p90 0.300-2.000 ms, n=3), min 0.300 ms, max 2.000 ms; \
         GPU busy median 0.150 ms (p10-p90 0.150-0.200 ms, n=2; 2 of 3 tokens timed); 2500.0 tok/s at median"
    ), "{r}");
    assert!(r.contains(
        "tokens 1-2 (first skipped): wall median 0.300 ms (p10-p90 0.300-0.400 ms, n=2)"
    ));
}

#[test]
fn op_table() {
    let r = render_text(&fixture::small());
    assert_in_order(
        &r,
        &[
            "Ops (GPU time from dispatch spans, tokens 1-2)",
            "op",
            "calls",
            "total ms",
            "avg µs",
            "% GPU",
            "GB/s",
            "GFLOP/s",
            "FLOP/B",
            "% ceil",
            "bound",
        ],
    );
    // Tokens 1-2 (too few tokens to detect a steady state: the first is left out).
    let cols: Vec<&str> = line_with(&r, "gemv_q4_1").split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "gemv_q4_1",
            "4",
            "0.040",
            "10.0",
            "44.7",
            "10.0",
            "20.0",
            "2.00",
            "-",
            "-"
        ]
    );
    // One of token 1's rms_norm spans is out of order: 3 timed calls of 2 µs.
    let cols: Vec<&str> = line_with(&r, "rms_norm").split_whitespace().collect();
    assert_eq!(
        cols,
        ["rms_norm", "4", "0.006", "2.0", "6.7", "2.00", "1.50", "0.75", "-", "-"]
    );
    assert!(r.contains("2 of 14 calls have no valid GPU span"));
    assert!(r.contains("% ceil and bound need measured ceilings"));
}

#[test]
fn layers_counters_and_checks() {
    let r = render_text(&fixture::small());
    assert_in_order(
        &r,
        &[
            "Layers (GPU ms per token, median over tokens 1-2, from pass spans)",
            "embed",
            "0.001",
            "L0",
            "0.013",
            "head",
            "0.022   (p10-p90 0.022-0.022 ms, 2 tokens timed)",
            "layers: min L0 0.013 ms, median L0 0.013 ms, max L1 0.013 ms",
        ],
    );
    let cols: Vec<&str> = line_with(&r, "bind_groups_created")
        .split_whitespace()
        .collect();
    assert_eq!(cols, ["bind_groups_created", "5", "0", "0-0", "0"]);
    assert!(r.contains("ok    resources created after first token: expected 0, observed 0"));
    assert!(r.contains("ok    dispatches per token: expected 7, observed 7"));
    assert!(r.contains(
        "Timestamps: 30 of 33 spans valid (dispatch 19, pass 11); left out: 1 zero, 1 negative, 1 out of order"
    ));
    assert!(!r.contains("Overhead:"));
}

#[test]
fn failed_check_overhead_and_red_flag() {
    let mut p = fixture::small();
    p.tokens[2].counters.syncs = 2;
    p.overhead = Some(Overhead {
        mode: TimingMode::Dispatch,
        tok_per_s_profiled: 90.0,
        tok_per_s_off: 100.0,
        off_wall_ns: Vec::new(),
    });
    let r = render_text(&p);
    assert!(
        r.contains("FAIL  syncs per token: expected <= 1, observed 1-2"),
        "{r}"
    );
    assert!(
        r.contains(
            "Overhead: timing dispatch costs 10.0% throughput (90.0 tok/s over 2 tokens profiled, 100.0 over 2 with timing off)"
        ),
        "{r}"
    );
    assert!(line_with(&r, "Bottleneck:").starts_with("Bottleneck: RED FLAG: 2 syncs in token 2"));
}

#[test]
fn untimed_shows_dashes_and_says_why() {
    let r = render_text(&fixture::untimed());
    assert!(r.contains("Ops (no dispatch GPU times: timing off; tokens 1-2)"));
    let cols: Vec<&str> = line_with(&r, "gemv_f16").split_whitespace().collect();
    assert_eq!(
        cols,
        ["gemv_f16", "2", "-", "-", "-", "-", "-", "1.33", "-", "-"]
    );
    assert!(r.contains("per-op GPU times need timing mode `dispatch`"));
    assert!(r.contains("Layers: GPU time unknown (timing off)"));
    assert!(r.contains("Timestamps: none recorded (timing off)"));
    assert!(r.contains("Bottleneck: GPU time unknown (timing off)"));
}

#[test]
fn all_valid_timestamps() {
    let r = render_text(&fixture::long(2, 3));
    assert!(
        r.contains("Timestamps: all 12 spans valid (dispatch 6, pass 6)"),
        "{r}"
    );
}

#[test]
fn long_runs_are_shortened() {
    let r = render_text(&fixture::long(40, 20));
    // Tokens 0-7 and 32-39 are listed (token ids are 1000 + index).
    assert!(r.contains(" 1007 ") && r.contains(" 1032 "));
    assert!(!r.contains(" 1008 ") && !r.contains(" 1031 "));
    assert!(r.contains("... 24 tokens not shown ..."));
    // 20 layers: a strip of 4 per line, each median with its p10-p90.
    assert_in_order(
        &r,
        &[
            "  L0 0.001 (0.001-0.001)  L1 0.002 (0.002-0.002)  L2 0.003 (0.003-0.003)  L3 0.004 (0.004-0.004)\n",
            "  L16 0.017 (0.017-0.017)  L17 0.018 (0.018-0.018)  L18 0.019 (0.019-0.019)  L19 0.020 (0.020-0.020)\n",
            "layers: min L0 0.001 ms, median L9 0.010 ms, max L19 0.020 ms",
        ],
    );
}

#[test]
fn empty_profile_renders() {
    let mut p = fixture::small();
    p.tokens.clear();
    p.dispatches.clear();
    p.passes.clear();
    let r = render_text(&p);
    assert_in_order(
        &r,
        &[
            "Tokens: 0 decoded",
            "no dispatches recorded",
            "Bottleneck: no tokens decoded",
        ],
    );
}

#[test]
fn golden_report() {
    let path = fixture::data("small/report.txt");
    let r = render_text(&fixture::small());
    if fixture::bless() {
        std::fs::write(&path, &r).unwrap();
    }
    let golden = std::fs::read_to_string(&path).expect("run with GPUSCOPE_BLESS=1 to create it");
    if r != golden {
        // Name the first differing line: a whole-report assert_eq is unreadable.
        let (now, was): (Vec<&str>, Vec<&str>) = (r.lines().collect(), golden.lines().collect());
        let at = (0..now.len().max(was.len()))
            .find(|&i| now.get(i) != was.get(i))
            .unwrap_or(0);
        panic!(
            "report differs from {} at line {}:\n  now:    {:?}\n  golden: {:?}\n\
             if intended, rerun with GPUSCOPE_BLESS=1 and review the diff",
            path.display(),
            at + 1,
            now.get(at),
            was.get(at)
        );
    }
}

#[test]
fn header_says_what_limits_the_run() {
    let plain = render_text(&fixture::small());
    for absent in [
        "sampled:",
        "Settings:",
        "Commit:",
        "Instrumentation:",
        "Note:",
        "INCOMPLETE",
    ] {
        assert!(
            !plain.contains(absent),
            "{absent} in a plain report:\n{plain}"
        );
    }
    let mut p = fixture::small();
    p.timing.sampling = Some(gpuscope_trace::Sampling { stride: 16 });
    p.workload
        .settings
        .insert("gemv".into(), "subgroup, 4 rows/wg".into());
    p.commit = Some("abc1234".into());
    p.instrumentation = Some(gpuscope_trace::Instrumentation {
        instrumented_passes: 10,
        uninstrumented_passes: 2,
        uninstrumented_command_buffers: 1,
        dispatches_outside_steps: 3,
    });
    p.notes.push("warm cache".into());
    p.incomplete = Some("interrupted after 3 of 8 tokens".into());
    let r = render_text(&p);
    assert_in_order(
        &r,
        &[
            "sampled: one dispatch in 16 carries timestamps",
            "Settings: gemv = subgroup, 4 rows/wg",
            "Commit:   abc1234",
            "Instrumentation: partial: 2 compute passes opened without the instrumented pass (not timed), 1 command buffers the recorder did not encode, 3 dispatches outside steps",
            "Note:     warm cache",
            "INCOMPLETE: interrupted after 3 of 8 tokens",
            "Tokens: 3 decoded",
        ],
    );
    // A program's own profile (gpuscope-record) describes no model.
    let mut program = p.clone();
    program.workload = Default::default();
    assert!(render_text(&program).contains("Workload: not described (a program's own steps)"));
    // A complete instrumentation says nothing.
    p.instrumentation = Some(gpuscope_trace::Instrumentation {
        instrumented_passes: 10,
        ..Default::default()
    });
    assert!(!render_text(&p).contains("Instrumentation:"));
}

/// Regression: `--overhead` said 57.4% on an H100 while the headline said 2%: the
/// profiled side's median took in a 45-token slow start, the untimed side's did not.
/// Both sides are now their steady tokens, and the report names both counts.
#[test]
fn overhead_compares_steady_tokens_with_steady_tokens() {
    let walls: Vec<(u64, Option<u64>)> = (0..64)
        .map(|i| {
            (
                if i < 45 {
                    5_200_000
                } else {
                    2_270_000 + (i % 3) * 1000
                },
                None,
            )
        })
        .collect();
    let mut p = fixture::tokens_only(&walls);
    p.timing.mode = TimingMode::Dispatch;
    p.overhead = Some(Overhead {
        mode: TimingMode::Dispatch,
        tok_per_s_profiled: 0.0,
        tok_per_s_off: 0.0,
        off_wall_ns: (0..64).map(|i| 2_250_000 + (i % 3) * 1000).collect(),
    });
    let o = gpuscope_report::analysis::overhead::overhead(&p).unwrap();
    assert!(o.steady_vs_steady);
    assert!((0.5..1.5).contains(&o.cost_percent), "{o:?}");
    assert!(o.profiled_tokens < 20 && o.off_tokens > 40, "{o:?}");
    let r = render_text(&p);
    assert!(r.contains("steady tokens profiled"), "{r}");
}
