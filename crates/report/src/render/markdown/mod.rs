//! The results document (`gpuscope report --format md`): GitHub-flavoured Markdown in
//! the layout of a PROFILING_RESULTS page — configuration, the headline table (pp/tg
//! tok/s with spread), per-op and per-layer tables, counters with their checks,
//! findings with evidence, and opportunities ranked by estimated time saved.
//!
//! Tables only (no raw HTML), so it renders on GitHub as is. Like the text report,
//! every number comes from [`crate::analysis`].

use std::fmt::Write;

use super::text::steady::scope;
use super::units::{bytes, count, duration, ms};
use crate::analysis::{analyze, Analysis, CeilingsUsed, CheckStatus, ItemStatus, TokRate};
use gpuscope_trace::Profile;

/// Appends one formatted line; writing to a `String` cannot fail.
macro_rules! md {
    ($out:expr) => { $out.push('\n') };
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

mod findings;
mod tables;

/// Analyses `p` and renders the document.
pub fn render_markdown(p: &Profile) -> String {
    render_analysis_markdown(p, &analyze(p))
}

/// Renders the document from an analysis already computed for `p`.
pub fn render_analysis_markdown(p: &Profile, a: &Analysis) -> String {
    let mut out = String::new();
    md!(out, "# gpuscope profile: {}", cell(&p.workload.name));
    md!(out);
    if let Some(why) = &p.incomplete {
        md!(out, "> **Incomplete run:** {}", cell(why));
        md!(out);
    }
    configuration(&mut out, p, a);
    headline(&mut out, p, a);
    prompt_ops(&mut out, p);
    tables::ops(&mut out, p, a);
    tables::layers(&mut out, p, a);
    tables::counters(&mut out, a);
    findings::findings(&mut out, a);
    findings::opportunities(&mut out, a);
    out
}

/// Text made safe for a table cell (and for one line): pipes escaped, newlines folded.
pub(crate) fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn configuration(out: &mut String, p: &Profile, a: &Analysis) {
    let (ad, t, w) = (&p.adapter, &p.timing, &p.workload);
    md!(out, "## Configuration");
    md!(out);
    md!(out, "| | |");
    md!(out, "|---|---|");
    let mut row = |k: &str, v: String| md!(out, "| {k} | {} |", cell(&v));
    row(
        "Adapter",
        format!("{} ({}, {})", ad.name, ad.backend, ad.device_type),
    );
    let driver = [ad.driver.as_str(), ad.driver_info.as_str()]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(", ");
    row(
        "Driver",
        if driver.is_empty() {
            "unknown".into()
        } else {
            driver
        },
    );
    row(
        "Model",
        format!(
            "{} ({}), {} params, {} layers",
            w.name,
            w.architecture,
            count(w.params),
            w.layers
        ),
    );
    let mut formats = format!("weights {} ({})", w.weights, bytes(w.weight_bytes));
    for (k, v) in &w.settings {
        formats.push_str(&format!("; {k} = {v}"));
    }
    row("Formats", formats);
    let mut timing = format!("{} ({})", t.mode, t.reason);
    if let Some(s) = t.sampling.as_ref().filter(|s| s.stride > 1) {
        timing.push_str(&format!("; 1 in {} dispatches timed", s.stride));
    }
    row("Timing mode", timing);
    row(
        "Graph",
        format!(
            "{} dispatches, {} passes per token",
            w.graph_dispatches_per_token, w.graph_passes_per_token
        ),
    );
    row(
        "Tokens",
        format!(
            "{} decoded{}; figures over {}",
            p.tokens.len(),
            p.warmup_tokens
                .map_or(String::new(), |n| format!(" after {n} warm-up")),
            scope(a)
        ),
    );
    row(
        "Ceilings",
        match &a.ceilings {
            CeilingsUsed::Used { ceilings, .. } => format!(
                "measured by `gpuscope peak` on {}",
                ceilings.identity.device()
            ),
            CeilingsUsed::Absent { reason } => format!("none: {reason}"),
        },
    );
    row(
        "Commit",
        p.commit.clone().unwrap_or_else(|| "unknown".into()),
    );
    row(
        "Profile",
        format!("format {}, written by {}", p.format, p.tool),
    );
    md!(out);
}

fn headline(out: &mut String, p: &Profile, a: &Analysis) {
    md!(out, "## Headline");
    md!(out);
    let h = &a.headline;
    if h.pp.is_none() && h.tg.is_none() {
        md!(out, "No tokens decoded.");
        md!(out);
        return;
    }
    md!(out, "| test | tok/s (median) | p10–p90 tok/s | tokens |");
    md!(out, "|---|--:|--:|--:|");
    let row = |out: &mut String, name: String, r: &TokRate| {
        let spread = match (r.p10, r.p90) {
            (Some(lo), Some(hi)) => format!("{lo:.1}–{hi:.1}"),
            _ => "one measurement".into(),
        };
        md!(out, "| {name} | {:.1} | {spread} | {} |", r.median, r.n);
    };
    if let Some(pp) = &h.pp {
        row(out, format!("pp{}", pp.n), pp);
    }
    if let Some(tg) = &h.tg {
        row(out, format!("tg{}", p.tokens.len()), tg);
    }
    md!(out);
    let s = &a.tokens_steady;
    if let Some(w) = s.wall_ns {
        let gpu = s
            .gpu_busy_ns
            .map_or("GPU busy unknown".into(), |g| match &a.estimate {
                Some(e) if s.gpu_busy_estimated => {
                    format!("GPU busy {} ms per token, {}", ms(g.median), e.basis())
                }
                _ => format!(
                    "GPU busy median {} ms (p10–p90 {}–{} ms, {} tokens timed)",
                    ms(g.median),
                    ms(g.p10),
                    ms(g.p90),
                    g.count
                ),
            });
        md!(
            out,
            "Per token ({}): wall median {} ms (p10–p90 {}–{} ms); {gpu}.",
            scope(a),
            ms(w.median),
            ms(w.p10),
            ms(w.p90)
        );
        md!(out);
    }
    if let Some(r) = &a.roofline.what_it_would_take {
        md!(
            out,
            "With its top {} ops at their target share of the ceiling: {:.1} → {:.1} tok/s ({} → {} per token).",
            r.savings.len(),
            r.tok_per_s_now,
            r.tok_per_s_after,
            duration(r.token_now_ns),
            duration(r.token_after_ns)
        );
        md!(out);
    }
}

/// The prompt's GPU time by op (batched prefill), where some of it was timed.
fn prompt_ops(out: &mut String, p: &Profile) {
    let Some(pr) = &p.prompt else { return };
    let timed: u64 = pr.ops.iter().map(|o| o.gpu_ns).sum();
    if timed == 0 {
        return;
    }
    md!(out, "## Prompt ops");
    md!(out);
    md!(
        out,
        "{} prompt tokens ({}): GPU time by op from its timed dispatches' spans, each with its timestamps' cost.",
        pr.tokens,
        cell(&pr.method)
    );
    md!(out);
    md!(out, "| op | calls | timed | total ms | avg µs | % GPU |");
    md!(out, "|---|--:|--:|--:|--:|--:|");
    for o in pr.ops.iter().filter(|o| o.timed_calls > 0) {
        md!(
            out,
            "| {} | {} | {} | {} | {:.1} | {:.1} |",
            cell(&o.name()),
            o.calls,
            o.timed_calls,
            ms(o.gpu_ns),
            o.mean_ns().unwrap_or(0.0) / 1e3,
            100.0 * o.gpu_ns as f64 / timed as f64
        );
    }
    md!(out);
}

fn status_word(s: CheckStatus) -> &'static str {
    match s {
        CheckStatus::Ok => "ok",
        CheckStatus::Fail => "**FAIL**",
        CheckStatus::NotApplicable => "n/a",
    }
}

fn item_word(s: ItemStatus) -> &'static str {
    match s {
        ItemStatus::Ok => "ok",
        ItemStatus::Warn => "**warn**",
        ItemStatus::Unknown => "unknown",
    }
}
