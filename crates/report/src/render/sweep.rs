//! A sweep's results ([`crate::sweep::SweepReport`]) as Markdown, CSV, JSON and a
//! self-contained HTML page with one bar chart per experiment.
//!
//! The chart is SVG written here rather than drawn by a script or a plotting crate: bars
//! and one marker per row are all it needs, and a static SVG opens anywhere (and is
//! checked by the tests without a browser).

use std::fmt::Write;

use crate::render::html::escape;
use crate::sweep::{SweepReport, SweepRow};
use gpuscope_trace::opstest::csv_field;

/// CSV columns, one row per configuration (also the JSON rows' field names).
pub const CSV_COLUMNS: [&str; 25] = [
    "experiment",
    "shape",
    "format",
    "layout",
    "variant",
    "lanes",
    "rows_per_lane",
    "workgroup",
    "fuse",
    "mode",
    "dispatches",
    "time_us",
    "time_us_p10",
    "time_us_p90",
    "runs",
    "bytes",
    "flops",
    "gb_s",
    "gflop_s",
    "intensity",
    "attainable_us",
    "pct_of_ceiling",
    "bound",
    "best",
    "adapter",
];

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.digits$}"))
}

/// What each experiment shows, for the Markdown and HTML headings.
pub fn describe(experiment: &str) -> &'static str {
    match experiment {
        "memory-vs-compute" => "the full gemv against the same bytes read with no arithmetic (read-only) and the same arithmetic on cached weights (compute-only): whichever the full time is close to is what bounds it",
        "quant-overhead" => "one shape in each weight format: time against bytes moved (a format whose GB/s falls behind the others pays for decoding, not for memory)",
        "workgroup" => "threads per workgroup of the gemv frame",
        "tile" => "lanes per row × rows per lane",
        _ => "every combination of the given axes",
    }
}

fn config(r: &SweepRow) -> String {
    format!(
        "{}{} {} {}x{} wg{}{}",
        r.config.format,
        if r.config.layout == "gguf" {
            String::new()
        } else {
            format!(" {}", r.config.layout)
        },
        r.config.variant,
        r.config.lanes,
        r.config.rows_per_lane,
        r.config.workgroup,
        match r.config.fuse.as_str() {
            "-" => String::new(),
            f => format!(" fuse={f}"),
        }
    )
}

pub fn render_sweep_md(rep: &SweepReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# gemv sweep on {} ({}, {})\n\nGPU timing: {}. Ceilings: {}.\n",
        rep.adapter, rep.backend, rep.driver, rep.timing, rep.ceilings
    );
    for e in rep.experiments() {
        let _ = writeln!(out, "## {e}\n\n{}.\n", describe(e));
        out.push_str("| shape | format | layout | variant | lanes | rows | wg | fuse | mode | µs | p10–p90 µs | GB/s | GFLOP/s | FLOP/B | floor µs | % of ceiling | bound | best |\n");
        out.push_str("|---|---|---|---|--:|--:|--:|---|---|--:|---|--:|--:|--:|--:|--:|---|---|\n");
        for r in rep.rows.iter().filter(|r| r.config.experiment == e) {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2}–{:.2} | {:.1} | {:.1} | {:.2} | {} | {} | {} | {} |",
                r.config.shape,
                r.config.format,
                r.config.layout,
                r.config.variant,
                r.config.lanes,
                r.config.rows_per_lane,
                r.config.workgroup,
                r.config.fuse,
                r.config.mode,
                r.time_us,
                r.time_us_p10,
                r.time_us_p90,
                r.gb_s,
                r.gflop_s,
                r.intensity,
                opt(r.attainable_us, 2),
                opt(r.pct_of_ceiling, 0),
                r.bound.as_deref().unwrap_or("-"),
                if r.best { "**best**" } else { "" }
            );
        }
        let best: Vec<&SweepRow> = rep
            .rows
            .iter()
            .filter(|r| r.config.experiment == e && r.best)
            .collect();
        if !best.is_empty() {
            out.push_str("\nBest configuration per shape:\n\n");
            for r in best {
                let _ = writeln!(
                    out,
                    "- {}: {} — {:.2} µs",
                    r.config.shape,
                    config(r),
                    r.time_us
                );
            }
        }
        out.push('\n');
    }
    if !rep.skipped.is_empty() {
        out.push_str("Left out:\n\n");
        for s in &rep.skipped {
            let _ = writeln!(out, "- {s}");
        }
    }
    out
}

pub fn render_sweep_csv(rep: &SweepReport) -> String {
    let mut out = CSV_COLUMNS.join(",") + "\n";
    let num = |v: Option<f64>| v.map_or_else(String::new, |x| x.to_string());
    for r in &rep.rows {
        let fields = [
            csv_field(&r.config.experiment),
            r.config.shape.clone(),
            r.config.format.clone(),
            r.config.layout.clone(),
            r.config.variant.clone(),
            r.config.lanes.to_string(),
            r.config.rows_per_lane.to_string(),
            r.config.workgroup.to_string(),
            r.config.fuse.clone(),
            r.config.mode.clone(),
            r.config.dispatches.to_string(),
            r.time_us.to_string(),
            r.time_us_p10.to_string(),
            r.time_us_p90.to_string(),
            r.runs.to_string(),
            r.bytes.to_string(),
            r.flops.to_string(),
            r.gb_s.to_string(),
            r.gflop_s.to_string(),
            r.intensity.to_string(),
            num(r.attainable_us),
            num(r.pct_of_ceiling),
            r.bound.clone().unwrap_or_default(),
            r.best.to_string(),
            csv_field(&rep.adapter),
        ];
        out += &fields.join(",");
        out.push('\n');
    }
    out
}

pub fn render_sweep_json(rep: &SweepReport) -> String {
    serde_json::to_string_pretty(rep).expect("a sweep report serializes") + "\n"
}

/// One configuration per line (with the adapter), for tools that stream rows.
pub fn render_sweep_jsonl(rep: &SweepReport) -> String {
    let mut out = String::new();
    for r in &rep.rows {
        let mut v = serde_json::to_value(r).expect("a sweep row serializes");
        v["adapter"] = rep.adapter.clone().into();
        out += &v.to_string();
        out.push('\n');
    }
    out
}

/// One horizontal bar per row: the measured time (the best in another colour), a tick at
/// the attainable time when the ceilings are known, and the label and figures.
fn chart(rows: &[&SweepRow]) -> String {
    const BAR_H: f64 = 18.0;
    const LABEL_W: f64 = 330.0;
    const PLOT_W: f64 = 420.0;
    let max = rows
        .iter()
        .map(|r| r.time_us.max(r.attainable_us.unwrap_or(0.0)))
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let height = BAR_H * rows.len() as f64 + 24.0;
    let mut svg = format!(
        r#"<svg class="sweep" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}" role="img">"#,
        w = LABEL_W + PLOT_W + 150.0
    );
    for (i, r) in rows.iter().enumerate() {
        let y = i as f64 * BAR_H + 4.0;
        let w = PLOT_W * r.time_us / max;
        let label = format!("{} {} {}", r.config.shape, config(r), r.config.mode);
        let _ = write!(
            svg,
            r#"<g><title>{title}</title><text x="{tx}" y="{ty}" text-anchor="end">{label}</text><rect class="{class}" x="{x}" y="{y}" width="{w:.1}" height="{bh}"/><text x="{vx:.1}" y="{ty}">{time:.2} µs{pct}</text>"#,
            title = escape(&format!(
                "{label}: {:.2} µs ({:.2}–{:.2}), {:.1} GB/s, {:.1} GFLOP/s",
                r.time_us, r.time_us_p10, r.time_us_p90, r.gb_s, r.gflop_s
            )),
            tx = LABEL_W - 6.0,
            ty = y + BAR_H * 0.7,
            label = escape(&label),
            class = if r.best { "bar best" } else { "bar" },
            x = LABEL_W,
            bh = BAR_H - 4.0,
            vx = LABEL_W + w + 4.0,
            time = r.time_us,
            pct = r
                .pct_of_ceiling
                .map_or_else(String::new, |p| format!(", {p:.0}% of ceiling")),
        );
        if let Some(a) = r.attainable_us {
            let ax = LABEL_W + PLOT_W * a / max;
            let _ = write!(
                svg,
                r#"<line class="floor" x1="{ax:.1}" x2="{ax:.1}" y1="{y}" y2="{y2}"/>"#,
                y2 = y + BAR_H - 4.0
            );
        }
        svg.push_str("</g>");
    }
    svg.push_str("</svg>");
    svg
}

const STYLE: &str = "body{font:14px system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}\
td:nth-child(-n+4),th{text-align:left}svg.sweep text{font-size:11px;fill:#222}\
rect.bar{fill:#7a9cc6}rect.best{fill:#2e7d32}line.floor{stroke:#c62828;stroke-width:2}\
p.note{color:#555}";

pub fn render_sweep_html(rep: &SweepReport) -> String {
    let mut body = format!(
        "<h1>gemv sweep on {}</h1><p class=\"note\">{} · {} · GPU timing {} · ceilings: {}. Bars: median GPU time of one run; red tick: the roofline's attainable time; green: the fastest configuration of its shape.</p>",
        escape(&rep.adapter),
        escape(&rep.backend),
        escape(&rep.driver),
        escape(&rep.timing),
        escape(&rep.ceilings)
    );
    for e in rep.experiments() {
        let rows: Vec<&SweepRow> = rep
            .rows
            .iter()
            .filter(|r| r.config.experiment == e)
            .collect();
        let _ = write!(
            body,
            "<section id=\"{id}\"><h2>{name}</h2><p>{what}.</p>{chart}<table><tr><th>shape</th><th>format</th><th>layout</th><th>variant</th><th>mode</th><th>lanes×rows</th><th>wg</th><th>fuse</th><th>µs</th><th>GB/s</th><th>GFLOP/s</th><th>% of ceiling</th><th>bound</th></tr>",
            id = escape(e),
            name = escape(e),
            what = escape(describe(e)),
            chart = chart(&rows)
        );
        for r in rows {
            let _ = write!(
                body,
                "<tr{cls}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}×{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
                r.config.shape,
                r.config.format,
                r.config.layout,
                r.config.variant,
                r.config.mode,
                r.config.lanes,
                r.config.rows_per_lane,
                r.config.workgroup,
                r.config.fuse,
                r.time_us,
                r.gb_s,
                r.gflop_s,
                opt(r.pct_of_ceiling, 0),
                r.bound.as_deref().unwrap_or("-"),
                cls = if r.best { " class=\"best\"" } else { "" }
            );
        }
        body.push_str("</table></section>");
    }
    if !rep.skipped.is_empty() {
        body.push_str("<p class=\"note\">Left out: ");
        body.push_str(
            &rep.skipped
                .iter()
                .map(|s| escape(s))
                .collect::<Vec<_>>()
                .join("; "),
        );
        body.push_str("</p>");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>gpuscope sweep: {}</title><style>{STYLE}</style></head><body>{body}</body></html>\n",
        escape(&rep.adapter)
    )
}
