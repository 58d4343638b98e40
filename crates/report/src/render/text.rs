//! The plain-text report printed by `gpuscope profile` and `gpuscope report`.
//!
//! Sections, in order: run (adapter, timing, workload, setup, ceilings), steady state,
//! tokens, ops (with the roofline columns), roofline per token, layers, timeline,
//! memory, counters (with checks, timestamp health and overhead), checklist,
//! bottleneck. Long runs and deep models are shortened so the report fits a
//! terminal: at most 16 token lines past 32 tokens, and a compact layer strip past 16
//! layers. Every median is printed with its p10–p90 spread and its count.

use std::fmt::Write;

use super::counters::counter_cells;
use super::units::{bytes, count, duration, ms, op_cells, opt, opt_ms, rate, spread_ms, us};
use crate::analysis::{
    analyze, Analysis, CheckStatus, LayerTimeSource, SpanCounts, TokenSelection, TokenStats,
};
use gpuscope_trace::{Profile, TimingMode};

/// All tokens are listed up to this many; beyond, the first and last
/// [`TOKENS_SHOWN_EACH_END`].
pub const MAX_TOKENS_LISTED: usize = 32;
pub const TOKENS_SHOWN_EACH_END: usize = 8;
/// One line per layer up to this many layers; beyond, a strip.
pub const MAX_LAYERS_LISTED: usize = 16;
const LAYERS_PER_STRIP_LINE: usize = 4;

/// Appends one formatted line; writing to a `String` cannot fail.
macro_rules! emit {
    ($out:expr) => { $out.push('\n') };
    ($out:expr, $($arg:tt)*) => {{
        let _ = writeln!($out, $($arg)*);
    }};
}

mod checklist;
mod memory;
mod roofline;
pub(crate) mod steady;
mod timeline;

/// Analyses `p` and renders the full report.
pub fn render_text(p: &Profile) -> String {
    render_analysis_text(p, &analyze(p))
}

/// Renders a report from an analysis already computed for `p`.
pub fn render_analysis_text(p: &Profile, a: &Analysis) -> String {
    let mut out = String::new();
    run(&mut out, p);
    roofline::ceilings(&mut out, a);
    steady::section(&mut out, p, a);
    estimate(&mut out, a);
    tokens(&mut out, p, a);
    ops(&mut out, p, a);
    correction(&mut out, a);
    roofline::per_token(&mut out, a);
    layers(&mut out, p, a);
    timeline::section(&mut out, p, a);
    memory::section(&mut out, p, a);
    counters(&mut out, p, a);
    checklist::section(&mut out, a);
    bottleneck(&mut out, a);
    out
}

/// The op table corrected for the timestamps around each timed dispatch: measured and
/// corrected side by side (the corrected one describes the untimed program).
fn correction(out: &mut String, a: &Analysis) {
    let Some(c) = &a.correction else { return };
    emit!(out);
    emit!(
        out,
        "Corrected for the instrument: timestamps add {} to each timed dispatch (`peak`), floor {}; dispatch time per token {} ms measured, {} ms corrected",
        duration(c.timestamp_ns),
        duration(c.floor_ns),
        ms(c.measured_per_token_ns),
        ms(c.corrected_per_token_ns)
    );
    let width = c
        .ops
        .rows
        .iter()
        .map(|r| r.op.len())
        .max()
        .unwrap_or(0)
        .max(5);
    emit!(
        out,
        "  {:<width$} {:>12} {:>13} {:>16}",
        "op",
        "% measured",
        "% corrected",
        "avg µs corrected"
    );
    let measured: std::collections::HashMap<&str, Option<f64>> = a
        .ops
        .rows
        .iter()
        .map(|r| (r.op.as_str(), r.gpu_percent))
        .collect();
    for r in &c.ops.rows {
        emit!(
            out,
            "  {:<width$} {:>12} {:>13} {:>16}",
            r.op,
            opt(measured.get(r.op.as_str()).copied().flatten(), 1),
            opt(r.gpu_percent, 1),
            r.avg_gpu_ns.map_or_else(|| "-".into(), us)
        );
    }
}

/// A program on several GPUs or queues: each queue's steps and GPU time.
fn gpu_queues(out: &mut String, p: &Profile) {
    for (q, name) in p.gpu_tracks.iter().enumerate() {
        let steps: Vec<&gpuscope_trace::TokenRecord> = p
            .tokens
            .iter()
            .filter(|t| t.gpu_track == q as u32)
            .collect();
        let busy =
            gpuscope_trace::stats::saturating_sum(steps.iter().filter_map(|t| t.gpu_busy_ns));
        emit!(
            out,
            "GPU {q}:    {name}: {} steps, {} ms GPU busy in all",
            steps.len(),
            ms(busy)
        );
    }
}

/// Sampled timing's estimate: what it rests on, and how many more tokens would make it
/// firm.
fn estimate(out: &mut String, a: &Analysis) {
    let Some(e) = &a.estimate else { return };
    emit!(out);
    emit!(
        out,
        "Sampled estimate: per-op, per-layer and GPU-busy times below are {} (the mean of each dispatch's samples over {} steady tokens; one dispatch in {} timed per token): {} ms of dispatch time per token",
        e.basis(),
        e.tokens,
        e.stride,
        ms(e.per_token_ns)
    );
    if e.is_thin() {
        emit!(
            out,
            "  {} of {} dispatches have fewer than {} samples: decode about {} more tokens (--tokens) for {} samples of each",
            e.thin,
            e.sites,
            crate::analysis::sampled::SAMPLES_WANTED,
            e.more_tokens,
            crate::analysis::sampled::SAMPLES_WANTED
        );
    }
}

fn run(out: &mut String, p: &Profile) {
    let (ad, t, w) = (&p.adapter, &p.timing, &p.workload);
    emit!(
        out,
        "gpuscope profile (format {}, written by {})",
        p.format,
        p.tool
    );
    emit!(out);
    let driver = match (ad.driver.as_str(), ad.driver_info.as_str()) {
        ("", "") => "unknown".to_string(),
        (d, "") | ("", d) => d.to_string(),
        (d, i) => format!("{d} ({i})"),
    };
    emit!(
        out,
        "Adapter:  {}, backend {}, driver {}, device type {}",
        ad.name,
        ad.backend,
        driver,
        ad.device_type
    );
    emit!(
        out,
        "Timing:   {} ({}), timestamp period {} ns/tick",
        t.mode,
        t.reason,
        t.timestamp_period_ns
    );
    if let Some(s) = &t.sampling {
        emit!(
            out,
            "          sampled: one dispatch in {} carries timestamps (which, the line above says)",
            s.stride
        );
    }
    if w.name.is_empty() && w.params == 0 && w.graph_dispatches_per_token == 0 {
        // A program instrumented with gpuscope-record describes no model.
        emit!(out, "Workload: not described (a program's own steps)");
    } else if w.params == 0 {
        // An attached program: no model description, only what its labels and steps show.
        let layers = match w.layers {
            0 => "layers not named by its labels".to_string(),
            n => format!("{n} layers named by its labels"),
        };
        emit!(
            out,
            "Workload: {} ({}), model not described; {layers}; graph: median {} dispatches, {} passes per step",
            w.name,
            w.architecture,
            w.graph_dispatches_per_token,
            w.graph_passes_per_token
        );
    } else {
        emit!(
            out,
            "Workload: {} ({}), weights {}, {} params, {} of weights, {} layers; graph: {} dispatches, {} passes per token",
            w.name,
            w.architecture,
            w.weights,
            count(w.params),
            bytes(w.weight_bytes),
            w.layers,
            w.graph_dispatches_per_token,
            w.graph_passes_per_token
        );
    }
    let s = &p.setup;
    if p.setup_wall_ns == 0 && *s == Default::default() {
        emit!(
            out,
            "Setup:    not recorded apart (a program's setup is in its first steps)"
        );
    } else {
        emit!(
            out,
            "Setup:    {} ms wall; created {} buffers, {} bind groups, {} pipelines; {} uploaded",
            ms(p.setup_wall_ns),
            s.buffers_created,
            s.bind_groups_created,
            s.pipelines_created,
            bytes(s.bytes_uploaded)
        );
        setup_parts(out, p);
    }
    if !w.settings.is_empty() {
        let settings: Vec<String> = w
            .settings
            .iter()
            .map(|(k, v)| format!("{k} = {v}"))
            .collect();
        emit!(out, "Settings: {}", settings.join("; "));
    }
    if let Some(c) = &p.commit {
        emit!(out, "Commit:   {c}");
    }
    gpu_queues(out, p);
    if let Some(i) = p.instrumentation.as_ref().filter(|i| i.is_partial()) {
        emit!(
            out,
            "Instrumentation: partial: {} compute passes opened without the instrumented pass (not timed), {} command buffers the recorder did not encode, {} dispatches outside steps (counted, not attributed to a token)",
            i.uninstrumented_passes,
            i.uninstrumented_command_buffers,
            i.dispatches_outside_steps
        );
    }
    for note in &p.notes {
        emit!(out, "Note:     {note}");
    }
    if let Some(why) = &p.incomplete {
        emit!(out, "INCOMPLETE: {why}; what follows is what was measured");
    }
}

fn tokens(out: &mut String, p: &Profile, a: &Analysis) {
    emit!(out);
    emit!(out, "Tokens: {} decoded", p.tokens.len());
    if p.tokens.is_empty() {
        return;
    }
    emit!(
        out,
        "  {:>5} {:>6} {:>8} {:>10} {:>12} {:>9}",
        "token",
        "pos",
        "id",
        "wall ms",
        "GPU-busy ms",
        "tok/s"
    );
    let n = p.tokens.len();
    let shown_each_end = if n <= MAX_TOKENS_LISTED {
        n
    } else {
        TOKENS_SHOWN_EACH_END
    };
    for (i, t) in p.tokens.iter().enumerate() {
        if i == shown_each_end && n > MAX_TOKENS_LISTED {
            emit!(
                out,
                "  ... {} tokens not shown ...",
                n - 2 * TOKENS_SHOWN_EACH_END
            );
        }
        if i >= shown_each_end && i < n - shown_each_end {
            continue;
        }
        let tok_s = opt(crate::analysis::tokens::rate_per_s(t.wall_ns), 1);
        emit!(
            out,
            "  {:>5} {:>6} {:>8} {:>10} {:>12} {:>9}",
            t.index,
            t.position,
            t.token_id,
            ms(t.wall_ns),
            opt_ms(t.gpu_busy_ns),
            tok_s
        );
    }
    if let Some(pr) = &p.prompt {
        emit!(
            out,
            "  prompt: {} tokens in {} ms = {} tok/s ({}); the tokens above continue from its KV cache",
            pr.tokens,
            ms(pr.wall_ns),
            opt(crate::analysis::tokens::rate_per_s(pr.wall_ns).map(|r| r * pr.tokens as f64), 1),
            pr.method
        );
        prompt_ops(out, &pr.ops);
    }
    token_summary(out, &a.tokens);
    if a.tokens_steady.count() > 0 {
        token_summary(out, &a.tokens_steady);
    }
    weight_stream(out, p, a);
}

/// Prompt processing's GPU time by op: the spans of its timed dispatches (with sampled
/// timing, some of each op's calls), largest first; nothing where none was timed.
fn prompt_ops(out: &mut String, ops: &[gpuscope_trace::PromptOp]) {
    let timed: u64 = ops.iter().map(|o| o.gpu_ns).sum();
    if timed == 0 {
        return;
    }
    let (calls, timed_calls) = ops
        .iter()
        .fold((0, 0), |(c, t), o| (c + o.calls, t + o.timed_calls));
    let which = if timed_calls == calls {
        "every dispatch timed".to_string()
    } else {
        format!("{timed_calls} of {calls} dispatches timed: totals are of the timed calls")
    };
    emit!(
        out,
        "  prompt GPU time by op ({which}; a span includes its timestamps' cost):"
    );
    emit!(
        out,
        "    {:<48} {:>6} {:>6} {:>10} {:>10} {:>7}",
        "op",
        "calls",
        "timed",
        "total ms",
        "avg µs",
        "% GPU"
    );
    for o in ops.iter().filter(|o| o.timed_calls > 0) {
        emit!(
            out,
            "    {:<48} {:>6} {:>6} {:>10} {:>10} {:>7.1}",
            o.name(),
            o.calls,
            o.timed_calls,
            ms(o.gpu_ns),
            opt(o.mean_ns().map(|ns| ns / 1e3), 1),
            100.0 * o.gpu_ns as f64 / timed as f64
        );
    }
    emit!(
        out,
        "    {:<48} {:>6} {:>6} {:>10}",
        "total",
        calls,
        timed_calls,
        ms(timed)
    );
}

/// Every decoded token reads every weight once: weight bytes over the token time is the
/// bandwidth the decoder sustains, the figure to hold against `gpuscope peak`.
fn weight_stream(out: &mut String, p: &Profile, a: &Analysis) {
    let stats = if a.tokens_steady.count() > 0 {
        &a.tokens_steady
    } else {
        &a.tokens
    };
    let bytes = p.workload.weight_bytes as f64;
    if bytes == 0.0 {
        return;
    }
    let Some(wall) = stats.wall_ns else { return };
    let mut line = format!(
        "  weights streamed: {} per token = {} GB/s at the median wall (n={})",
        super::units::bytes(p.workload.weight_bytes),
        rate(Some(bytes / wall.median.max(1) as f64)),
        wall.count
    );
    if let Some(busy) = stats.gpu_busy_ns {
        line.push_str(&format!(
            ", {} GB/s over GPU-busy time",
            rate(Some(bytes / busy.median.max(1) as f64))
        ));
    }
    emit!(out, "{line}");
}

fn token_summary(out: &mut String, s: &TokenStats) {
    let Some(w) = s.wall_ns else { return };
    let which = match (s.selection, s.tokens.first(), s.tokens.last()) {
        (TokenSelection::All, ..) => format!("all {} tokens", s.count()),
        (TokenSelection::SkipFirst, Some(f), Some(l)) => {
            format!("tokens {f}-{l} (first skipped)")
        }
        (TokenSelection::Steady, Some(f), Some(l)) => {
            format!("steady tokens ({} in {f}-{l})", s.count())
        }
        (..) => "no tokens".into(),
    };
    let gpu = match s.gpu_busy_ns {
        Some(g) if s.gpu_busy_estimated => format!(
            "GPU busy {} ms per token, estimated from sampled dispatch spans{}",
            ms(g.median),
            if s.gpu_busy_corrected {
                " corrected for their timestamps"
            } else {
                ""
            }
        ),
        Some(g) => format!(
            "GPU busy median {} ms ({}; {} of {} tokens timed)",
            ms(g.median),
            spread_ms(&g),
            g.count,
            s.count()
        ),
        None => "GPU busy unknown".into(),
    };
    emit!(
        out,
        "  {which}: wall median {} ms ({}), min {} ms, max {} ms; {gpu}; {} tok/s at median",
        ms(w.median),
        spread_ms(&w),
        ms(w.min),
        ms(w.max),
        opt(s.tok_per_s, 1)
    );
    if let (Some(l), Some(e), Some(sub), Some(wait)) = (
        s.cpu_launch_ns,
        s.cpu_encode_ns,
        s.cpu_submit_ns,
        s.cpu_wait_ns,
    ) {
        emit!(
            out,
            "    CPU per token (median, n={}): launch {} ms (p10-p90 {}-{}; encode {} ms, submit {} ms), waiting on the GPU {} ms (p10-p90 {}-{})",
            l.count,
            ms(l.median),
            ms(l.p10),
            ms(l.p90),
            ms(e.median),
            ms(sub.median),
            ms(wait.median),
            ms(wait.p10),
            ms(wait.p90)
        );
    }
}

fn ops(out: &mut String, p: &Profile, a: &Analysis) {
    let o = &a.ops;
    emit!(out);
    let source = match (o.total_gpu_ns, &a.estimate) {
        (Some(_), Some(e)) => format!("GPU time {}, {}", e.basis(), steady::scope(a)),
        (Some(_), None) => format!("GPU time from dispatch spans, {}", steady::scope(a)),
        (None, _) => format!(
            "no dispatch GPU times: timing {}; {}",
            p.timing.mode,
            steady::scope(a)
        ),
    };
    emit!(out, "Ops ({source})");
    if o.rows.is_empty() {
        emit!(out, "  no dispatches recorded");
        return;
    }
    let width = o.rows.iter().map(|r| r.op.len()).max().unwrap_or(0).max(5);
    emit!(
        out,
        "  {:<width$} {:>7} {:>10} {:>10} {:>6} {:>8} {:>9} {:>7} {:>7} {:>8}",
        "op",
        "calls",
        "total ms",
        "avg µs",
        "% GPU",
        "GB/s",
        "GFLOP/s",
        "FLOP/B",
        "% ceil",
        "bound"
    );
    for (r, roof) in o.rows.iter().zip(&a.roofline.ops) {
        let [calls, total, avg, pct, gbps, gflops, intensity, ceil, bound] = op_cells(r, roof);
        emit!(
            out,
            "  {:<width$} {calls:>7} {total:>10} {avg:>10} {pct:>6} {gbps:>8} {gflops:>9} {intensity:>7} {ceil:>7} {bound:>8}",
            r.op
        );
    }
    emit!(
        out,
        "  {:<width$} {:>7} {:>10}",
        "total",
        o.calls,
        opt_ms(o.total_gpu_ns)
    );
    if o.total_gpu_ns.is_some() && o.untimed_calls > 0 {
        emit!(
            out,
            "  {} of {} calls have no valid GPU span and are left out of times and rates",
            o.untimed_calls,
            o.calls
        );
    } else if o.total_gpu_ns.is_none() && p.timing.mode != TimingMode::Dispatch {
        emit!(out, "  per-op GPU times need timing mode `dispatch`");
    }
    if a.roofline.ceilings.is_none() {
        emit!(
            out,
            "  % ceil and bound need measured ceilings (see Ceilings above)"
        );
    }
}

fn layers(out: &mut String, p: &Profile, a: &Analysis) {
    let l = &a.layers;
    emit!(out);
    if l.rows.iter().all(|r| r.gpu_ns_median.is_none()) {
        emit!(out, "Layers: GPU time unknown (timing {})", p.timing.mode);
        return;
    }
    let sources: Vec<LayerTimeSource> = l.rows.iter().filter_map(|r| r.source).collect();
    let source = if sources.iter().all(|s| *s == LayerTimeSource::Estimated) {
        "sampled dispatch spans, estimated (see Sampled estimate)"
    } else if sources.iter().all(|s| *s == LayerTimeSource::PassSpans) {
        "pass spans"
    } else if sources.iter().all(|s| *s == LayerTimeSource::DispatchSpans) {
        "summed dispatch spans"
    } else {
        "pass spans, else summed dispatch spans (*)"
    };
    emit!(
        out,
        "Layers (GPU ms per token, median over {}, from {source})",
        steady::scope(a)
    );
    let mark = |r: &crate::analysis::LayerRow| match r.source {
        Some(LayerTimeSource::DispatchSpans) if sources.contains(&LayerTimeSource::PassSpans) => {
            "*"
        }
        _ => "",
    };
    let layer_count = l.layer_rows().count();
    let width = l.rows.iter().map(|r| r.name.len()).max().unwrap_or(0);
    let mut strip: Vec<String> = Vec::new();
    for r in &l.rows {
        let t = format!("{}{}", opt_ms(r.gpu_ns_median), mark(r));
        let estimated = r.source == Some(LayerTimeSource::Estimated);
        if layer_count > MAX_LAYERS_LISTED && r.layer.is_some() {
            strip.push(match (estimated, r.gpu_ns) {
                (false, Some(g)) => format!("{} {t} ({}-{})", r.name, ms(g.p10), ms(g.p90)),
                _ => format!("{} {t}", r.name),
            });
            continue;
        }
        flush_strip(out, &mut strip);
        let detail = match (estimated, r.gpu_ns) {
            (true, _) => "estimated".to_string(),
            (false, Some(g)) => format!(
                "p10-p90 {}-{} ms, {} tokens timed",
                ms(g.p10),
                ms(g.p90),
                r.tokens_timed
            ),
            (false, None) => format!("{} tokens timed", r.tokens_timed),
        };
        emit!(out, "  {:<width$} {:>10}   ({detail})", r.name, t);
    }
    flush_strip(out, &mut strip);
    if let Some(e) = &l.extremes {
        emit!(
            out,
            "  layers: min {} {} ms, median {} {} ms, max {} {} ms",
            e.min.name,
            ms(e.min.gpu_ns),
            e.median.name,
            ms(e.median.gpu_ns),
            e.max.name,
            ms(e.max.gpu_ns)
        );
    }
}

fn flush_strip(out: &mut String, strip: &mut Vec<String>) {
    for chunk in strip.chunks(LAYERS_PER_STRIP_LINE) {
        emit!(out, "  {}", chunk.join("  "));
    }
    strip.clear();
}

fn counters(out: &mut String, p: &Profile, a: &Analysis) {
    let c = &a.counters;
    emit!(out);
    emit!(
        out,
        "Counters per token (after the first: the {} tokens after the first)",
        c.steady_tokens
    );
    emit!(
        out,
        "  {:<22} {:>12} {:>10} {:>15} {:>10}",
        "counter",
        "first token",
        "median",
        "p10-p90",
        "max"
    );
    for row in counter_cells(c, "-") {
        emit!(
            out,
            "  {:<22} {:>12} {:>10} {:>15} {:>10}",
            row.name,
            row.first,
            row.median,
            row.spread,
            row.max
        );
    }
    emit!(out, "Checks");
    for ch in &c.checks {
        let status = match ch.status {
            CheckStatus::Ok => "ok",
            CheckStatus::Fail => "FAIL",
            CheckStatus::NotApplicable => "n/a",
        };
        emit!(
            out,
            "  {status:<4}  {}: expected {}, observed {}",
            ch.name,
            ch.expected,
            ch.observed
        );
    }
    timestamps(out, p, a);
    if let Some(o) = crate::analysis::overhead::overhead(p) {
        emit!(out, "Overhead: {}", o.sentence());
    }
}

fn timestamps(out: &mut String, p: &Profile, a: &Analysis) {
    let h = &a.timestamps;
    let t = h.total();
    let split = format!("dispatch {}, pass {}", h.dispatches.valid, h.passes.valid);
    if t.recorded() == 0 {
        emit!(out, "Timestamps: none recorded (timing {})", p.timing.mode);
    } else if t.issues() == 0 {
        emit!(out, "Timestamps: all {} spans valid ({split})", t.valid);
    } else {
        emit!(
            out,
            "Timestamps: {} of {} spans valid ({split}); left out: {} (dispatch: {}; pass: {})",
            t.valid,
            t.recorded(),
            issues(&t),
            issues(&h.dispatches),
            issues(&h.passes)
        );
    }
}

fn issues(c: &SpanCounts) -> String {
    format!(
        "{} zero, {} negative, {} out of order",
        c.zero, c.negative, c.out_of_order
    )
}

fn bottleneck(out: &mut String, a: &Analysis) {
    let b = &a.bottleneck;
    emit!(out);
    emit!(out, "Bottleneck: {}", b.headline);
    for e in &b.evidence {
        emit!(out, "  - {e}");
    }
}

/// The setup's CPU spans by name, the longest six (phases hold the creations they
/// made, so the parts overlap).
fn setup_parts(out: &mut String, p: &Profile) {
    let parts = crate::analysis::setup::setup_parts(p);
    if parts.is_empty() {
        return;
    }
    let list: Vec<String> = parts
        .iter()
        .take(6)
        .map(|s| {
            let n = if s.count > 1 {
                format!(" ×{}", s.count)
            } else {
                String::new()
            };
            format!("{}{n} {} ms", s.name, ms(s.ns))
        })
        .collect();
    emit!(
        out,
        "          where it went (CPU spans; phases hold their creations): {}",
        list.join(", ")
    );
}
