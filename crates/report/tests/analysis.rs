//! Analyses of the fixtures, with exact expected values (see `fixture` for the numbers).

use gpuscope_report::analysis::*;
use gpuscope_trace::{Counters, GpuSpan, PassEvent, Profile, TimingMode};

use gpuscope_trace::fixtures as fixture;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9 * b.abs().max(1.0)
}

#[track_caller]
fn assert_close(a: Option<f64>, b: f64) {
    let a = a.expect("value present");
    assert!(close(a, b), "{a} != {b}");
}

mod percentiles {
    use super::*;

    #[test]
    fn nearest_rank() {
        let v = [1, 2, 3, 4];
        assert_eq!(
            percentile(&v, 50.0),
            Some(2),
            "lower middle for an even count"
        );
        assert_eq!(percentile(&v, 90.0), Some(4));
        assert_eq!(percentile(&v, 0.0), Some(1));
        assert_eq!(percentile(&v, 100.0), Some(4));
        let ten: Vec<u64> = (1..=10).collect();
        assert_eq!(percentile(&ten, 90.0), Some(9));
        assert_eq!(percentile(&ten, 91.0), Some(10));
        assert_eq!(percentile(&[7], 90.0), Some(7));
        assert_eq!(percentile(&[], 50.0), None);
    }

    #[test]
    fn summary_sorts_its_input() {
        let s = Summary::of([30, 10, 20]).unwrap();
        assert_eq!(
            s,
            Summary {
                count: 3,
                min: 10,
                p10: 10,
                median: 20,
                p90: 30,
                max: 30
            }
        );
        assert_eq!(Summary::of(Vec::new()), None);
    }
}

mod tokens {
    use super::*;

    #[test]
    fn all_tokens() {
        let s = token_stats(&fixture::small());
        assert_eq!(s.selection, TokenSelection::All);
        assert_eq!(s.tokens, vec![0, 1, 2]);
        assert_eq!(
            s.wall_ns,
            Some(Summary {
                count: 3,
                min: 300_000,
                p10: 300_000,
                median: 400_000,
                p90: 2_000_000,
                max: 2_000_000
            })
        );
        // Token 2 has no GPU-busy time: only tokens 0 and 1 count.
        assert_eq!(
            s.gpu_busy_ns,
            Some(Summary {
                count: 2,
                min: 150_000,
                p10: 150_000,
                median: 150_000,
                p90: 200_000,
                max: 200_000
            })
        );
        assert_close(s.tok_per_s, 2500.0);
    }

    #[test]
    fn steady_skips_the_first() {
        let s = token_stats_steady(&fixture::small());
        assert_eq!(s.selection, TokenSelection::SkipFirst);
        assert_eq!(s.tokens, vec![1, 2]);
        let w = s.wall_ns.unwrap();
        assert_eq!((w.median, w.p90), (300_000, 400_000));
        assert_eq!(s.gpu_busy_ns.unwrap().count, 1);
        assert_close(s.tok_per_s, 1e9 / 300_000.0);
    }

    #[test]
    fn a_single_token_run_uses_its_only_token() {
        let mut p = fixture::small();
        p.tokens.truncate(1);
        let s = token_stats_steady(&p);
        assert_eq!(s.selection, TokenSelection::All);
        assert_eq!(s.tokens, vec![0]);
        assert_eq!(s.wall_ns.map(|w| (w.median, w.count)), Some((2_000_000, 1)));
        assert_close(s.tok_per_s, 500.0);
    }
}

mod ops {
    use super::*;

    #[test]
    fn rows_sorted_by_time_with_exact_rates() {
        let b = op_breakdown(&fixture::small());
        let names: Vec<&str> = b.rows.iter().map(|r| r.op.as_str()).collect();
        // embedding and argmax tie at 3000 ns; more bytes first.
        assert_eq!(
            names,
            ["gemv_q4_1", "gemv_f16", "rms_norm", "embedding", "argmax"]
        );
        assert_eq!(b.total_gpu_ns, Some(140_000));
        assert_eq!((b.calls, b.untimed_calls), (21, 2));

        let q4 = &b.rows[0];
        assert_eq!(
            (q4.calls, q4.untimed_calls, q4.total_gpu_ns),
            (6, 0, Some(64_000))
        );
        assert_close(q4.avg_gpu_ns, 64_000.0 / 6.0);
        assert_close(q4.gpu_percent, 64_000.0 / 140_000.0 * 100.0);
        assert_close(q4.gb_per_s, 9.375);
        assert_close(q4.gflop_per_s, 18.75);

        let f16 = &b.rows[1];
        assert_close(f16.gb_per_s, 15.0);
        assert_close(f16.gpu_percent, 60_000.0 / 140_000.0 * 100.0);
    }

    #[test]
    fn invalid_spans_are_excluded_and_counted() {
        let b = op_breakdown(&fixture::small());
        let rms = b.rows.iter().find(|r| r.op == "rms_norm").unwrap();
        assert_eq!((rms.calls, rms.untimed_calls, rms.timed_calls()), (6, 1, 5));
        assert_eq!(rms.total_gpu_ns, Some(10_000));
        assert_eq!(rms.bytes, 24_000, "bytes count every call");
        // Rates use the bytes of the 5 timed calls only.
        assert_close(rms.gb_per_s, 2.0);
        assert_close(rms.gflop_per_s, 1.5);
        let argmax = b.rows.iter().find(|r| r.op == "argmax").unwrap();
        assert_eq!((argmax.untimed_calls, argmax.total_gpu_ns), (1, Some(3000)));
        assert_close(argmax.avg_gpu_ns, 1500.0);
    }

    #[test]
    fn untimed_rows_keep_counts() {
        let b = op_breakdown(&fixture::untimed());
        assert_eq!(b.total_gpu_ns, None);
        let names: Vec<&str> = b.rows.iter().map(|r| r.op.as_str()).collect();
        assert_eq!(
            names,
            ["gemv_f16", "gemv_q4_1", "rms_norm", "embedding", "argmax"]
        );
        let f16 = &b.rows[0];
        assert_eq!((f16.calls, f16.bytes, f16.flops), (3, 900_000, 1_200_000));
        assert_eq!(f16.untimed_calls, 3);
        assert_eq!(
            (
                f16.total_gpu_ns,
                f16.avg_gpu_ns,
                f16.gpu_percent,
                f16.gb_per_s,
                f16.gflop_per_s
            ),
            (None, None, None, None, None)
        );
    }

    #[test]
    fn unflagged_backwards_span_is_left_out_not_a_panic() {
        let mut p = fixture::small();
        p.dispatches[0].gpu = Some(GpuSpan {
            start_ns: 50,
            end_ns: 10,
        });
        let b = op_breakdown(&p);
        let e = b.rows.iter().find(|r| r.op == "embedding").unwrap();
        assert_eq!((e.untimed_calls, e.total_gpu_ns), (1, Some(2000)));
        assert_eq!(timestamp_health(&p).dispatches.negative, 1);
    }
}

mod layers {
    use super::*;

    fn times(b: &LayerBreakdown) -> Vec<(&str, Option<u64>, u32)> {
        b.rows
            .iter()
            .map(|r| (r.name.as_str(), r.gpu_ns_median, r.tokens_timed))
            .collect()
    }

    #[test]
    fn from_pass_spans() {
        let b = layer_breakdown(&fixture::small());
        // L0 token 0: 2000 + 500 gap + 12000; tokens 1, 2: 2000 + 500 + 10000.
        // head: token 0's pass span is flagged, so tokens 1 and 2 only.
        assert_eq!(
            times(&b),
            [
                ("embed", Some(1000), 3),
                ("L0", Some(12_500), 3),
                ("L1", Some(12_500), 3),
                ("head", Some(22_000), 2)
            ]
        );
        assert!(b
            .rows
            .iter()
            .all(|r| r.source == Some(LayerTimeSource::PassSpans)));
        assert_eq!(b.rows[1].layer, Some(0));
        let e = b.extremes.unwrap();
        assert_eq!(
            (
                e.min.name.as_str(),
                e.median.name.as_str(),
                e.max.name.as_str()
            ),
            ("L0", "L0", "L1")
        );
        assert_eq!(e.max.gpu_ns, 12_500);
    }

    #[test]
    fn from_dispatch_spans_without_pass_spans() {
        let b = layer_breakdown(&fixture::without_pass_spans());
        // L1 in token 1 and head in token 2 have an invalid dispatch: those tokens
        // are left out rather than summed short.
        assert_eq!(
            times(&b),
            [
                ("embed", Some(1000), 3),
                ("L0", Some(12_000), 3),
                ("L1", Some(12_000), 2),
                ("head", Some(21_500), 2)
            ]
        );
        assert!(b
            .rows
            .iter()
            .all(|r| r.source == Some(LayerTimeSource::DispatchSpans)));
    }

    /// A step encoded as one pass (gpuscope's dispatch and sampled timing): the layerless
    /// dispatches are `embed` and `head` as `check` names them, not one `step` section
    /// holding both.
    #[test]
    fn one_pass_per_step_names_embed_and_head() {
        let mut p = fixture::without_pass_spans();
        let tokens: Vec<u32> = p.tokens.iter().map(|t| t.index).collect();
        let per_token = p.dispatches.len() / tokens.len();
        for d in &mut p.dispatches {
            d.pass = 0;
        }
        let pass = p.passes[0].clone();
        p.passes = tokens
            .iter()
            .map(|&token| PassEvent {
                token,
                index: 0,
                name: "step".into(),
                layer: None,
                dispatches: per_token as u32,
                gpu: None,
                ..pass.clone()
            })
            .collect();
        let names: Vec<String> = layer_breakdown(&p)
            .rows
            .into_iter()
            .map(|r| r.name)
            .collect();
        assert_eq!(names, ["embed", "L0", "L1", "head"]);
    }

    #[test]
    fn untimed_is_none() {
        let b = layer_breakdown(&fixture::untimed());
        assert_eq!(b.rows.len(), 4);
        assert!(b
            .rows
            .iter()
            .all(|r| r.gpu_ns_median.is_none() && r.source.is_none()));
        assert_eq!(b.extremes, None);
    }

    #[test]
    fn extremes_of_many_layers() {
        let e = layer_breakdown(&fixture::long(3, 20)).extremes.unwrap();
        assert_eq!((e.min.name.as_str(), e.min.gpu_ns), ("L0", 1000));
        assert_eq!((e.median.name.as_str(), e.median.gpu_ns), ("L9", 10_000));
        assert_eq!((e.max.name.as_str(), e.max.gpu_ns), ("L19", 20_000));
    }
}

mod counters {
    use super::*;

    #[test]
    fn first_and_steady() {
        let r = counter_report(&fixture::small());
        assert_eq!(r.first, Some(fixture::counters(true)));
        assert_eq!(r.steady_tokens, 2);
        assert_eq!(r.steady_median, Some(fixture::counters(false)));
        assert_eq!(r.steady_max, Some(fixture::counters(false)));
        let checks: Vec<(&str, &str, &str, CheckStatus)> = r
            .checks
            .iter()
            .map(|c| {
                (
                    c.name.as_str(),
                    c.expected.as_str(),
                    c.observed.as_str(),
                    c.status,
                )
            })
            .collect();
        assert_eq!(
            checks,
            [
                (
                    "resources created after first token",
                    "0",
                    "0",
                    CheckStatus::Ok
                ),
                ("submits per token", "1", "1", CheckStatus::Ok),
                ("syncs per token", "<= 1", "1", CheckStatus::Ok),
                ("dispatches per token", "7", "7", CheckStatus::Ok),
                ("passes per token", "4", "4", CheckStatus::Ok),
            ]
        );
        assert!(r.all_ok());
    }

    #[test]
    fn violations_fail() {
        let mut p = fixture::small();
        p.tokens[1].counters.buffers_created = 1;
        p.tokens[2].counters.syncs = 3;
        p.tokens[2].counters.dispatches = 8;
        let r = counter_report(&p);
        let failed: Vec<(&str, &str)> = r
            .checks
            .iter()
            .filter(|c| c.failed())
            .map(|c| (c.name.as_str(), c.observed.as_str()))
            .collect();
        assert_eq!(
            failed,
            [
                ("resources created after first token", "1"),
                ("syncs per token", "1-3"),
                ("dispatches per token", "7-8"),
            ]
        );
        assert!(!r.all_ok());
        let max = r.steady_max.unwrap();
        assert_eq!((max.syncs, max.buffers_created), (3, 1));
        // Median of [1, 3] is the lower value (nearest rank).
        assert_eq!(r.steady_median.unwrap().syncs, 1);
    }

    #[test]
    fn single_token_is_not_applicable() {
        let mut p = fixture::small();
        p.tokens.truncate(1);
        let r = counter_report(&p);
        assert_eq!((r.steady_median, r.steady_max), (None, None));
        assert_eq!(r.checks[0].status, CheckStatus::NotApplicable);
        assert!(r.checks[1..].iter().all(Check::ok));
        assert!(r.all_ok());
    }

    #[test]
    fn from_values_follows_fields_order() {
        let c = fixture::counters(true);
        let v: Vec<u64> = c.fields().iter().map(|f| f.1).collect();
        assert_eq!(Counters::from_values(v.try_into().unwrap()), c);
    }
}

mod timestamps {
    use super::*;

    #[test]
    fn counts_valid_and_each_issue() {
        let h = timestamp_health(&fixture::small());
        assert_eq!(
            h.dispatches,
            SpanCounts {
                events: 21,
                valid: 19,
                missing: 0,
                zero: 1,
                negative: 0,
                out_of_order: 1
            }
        );
        assert_eq!(
            h.passes,
            SpanCounts {
                events: 12,
                valid: 11,
                missing: 0,
                zero: 0,
                negative: 1,
                out_of_order: 0
            }
        );
        assert_eq!((h.total().valid, h.total().issues()), (30, 3));
        assert!(!h.all_valid());
    }

    #[test]
    fn untimed_spans_are_missing_not_issues() {
        let h = timestamp_health(&fixture::untimed());
        assert_eq!((h.total().missing, h.total().recorded()), (33, 0));
        assert!(!h.all_valid());
    }
}

mod bottleneck {
    use super::*;

    #[test]
    fn gpu_bound_names_the_top_op() {
        let b = bottleneck(&fixture::small());
        // Too few tokens to detect a steady state: tokens 1-2 are used. Busy median 150
        // µs of 300 µs wall = 50%, not below 50%. gemv_f16 and gemv_q4_1 both take
        // 40 µs of the 89.5 µs of valid dispatch time; the tie goes to more bytes.
        match &b.verdict {
            Verdict::GpuBoundOp {
                busy_percent,
                op,
                gpu_percent,
                gb_per_s,
            } => {
                assert!(close(*busy_percent, 50.0));
                assert_eq!(op, "gemv_f16");
                assert!(close(*gpu_percent, 40_000.0 / 89_500.0 * 100.0));
                assert_close(*gb_per_s, 15.0);
            }
            v => panic!("unexpected verdict {v:?}"),
        }
        assert!(b.red_flags.is_empty());
        assert_eq!(
            b.headline,
            "GPU-bound: gemv_f16 takes 44.7% of GPU time at 15.0 GB/s"
        );
        assert_eq!(
            b.evidence[0],
            "GPU busy 0.150 ms (p10-p90 0.150-0.150, n=1) of 0.300 ms wall per token (50.0%)"
        );
    }

    #[test]
    fn cpu_bound_when_gpu_mostly_idle() {
        let mut p = fixture::small();
        for t in &mut p.tokens {
            t.gpu_busy_ns = Some(30_000);
        }
        let b = bottleneck(&p);
        assert!(
            matches!(b.verdict, Verdict::CpuBound { busy_percent } if close(busy_percent, 10.0))
        );
        assert!(b.headline.starts_with("CPU/launch-bound"), "{}", b.headline);
        let ev = b.evidence.join("\n");
        assert!(
            ev.contains("7 dispatches per token, 42.9 µs of wall per dispatch"),
            "{ev}"
        );
        assert!(ev.contains("CPU encode 0.014 ms per token"), "{ev}");
    }

    #[test]
    fn red_flags_come_first() {
        let mut p = fixture::small();
        p.tokens[2].counters.syncs = 2;
        p.tokens[1].counters.bind_groups_created = 4;
        let b = bottleneck(&p);
        assert_eq!(b.red_flags.len(), 2);
        assert!(
            b.headline.starts_with("RED FLAG: 2 syncs in token 2"),
            "{}",
            b.headline
        );
        assert!(b
            .headline
            .contains("RED FLAG: 4 resources created after the first token"));
        assert!(b
            .headline
            .ends_with("GPU-bound: gemv_f16 takes 44.7% of GPU time at 15.0 GB/s"));
    }

    #[test]
    fn timing_off_gives_wall_facts() {
        let b = bottleneck(&fixture::untimed());
        assert_eq!(b.verdict, Verdict::GpuTimeUnknown);
        assert!(
            b.headline.contains("GPU time unknown (timing off)"),
            "{}",
            b.headline
        );
        let ev = b.evidence.join("\n");
        // 511,000 declared bytes per token over 300 µs.
        assert!(
            ev.contains("0.51 MB declared traffic per token: at least 1.7 GB/s"),
            "{ev}"
        );
        assert!(ev.contains("3333.3 tok/s"), "{ev}");
    }

    #[test]
    fn pass_timing_names_the_slowest_section() {
        let mut p = fixture::small();
        p.timing.mode = TimingMode::Pass;
        for d in &mut p.dispatches {
            d.gpu = None;
            d.timestamp_issue = None;
        }
        let b = bottleneck(&p);
        assert_eq!(
            b.verdict,
            Verdict::GpuBound {
                busy_percent: 50.0,
                slowest_section: Some("head".into())
            }
        );
    }

    #[test]
    fn no_tokens() {
        let mut p: Profile = fixture::small();
        p.tokens.clear();
        p.dispatches.clear();
        p.passes.clear();
        assert_eq!(bottleneck(&p).verdict, Verdict::NoTokens);
        let a = analyze(&p);
        assert_eq!(a.tokens.wall_ns, None);
        assert!(a.ops.rows.is_empty() && a.layers.rows.is_empty());
    }
}
