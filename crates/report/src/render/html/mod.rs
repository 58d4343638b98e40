//! The self-contained HTML report (`gpuscope report --format html -o FILE`): one file,
//! styles and script inline, no network access when opened.
//!
//! The analysis results go into the page as one JSON object (`<script
//! type="application/json" id="gpuscope-data">`); `report.js` draws the panels from it
//! with hand-rolled SVG (no charting library: the charts are few and simple, and a
//! vendored library would weigh more than the report). Panels: token timeline (wall vs
//! GPU busy), a zoomable dispatch timeline of one token with a legend of its ops, per-op
//! bars, roofline (when ceilings are known), per-layer strip, counters and checks,
//! findings (each checklist item with its evidence and next command).
//!
//! Text is placed by measuring it in the browser: axis tick labels, roofline point labels
//! (greedy, busiest op first, each at the nearest free spot; the op's number or nothing
//! when none is free, with every point in the legend below) and layer names are dropped
//! rather than drawn over one another; long op names wrap at their separators. The
//! browser test (`tests/html.rs`) checks that no two SVG texts overlap.
//!
//! Large profiles stay light: tokens are merged into at most [`MAX_TOKEN_POINTS`]
//! buckets and one token's dispatches are drawn (at most [`MAX_DISPATCHES`]), so the
//! page's size does not grow with the run.

use serde_json::{json, Value};

use crate::analysis::{
    analyze, representative_token, token_buckets, Analysis, CeilingsUsed, CheckStatus, ItemStatus,
    OpRow,
};
use crate::render::text::steady::scope;
use gpuscope_trace::Profile;

/// Points of the token timeline.
pub const MAX_TOKEN_POINTS: usize = 2000;
/// Dispatches of the shown token drawn.
pub const MAX_DISPATCHES: usize = 20_000;

const TEMPLATE: &str = include_str!("report.html");
const STYLE: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");

/// Analyses `p` and renders the page.
pub fn render_html(p: &Profile) -> String {
    render_analysis_html(p, &analyze(p))
}

/// Renders the page from an analysis already computed for `p`.
pub fn render_analysis_html(p: &Profile, a: &Analysis) -> String {
    let data = page_data(p, a).to_string();
    // Inside <script>, `</` could end the element early; JSON allows `<\/` for it.
    let data = data.replace("</", "<\\/");
    TEMPLATE
        .replace(
            "{{TITLE}}",
            &escape(&format!("gpuscope: {}", p.workload.name)),
        )
        .replace("/*{{STYLE}}*/", STYLE)
        .replace("{{DATA}}", &data)
        .replace("/*{{SCRIPT}}*/", SCRIPT)
}

/// Text for HTML content and attribute values.
pub(crate) fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Everything the page draws, as JSON.
pub fn page_data(p: &Profile, a: &Analysis) -> Value {
    json!({
        "meta": meta(p, a),
        "tokens": tokens(p, a),
        "dispatches": dispatch_timeline(p, a),
        "ops": ops(a),
        "roofline": roofline(a),
        "layers": layers(a),
        "counters": counters(a),
        "findings": findings(a),
    })
}

fn meta(p: &Profile, a: &Analysis) -> Value {
    let w = &p.workload;
    let h = &a.headline;
    json!({
        "workload": w.name,
        "adapter": format!("{} ({}, {})", p.adapter.name, p.adapter.backend, p.adapter.device_type),
        "driver": format!("{} {}", p.adapter.driver, p.adapter.driver_info).trim(),
        "weights": w.weights,
        "timing": format!("{} ({})", p.timing.mode, p.timing.reason),
        "commit": p.commit,
        "incomplete": p.incomplete,
        "scope": scope(a),
        "tokens": p.tokens.len(),
        "tg": h.tg.map(|r| json!({"median": r.median, "p10": r.p10, "p90": r.p90, "n": r.n})),
        "pp": h.pp.map(|r| json!({"median": r.median, "n": r.n})),
        "format": p.format.to_string(),
        "tool": p.tool,
    })
}

fn tokens(p: &Profile, _a: &Analysis) -> Value {
    let buckets = token_buckets(p, MAX_TOKEN_POINTS);
    json!({
        "total": p.tokens.len(),
        "merged": buckets.first().is_some_and(|b| b.last > b.first),
        "points": buckets.iter().map(|b| json!([b.first, b.last, b.wall_ns, b.gpu_busy_ns])).collect::<Vec<_>>(),
    })
}

/// One token's passes and dispatches, times relative to its first GPU timestamp.
fn dispatch_timeline(p: &Profile, a: &Analysis) -> Value {
    let Some(token) = representative_token(p, &a.tokens_steady) else {
        return json!({"why": "no tokens"});
    };
    let spans: Vec<_> = p
        .dispatches
        .iter()
        .filter(|d| d.token == token)
        .filter_map(|d| Some((d, d.gpu?, d.valid_gpu_ns()?)))
        .collect();
    let passes: Vec<_> = p
        .passes
        .iter()
        .filter(|s| s.token == token)
        .filter_map(|s| Some((s, s.gpu?, s.valid_gpu_ns()?)))
        .collect();
    let origin = spans
        .iter()
        .map(|(_, g, _)| g.start_ns)
        .chain(passes.iter().map(|(_, g, _)| g.start_ns))
        .min();
    let Some(origin) = origin else {
        return json!({
            "token": token,
            "why": format!("token {token} has no GPU timestamps (timing {}); profile with `--timing dispatch` for this view", p.timing.mode),
        });
    };
    json!({
        "token": token,
        "shown": spans.len().min(MAX_DISPATCHES),
        "total": spans.len(),
        "passes": passes.iter().map(|(s, g, ns)| json!([g.start_ns - origin, ns, s.name])).collect::<Vec<_>>(),
        "dispatches": spans.iter().take(MAX_DISPATCHES).map(|(d, g, ns)| json!([g.start_ns - origin, ns, d.op, d.label, d.bytes])).collect::<Vec<_>>(),
    })
}

/// The op rows: corrected for the timestamps where `peak` measured their cost, since
/// the measured spans describe the program timed at every sampled dispatch (SmolLM2 on
/// an H100: a 6 µs timestamp on calls of a few µs); the basis says which.
fn ops(a: &Analysis) -> Value {
    let (rows, basis) = match &a.correction {
        Some(c) => (
            &c.ops,
            Some(format!(
                "Corrected for the instrument: each timed call less the {:.1} µs its timestamps add (`peak`); the text report gives measured and corrected side by side.",
                c.timestamp_ns / 1e3
            )),
        ),
        None => (&a.ops, None),
    };
    let estimated = a
        .estimate
        .as_ref()
        .map(|e| format!("Sampled timing: {}.", e.basis()));
    let basis: Vec<String> = [estimated, basis].into_iter().flatten().collect();
    let roof = |op: &str| a.roofline.ops.iter().find(|r| r.op == op);
    // The roofline judged the measured spans: its % of ceiling scales by measured over
    // the row's (corrected) time.
    let scale = |r: &OpRow| -> Option<f64> {
        let measured = a.ops.rows.iter().find(|m| m.op == r.op)?.total_gpu_ns? as f64;
        Some(measured / r.total_gpu_ns.filter(|&t| t > 0)? as f64)
    };
    json!({
        "timed": rows.total_gpu_ns.is_some(),
        "basis": basis,
        "rows": rows.rows.iter().map(|r| {
            let roof = roof(&r.op);
            json!({
                "op": r.op,
                "calls": r.calls,
                "total_ns": r.total_gpu_ns,
                "avg_ns": r.avg_gpu_ns,
                "percent": r.gpu_percent,
                "gbps": r.gb_per_s,
                "gflops": r.gflop_per_s,
                "intensity": roof.and_then(|x| x.intensity),
                "ceiling_percent": roof
                    .and_then(|x| x.percent_of_ceiling)
                    .and_then(|p| Some(p * scale(r)?)),
                "bound": roof.and_then(|x| x.bound).map(|b| b.as_str()),
            })
        }).collect::<Vec<_>>(),
    })
}

fn roofline(a: &Analysis) -> Value {
    match (&a.ceilings, a.roofline.ceilings) {
        (CeilingsUsed::Used { .. }, Some(c)) => json!({
            "bandwidth_gbps": c.bandwidth_gbps,
            "flops_gflops": c.flop_rate_gflops,
        }),
        (CeilingsUsed::Absent { reason }, _) => json!({"why": reason}),
        _ => json!({"why": "the ceilings have no bandwidth"}),
    }
}

fn layers(a: &Analysis) -> Value {
    json!(a
        .layers
        .rows
        .iter()
        .map(|r| json!([
            r.name,
            r.gpu_ns_median,
            r.gpu_ns.map(|g| g.p10),
            r.gpu_ns.map(|g| g.p90)
        ]))
        .collect::<Vec<_>>())
}

fn counters(a: &Analysis) -> Value {
    let c = &a.counters;
    let field = |x: Option<gpuscope_trace::Counters>, i: usize| x.map(|x| x.fields()[i].1);
    json!({
        "rows": gpuscope_trace::Counters::default().fields().iter().enumerate().map(|(i, (name, _))| json!([
            name, field(c.first, i), field(c.steady_median, i), field(c.steady_max, i)
        ])).collect::<Vec<_>>(),
        "checks": c.checks.iter().map(|ch| json!([ch.name, ch.expected, ch.observed, match ch.status {
            CheckStatus::Ok => "ok", CheckStatus::Fail => "fail", CheckStatus::NotApplicable => "n/a",
        }])).collect::<Vec<_>>(),
    })
}

fn findings(a: &Analysis) -> Value {
    json!({
        "headline": a.bottleneck.headline,
        "evidence": a.bottleneck.evidence,
        "items": a.checklist.items.iter().map(|i| json!({
            "title": i.title,
            "status": match i.status { ItemStatus::Ok => "ok", ItemStatus::Warn => "warn", ItemStatus::Unknown => "unknown" },
            "summary": i.summary,
            "evidence": i.evidence,
            "next": i.next.as_deref().map(next_step),
        })).collect::<Vec<_>>(),
        "opportunities": a.opportunities.iter().map(|o| json!([o.what, o.saved_ns, o.basis])).collect::<Vec<_>>(),
    })
}

/// A checklist item's next step as the page shows it: the command, and apart from it
/// the why (the checklist writes `COMMAND  (why)`). A shell line is shown as code;
/// advice in words stays prose.
fn next_step(next: &str) -> Value {
    let (command, why) = match next.split_once("  (") {
        Some((command, rest)) if rest.ends_with(')') => (command, Some(&rest[..rest.len() - 1])),
        _ => (next, None),
    };
    let shell = ["gpuscope ", "GPUSCOPE_"]
        .iter()
        .any(|p| command.starts_with(p));
    json!({"text": next, "command": command.trim(), "why": why, "shell": shell})
}
