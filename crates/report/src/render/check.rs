//! The text report of `gpuscope check`: the verdict, the first divergent dispatch with its
//! worst elements, and the error growth per layer (a table and a log-scale sparkline).

use std::fmt::Write;

use crate::analysis::divergence::{growth_by_layer, verdict, Divergence, DivergenceKind};
use gpuscope_trace::check::CheckReport;
use gpuscope_trace::compare::TensorError;

/// `1.23e-7`, or `0` for exact agreement.
fn sci(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else {
        format!("{v:.2e}")
    }
}

fn measures(e: &TensorError) -> String {
    if e.dtype == "u32" {
        return format!("{} of {} words differ", e.mismatched, e.n);
    }
    format!(
        "NMSE {}, max |diff| {}, max rel {}, max err {}·rms, NaN {} (ref {}), Inf {} (ref {})",
        sci(e.nmse),
        sci(e.max_abs),
        sci(e.max_rel),
        sci(e.max_err),
        e.nan,
        e.expected_nan,
        e.inf,
        e.expected_inf
    )
}

/// Eight levels over log10 of the value from 1e-16 (lowest) to 1 (highest).
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    values
        .iter()
        .map(|&v| {
            if v <= 0.0 {
                return ' ';
            }
            let t = ((v.log10() + 16.0) / 16.0).clamp(0.0, 1.0);
            BARS[(t * 7.0).round() as usize]
        })
        .collect()
}

fn divergence(out: &mut String, r: &CheckReport, d: &Divergence) {
    let dc = &r.dispatches[d.dispatch];
    let what = match d.kind {
        DivergenceKind::Local => "local error: the op is wrong on its own inputs",
        DivergenceKind::Chained => {
            "chained error: the paths drifted apart; no op is locally wrong before here"
        }
        DivergenceKind::Validation => "validation error reported by the device",
    };
    let _ = writeln!(out, "First divergent dispatch ({what}):");
    let _ = writeln!(
        out,
        "  token {}, dispatch {} of the step (seq {}), layer {}, op {}, label {}, shader {}",
        dc.token,
        dc.index,
        dc.seq,
        dc.layer.map_or("-".into(), |l| l.to_string()),
        dc.op,
        dc.label,
        dc.shader
    );
    let Some(o) = dc.outputs.get(d.output) else {
        let _ = writeln!(out, "  {}", d.reason);
        return;
    };
    let _ = writeln!(
        out,
        "  output binding {} ({}): {}",
        o.binding, o.buffer, d.reason
    );
    let shown = match d.kind {
        DivergenceKind::Chained => &o.chained,
        _ => o.local.as_ref().unwrap_or(&o.chained),
    };
    if !shown.worst.is_empty() {
        let _ = writeln!(
            out,
            "  worst elements:\n  {:>10}  {:>16}  {:>16}  {:>12}",
            "index", "found", "expected", "|diff|"
        );
        for w in &shown.worst {
            let _ = writeln!(
                out,
                "  {:>10}  {:>16.8e}  {:>16.8e}  {:>12.3e}",
                w.index,
                w.found,
                w.expected,
                (w.found - w.expected).abs()
            );
        }
    }
    if let Some(l) = &o.local {
        let _ = writeln!(out, "  local:   {}", measures(l));
    }
    let _ = writeln!(out, "  chained: {}", measures(&o.chained));
}

pub fn render_check(r: &CheckReport) -> String {
    let mut out = String::new();
    let v = verdict(r);
    let _ = writeln!(
        out,
        "gpuscope check: {}, {} token(s); {} against {} ({})",
        r.model,
        r.tokens.len(),
        r.subject,
        r.reference,
        r.precision
    );
    let _ = writeln!(
        out,
        "Checked {} dispatches ({} outputs). Local limits: NMSE {:.0e}, max err {:.0e}·rms{}; chained: NMSE {:.0e}, max err {:.0e}·rms.",
        v.dispatches_checked,
        v.outputs_checked,
        r.thresholds.local.nmse,
        r.thresholds.local.max_err,
        r.thresholds
            .ops
            .iter()
            .map(|(k, l)| format!(", {k} {:.0e}/{:.0e}", l.nmse, l.max_err))
            .chain(
                r.thresholds
                    .int8_local
                    .map(|l| format!(", int8 activations {:.0e}/{:.0e}", l.nmse, l.max_err))
            )
            .collect::<String>(),
        r.thresholds.chained.nmse,
        r.thresholds.chained.max_err
    );
    for n in &r.notes {
        let _ = writeln!(out, "note: {n}");
    }
    if let Some(seq) = r.stopped_at {
        let _ = writeln!(out, "Stopped after dispatch {seq} (--break-at).");
    }
    let _ = writeln!(out);
    if let Some(d) = v.first() {
        divergence(&mut out, r, d);
        if d.kind != DivergenceKind::Chained {
            if let Some(c) = &v.first_chained {
                let dc = &r.dispatches[c.dispatch];
                let _ = writeln!(
                    out,
                    "  (chained error first crosses its limit at seq {} {}: {})",
                    dc.seq, dc.label, c.reason
                );
            }
        }
        let _ = writeln!(out);
    }
    let growth = growth_by_layer(r);
    if !growth.is_empty() {
        let _ = writeln!(
            out,
            "Error growth per layer (largest over the checked tokens):"
        );
        let _ = writeln!(
            out,
            "  {:<8}  {:>11}  {:>12}  {:>15}",
            "section", "local NMSE", "chained NMSE", "chained max err"
        );
        for g in &growth {
            let _ = writeln!(
                out,
                "  {:<8}  {:>11}  {:>12}  {:>15}",
                g.section,
                sci(g.local_nmse),
                sci(g.chained_nmse),
                sci(g.chained_max_err)
            );
        }
        let chained: Vec<f64> = growth.iter().map(|g| g.chained_nmse).collect();
        let local: Vec<f64> = growth.iter().map(|g| g.local_nmse).collect();
        let _ = writeln!(
            out,
            "  chained NMSE by section  |{}|  (log scale, 1e-16 to 1)",
            sparkline(&chained)
        );
        let _ = writeln!(out, "  local NMSE by section    |{}|", sparkline(&local));
        let _ = writeln!(out);
    }
    let _ = writeln!(
        out,
        "{}",
        if v.passed() {
            "PASS: every dispatch is within its limits".to_string()
        } else {
            "FAIL: a threshold was crossed (see above)".to_string()
        }
    );
    out
}
