//! `gpuscope diff` output: text, Markdown and JSON from one [`Diff`] (and the gate's
//! result, when limits were given).
//!
//! Text and Markdown share one document: [`document`] turns the analysis into headings,
//! lines and tables of already-formatted cells, and [`text`] and [`md`] lay them out.
//! So both show the same rows with the same numbers, and neither computes one. JSON is
//! the analysis itself, serialized ([`json`]).
//!
//! Tables keep to what a reader acts on: every op and layer, but only the labels whose
//! verdict is slower or faster (the JSON has every label) and only the counters that
//! changed.

pub mod md;
pub mod text;

use serde::Serialize;

use super::units::{bytes, ms, opt};
use crate::analysis::diff::{
    CounterScope, Diff, LayerDiff, Mismatch, MismatchKind, Pair, Presence, RateDiff, SampleUnit,
    TimeDiff, Verdict,
};
use crate::analysis::gate::{CheckOutcome, GateResult, Limit, Observed, Subject};
use gpuscope_trace::FormatVersion;

pub use md::render_diff_md;
pub use text::render_diff_text;

/// The JSON output's own version (`diff_format`), changed with its fields (1.1:
/// `prompt_ops`).
pub const DIFF_JSON_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 1 };

/// Column alignment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// One piece of the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Heading(String),
    /// A line of prose.
    Line(String),
    /// A line that must not be missed (model or adapter mismatch, gate failure).
    Warning(String),
    Table {
        columns: Vec<(String, Align)>,
        rows: Vec<Vec<String>>,
    },
}

/// The diff (and gate) as a document.
pub fn document(d: &Diff, gate: Option<&GateResult>) -> Vec<Block> {
    let mut out = Vec::new();
    runs(&mut out, d);
    headline(&mut out, d);
    prompt_ops(&mut out, d);
    ops(&mut out, d);
    labels(&mut out, d);
    layers(&mut out, d);
    counters(&mut out, d);
    if let Some(g) = gate {
        gate_section(&mut out, g);
    }
    out
}

/// The JSON output: the analysis as it is, under a version.
pub fn json(d: &Diff, gate: Option<&GateResult>) -> String {
    #[derive(Serialize)]
    struct Out<'a> {
        diff_format: FormatVersion,
        #[serde(flatten)]
        diff: &'a Diff,
        gate: Option<&'a GateResult>,
    }
    let out = Out {
        diff_format: DIFF_JSON_FORMAT,
        diff: d,
        gate,
    };
    // Plain data with string keys: serialization cannot fail.
    serde_json::to_string_pretty(&out).expect("a diff serializes") + "\n"
}

fn cols(names: &[(&str, Align)]) -> Vec<(String, Align)> {
    names.iter().map(|(n, a)| (n.to_string(), *a)).collect()
}

fn runs(out: &mut Vec<Block>, d: &Diff) {
    out.push(Block::Heading("gpuscope diff".into()));
    for (side, r) in [("base", &d.runs.base), ("new", &d.runs.new)] {
        let commit = r
            .commit
            .as_ref()
            .map(|c| format!(", commit {c}"))
            .unwrap_or_default();
        out.push(Block::Line(format!(
            "{side}: {} on {}, timing {}, {} tokens ({}, format {}{commit})",
            r.workload, r.adapter, r.timing, r.tokens, r.tool, r.format
        )));
    }
    for m in &d.mismatches {
        out.push(Block::Warning(mismatch(m)));
    }
    if let Some(m) = &d.machine_change {
        out.push(Block::Warning(format!(
            "WARNING: everything moved together: wall x{:.3} and {} of {} ops ({:.0}% of the base GPU time) by about the same factor. The machine or its load changed between the runs, not the code; the gate cannot judge time limits. Rerun both builds on one quiet machine, alternating",
            m.factor,
            m.ops_moved,
            m.ops,
            m.share_moved * 100.0
        )));
    }
    for n in &d.notes {
        out.push(Block::Line(format!("note: {n}")));
    }
    if !d.settings.is_empty() {
        out.push(Block::Heading("Settings changed".into()));
        let none = || "(unset)".to_string();
        out.push(Block::Table {
            columns: cols(&[
                ("setting", Align::Left),
                ("base", Align::Left),
                ("new", Align::Left),
            ]),
            rows: d
                .settings
                .iter()
                .map(|s| {
                    vec![
                        s.name.clone(),
                        s.base.clone().unwrap_or_else(none),
                        s.new.clone().unwrap_or_else(none),
                    ]
                })
                .collect(),
        });
    }
}

fn mismatch(m: &Mismatch) -> String {
    let why = match m.kind {
        MismatchKind::Model => "the runs measured different work",
        MismatchKind::Adapter => "the runs ran on different hardware or drivers",
        MismatchKind::Timing => "timing overhead and counters differ between the runs",
        MismatchKind::Engine => "DIFFERENT ENGINES: the ops are different kernels; compare with --by family, and read each family's time as what each engine spends on that work",
    };
    format!(
        "WARNING: {} differs: base `{}`, new `{}` ({why})",
        m.what, m.base, m.new
    )
}

/// `+10.5%`, or `-` when unknown.
fn change(c: Option<f64>) -> String {
    c.map_or_else(|| "-".into(), |c| format!("{:+.1}%", c * 100.0))
}

/// A p-value: 4 decimals, `<0.0001` below that, `-` when unknown.
fn p_value(p: Option<f64>) -> String {
    match p {
        None => "-".into(),
        Some(p) if p < 1e-4 => "<0.0001".into(),
        Some(p) => format!("{p:.4}"),
    }
}

fn verdict(v: Verdict) -> &'static str {
    match v {
        Verdict::Slower => "SLOWER",
        Verdict::Faster => "faster",
        Verdict::Noise => "noise",
        Verdict::NotCompared => "not compared",
    }
}

fn median_ms(t: &TimeDiff, side: fn(&TimeDiff) -> Option<u64>) -> String {
    side(t).map_or_else(|| "-".into(), ms)
}

/// The timing cells every table shares: base, new, change, p, verdict.
fn time_cells(t: &TimeDiff) -> Vec<String> {
    vec![
        median_ms(t, |t| t.base.map(|s| s.median_ns)),
        median_ms(t, |t| t.new.map(|s| s.median_ns)),
        change(t.change),
        p_value(t.p_value),
        match t.unit {
            SampleUnit::Estimate => "estimated".to_string(),
            _ => verdict(t.verdict).to_string(),
        },
    ]
}

const TIME_COLUMNS: [(&str, Align); 5] = [
    ("base ms", Align::Right),
    ("new ms", Align::Right),
    ("change", Align::Right),
    ("p", Align::Right),
    ("verdict", Align::Left),
];

fn with_time_columns(first: &[(&str, Align)], last: &[(&str, Align)]) -> Vec<(String, Align)> {
    let mut v = cols(first);
    v.extend(cols(&TIME_COLUMNS));
    v.extend(cols(last));
    v
}

fn headline(out: &mut Vec<Block>, d: &Diff) {
    let h = &d.headline;
    out.push(Block::Heading("Headline".into()));
    out.push(Block::Line(format!(
        "{} base and {} new steady tokens (the first token of each run left out); change is \
         the Hodges-Lehmann shift over the base median; significant below p = {}, counted \
         from a change of {:.1}%",
        h.tokens.base,
        h.tokens.new,
        d.options.alpha,
        d.options.min_effect * 100.0
    )));
    let mut rows = vec![
        rate_row("tok/s (median wall)", &h.tok_per_s),
        row("wall ms per token", &h.wall),
        row("GPU-busy ms per token", &h.gpu_busy),
    ];
    if let Some(pp) = &h.prompt_tok_per_s {
        rows.push(rate_row("prompt tok/s (one run each)", pp));
    }
    out.push(Block::Table {
        columns: cols(&[
            ("metric", Align::Left),
            ("base", Align::Right),
            ("new", Align::Right),
            ("change", Align::Right),
            ("p", Align::Right),
            ("verdict", Align::Left),
        ]),
        rows,
    });
}

/// The prompt's GPU time by op in each run (one prompt each: no test).
fn prompt_ops(out: &mut Vec<Block>, d: &Diff) {
    if d.prompt_ops.is_empty() {
        return;
    }
    out.push(Block::Heading("Prompt ops".into()));
    out.push(Block::Line(
        "the prompt's GPU ms by op (its timed dispatches' spans, each with its timestamps' cost); one prompt per run, so no test".into(),
    ));
    let rows = d
        .prompt_ops
        .iter()
        .map(|o| {
            vec![
                o.op.clone(),
                o.calls.base.to_string(),
                o.calls.new.to_string(),
                opt(o.ms.base, 3),
                opt(o.ms.new, 3),
                change(o.ms.change),
            ]
        })
        .collect();
    out.push(Block::Table {
        columns: cols(&[
            ("op", Align::Left),
            ("base calls", Align::Right),
            ("new calls", Align::Right),
            ("base ms", Align::Right),
            ("new ms", Align::Right),
            ("change", Align::Right),
        ]),
        rows,
    });
}

/// A rate row: no test (one number per run), so no p and no verdict.
fn rate_row(name: &str, r: &RateDiff) -> Vec<String> {
    vec![
        name.to_string(),
        opt(r.base, 1),
        opt(r.new, 1),
        change(r.change),
        String::new(),
        String::new(),
    ]
}

fn row(name: &str, t: &TimeDiff) -> Vec<String> {
    let mut r = vec![name.to_string()];
    r.extend(time_cells(t));
    r
}

fn presence(p: Presence) -> &'static str {
    match p {
        Presence::Both => "",
        Presence::Added => "added",
        Presence::Removed => "removed",
    }
}

/// `9`, `9 -> 10`: a per-token count in both runs.
fn per_token_pair(p: Pair<f64>, fmt: fn(f64) -> String) -> String {
    if p.base == p.new {
        fmt(p.base)
    } else {
        format!("{} -> {}", fmt(p.base), fmt(p.new))
    }
}

fn ops(out: &mut Vec<Block>, d: &Diff) {
    out.push(Block::Heading("Ops (GPU time per token)".into()));
    if d.ops.is_empty() {
        out.push(Block::Line("no dispatches recorded".into()));
        return;
    }
    out.push(Block::Table {
        columns: with_time_columns(
            &[("op", Align::Left)],
            &[
                ("calls/token", Align::Right),
                ("declared bytes/token", Align::Right),
                ("", Align::Left),
            ],
        ),
        rows: d
            .ops
            .iter()
            .map(|o| {
                let mut r = vec![o.op.clone()];
                r.extend(time_cells(&o.time));
                r.push(per_token_pair(o.calls_per_token, |x| format!("{x:.1}")));
                r.push(per_token_pair(o.bytes_per_token, |x| {
                    bytes(x.round() as u64)
                }));
                r.push(presence(o.presence).into());
                r
            })
            .collect(),
    });
}

fn labels(out: &mut Vec<Block>, d: &Diff) {
    let changed: Vec<_> = d
        .labels
        .iter()
        .filter(|l| {
            l.presence != Presence::Both
                || matches!(l.time.verdict, Verdict::Slower | Verdict::Faster)
        })
        .collect();
    out.push(Block::Heading("Labels that changed".into()));
    let quiet = d.labels.len() - changed.len();
    if changed.is_empty() {
        out.push(Block::Line(format!(
            "none: all {quiet} labels are noise or not compared"
        )));
        return;
    }
    out.push(Block::Table {
        columns: with_time_columns(
            &[("label", Align::Left), ("op", Align::Left)],
            &[("", Align::Left)],
        ),
        rows: changed
            .iter()
            .map(|l| {
                let mut r = vec![l.label.clone(), l.op.clone()];
                r.extend(time_cells(&l.time));
                r.push(presence(l.presence).into());
                r
            })
            .collect(),
    });
    if quiet > 0 {
        out.push(Block::Line(format!(
            "{quiet} more labels are noise or not compared (all are in the JSON output)"
        )));
    }
}

fn layers(out: &mut Vec<Block>, d: &Diff) {
    out.push(Block::Heading("Layers (GPU time per token)".into()));
    if d.layers.is_empty() {
        out.push(Block::Line("no passes recorded".into()));
        return;
    }
    out.push(Block::Table {
        columns: with_time_columns(&[("section", Align::Left)], &[("", Align::Left)]),
        rows: d
            .layers
            .iter()
            .map(|l: &LayerDiff| {
                let mut r = vec![l.name.clone()];
                r.extend(time_cells(&l.time));
                r.push(presence(l.presence).into());
                r
            })
            .collect(),
    });
}

fn scope(s: CounterScope) -> &'static str {
    match s {
        CounterScope::Setup => "setup",
        CounterScope::FirstToken => "first token",
        CounterScope::SteadyMax => "per token (steady max)",
    }
}

fn counters(out: &mut Vec<Block>, d: &Diff) {
    out.push(Block::Heading("Counters (exact)".into()));
    let changed: Vec<_> = d.counters.iter().filter(|c| c.delta() != 0).collect();
    if changed.is_empty() {
        out.push(Block::Line(format!(
            "all {} counters equal (setup, first token, steady tokens)",
            d.counters.len()
        )));
        return;
    }
    out.push(Block::Table {
        columns: cols(&[
            ("scope", Align::Left),
            ("counter", Align::Left),
            ("base", Align::Right),
            ("new", Align::Right),
            ("delta", Align::Right),
        ]),
        rows: changed
            .iter()
            .map(|c| {
                vec![
                    scope(c.scope).into(),
                    c.name.clone(),
                    c.base.to_string(),
                    c.new.to_string(),
                    format!("{:+}", c.delta()),
                ]
            })
            .collect(),
    });
}

fn gate_section(out: &mut Vec<Block>, g: &GateResult) {
    let failed = g.failures().count();
    out.push(Block::Heading("Gate".into()));
    if failed > 0 {
        out.push(Block::Warning(format!(
            "GATE FAILED: {failed} of {} checks",
            g.checks.len()
        )));
    } else {
        out.push(Block::Line(format!(
            "gate passed: {} checks",
            g.checks.len()
        )));
    }
    out.push(Block::Table {
        columns: cols(&[
            ("result", Align::Left),
            ("check", Align::Left),
            ("limit", Align::Left),
            ("observed", Align::Left),
        ]),
        rows: g
            .checks
            .iter()
            // Failures first, then the rest in the order given.
            .filter(|c| c.outcome == CheckOutcome::Fail)
            .chain(g.checks.iter().filter(|c| c.outcome != CheckOutcome::Fail))
            .map(|c| {
                vec![
                    match c.outcome {
                        CheckOutcome::Fail => "FAIL",
                        CheckOutcome::Pass => "ok",
                        CheckOutcome::NotChecked => "not checked",
                        CheckOutcome::Inconclusive => "inconclusive (machine change)",
                    }
                    .into(),
                    match &c.subject {
                        Subject::TimePerToken => "wall time per token".into(),
                        Subject::Op(name) => format!("{name} time per token"),
                        Subject::Counter(name) => format!("{name} per token"),
                    },
                    match c.limit {
                        Limit::MaxRegress(f) => format!("<= +{:.1}%", f * 100.0),
                        Limit::MaxIncrease(n) => format!("increase <= {n}"),
                    },
                    observed(&c.observed),
                ]
            })
            .collect(),
    });
}

fn observed(o: &Observed) -> String {
    match *o {
        Observed::Time {
            presence: Presence::Added,
            ..
        } => "only in the new run".into(),
        Observed::Time {
            presence: Presence::Removed,
            ..
        } => "only in the base run".into(),
        Observed::Time {
            change: c,
            p_value: p,
            verdict: v,
            ..
        } => match c {
            Some(_) => format!("{} (p {}, {})", change(c), p_value(p), verdict(v)),
            None => "no timed samples in one run".into(),
        },
        Observed::Counter { base, new } => format!("{base} -> {new}"),
    }
}
