//! Per-op, per-layer and counter tables.

use std::fmt::Write;

use super::{cell, status_word};
use crate::analysis::Analysis;
use crate::render::counters::counter_cells;
use crate::render::text::steady::scope;
use crate::render::units::{ms, op_cells, opt_ms};
use gpuscope_trace::{Profile, TimingMode};

pub(super) fn ops(out: &mut String, p: &Profile, a: &Analysis) {
    let o = &a.ops;
    md!(out, "## Per-op");
    md!(out);
    if o.rows.is_empty() {
        md!(out, "No dispatches recorded.");
        md!(out);
        return;
    }
    match (o.total_gpu_ns, &a.estimate) {
        (Some(_), Some(e)) => md!(
            out,
            "GPU time {} (sampled timing), {}.",
            e.basis(),
            scope(a)
        ),
        (Some(_), None) => md!(out, "GPU time from dispatch timestamps, {}.", scope(a)),
        (None, _) => md!(
            out,
            "No per-dispatch GPU times (timing {}{}); calls, bytes and intensity only.",
            p.timing.mode,
            if p.timing.mode == TimingMode::Dispatch {
                ""
            } else {
                ": they need `--timing dispatch`"
            }
        ),
    }
    md!(out);
    md!(out, "| op | calls | total ms | avg µs | % GPU | GB/s | GFLOP/s | FLOP/B | % of ceiling | bound |");
    md!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|---|");
    for (r, roof) in o.rows.iter().zip(&a.roofline.ops) {
        md!(
            out,
            "| `{}` | {} |",
            cell(&r.op),
            op_cells(r, roof).join(" | ")
        );
    }
    md!(
        out,
        "| **total** | {} | {} | | | | | | | |",
        o.calls,
        opt_ms(o.total_gpu_ns)
    );
    md!(out);
    if o.total_gpu_ns.is_some() && o.untimed_calls > 0 {
        md!(
            out,
            "{} of {} calls have no valid GPU span and are left out of times and rates.",
            o.untimed_calls,
            o.calls
        );
        md!(out);
    }
    if a.roofline.ceilings.is_none() {
        md!(
            out,
            "% of ceiling and bound need measured ceilings (`gpuscope peak` on the machine that made the profile)."
        );
        md!(out);
    }
}

pub(super) fn layers(out: &mut String, p: &Profile, a: &Analysis) {
    let l = &a.layers;
    md!(out, "## Per-layer");
    md!(out);
    if l.rows.iter().all(|r| r.gpu_ns_median.is_none()) {
        md!(
            out,
            "GPU time per layer unknown (timing {}).",
            p.timing.mode
        );
        md!(out);
        return;
    }
    match &a.estimate {
        Some(e) => md!(
            out,
            "GPU time per token, {} (sampled timing), {}.",
            e.basis(),
            scope(a)
        ),
        None => md!(out, "GPU time per token, {}.", scope(a)),
    }
    md!(out);
    md!(out, "| section | median ms | p10–p90 ms | tokens timed |");
    md!(out, "|---|--:|--:|--:|");
    for r in &l.rows {
        let spread = r
            .gpu_ns
            .map_or("-".into(), |g| format!("{}–{}", ms(g.p10), ms(g.p90)));
        md!(
            out,
            "| {} | {} | {spread} | {} |",
            cell(&r.name),
            opt_ms(r.gpu_ns_median),
            r.tokens_timed
        );
    }
    md!(out);
    if let Some(e) = &l.extremes {
        md!(
            out,
            "Layers: fastest {} ({} ms), median {} ({} ms), slowest {} ({} ms).",
            e.min.name,
            ms(e.min.gpu_ns),
            e.median.name,
            ms(e.median.gpu_ns),
            e.max.name,
            ms(e.max.gpu_ns)
        );
        md!(out);
    }
}

pub(super) fn counters(out: &mut String, a: &Analysis) {
    let c = &a.counters;
    md!(out, "## Counters");
    md!(out);
    md!(
        out,
        "Per token; median, p10–p90 and max over the {} tokens after the first.",
        c.steady_tokens
    );
    md!(out);
    md!(out, "| counter | first token | median | p10–p90 | max |");
    md!(out, "|---|--:|--:|--:|--:|");
    for row in counter_cells(c, "–") {
        md!(
            out,
            "| {} | {} | {} | {} | {} |",
            row.name,
            row.first,
            row.median,
            row.spread,
            row.max
        );
    }
    md!(out);
    md!(out, "### Checks");
    md!(out);
    md!(out, "| check | expected | observed | status |");
    md!(out, "|---|---|---|---|");
    for ch in &c.checks {
        md!(
            out,
            "| {} | {} | {} | {} |",
            cell(&ch.name),
            cell(&ch.expected),
            cell(&ch.observed),
            status_word(ch.status)
        );
    }
    let t = a.timestamps.total();
    md!(
        out,
        "| timestamps valid | all | {} of {} | {} |",
        t.valid,
        t.recorded(),
        if t.recorded() == 0 {
            "n/a"
        } else if t.issues() == 0 {
            "ok"
        } else {
            "**FAIL**"
        }
    );
    md!(out);
}
