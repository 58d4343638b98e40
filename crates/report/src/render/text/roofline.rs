//! Ceilings (in the run header) and the per-token roofline: the floor, how far the
//! steady tokens are from it, and what the top ops would save at 80% of their ceiling.

use std::fmt::Write;

use super::super::units::{duration, ms};
use crate::analysis::roofline::{Spread, TARGET_PERCENT};
use crate::analysis::{Analysis, CeilingsSource, CeilingsUsed};

/// The `Ceilings:` lines of the run header: whose, from where, and the figures.
pub(super) fn ceilings(out: &mut String, a: &Analysis) {
    let (c, source) = match &a.ceilings {
        CeilingsUsed::Absent { reason } => {
            emit!(out, "Ceilings: none ({reason})");
            return;
        }
        CeilingsUsed::Used { ceilings, source } => (ceilings, source),
    };
    let from = match source {
        CeilingsSource::Embedded => "embedded in the profile".to_string(),
        CeilingsSource::LocalCache { path } => format!("from this machine's cache {path}"),
    };
    let id = &c.identity;
    emit!(
        out,
        "Ceilings: measured by {} on {} at {}, {from}",
        id.tool,
        id.device(),
        id.measured_at
    );
    for line in super::super::ceilings::ceilings_lines(c) {
        emit!(out, "  {line}");
    }
}

fn spread_line(s: &Spread) -> String {
    format!(
        "{} (p10-p90 {}-{}, n={})",
        duration(s.median),
        duration(s.p10),
        duration(s.p90),
        s.n
    )
}

pub(super) fn per_token(out: &mut String, a: &Analysis) {
    let r = &a.roofline;
    emit!(out);
    let Some(f) = &r.token_floor else {
        emit!(
            out,
            "Roofline per token: needs measured ceilings (see Ceilings above)"
        );
        return;
    };
    emit!(out, "Roofline per token ({})", super::steady::scope(a));
    emit!(
        out,
        "  floor {} = max(bytes / copy bandwidth {}, dispatches × dependent dispatch {}, dispatches × CPU encode {}); set by {}",
        spread_line(&f.floor_ns),
        duration(f.bytes_ns.median),
        f.dispatches_ns.map_or("-".into(), |s| duration(s.median)),
        f.cpu_ns.map_or("-".into(), |s| duration(s.median)),
        f.limiter.as_str()
    );
    emit!(
        out,
        "  wall is {:.1}× the floor (p10-p90 {:.1}-{:.1}×, n={})",
        f.times_floor.median,
        f.times_floor.p10,
        f.times_floor.p90,
        f.times_floor.n
    );
    if let Some(w) = &r.what_it_would_take {
        let parts: Vec<String> = w
            .savings
            .iter()
            .map(|s| {
                format!(
                    "{} {} -> {} (saves {})",
                    s.op,
                    duration(s.now_ns),
                    duration(s.target_ns),
                    duration(s.saved_ns)
                )
            })
            .collect();
        emit!(
            out,
            "  what it would take: at {TARGET_PERCENT:.0}% of their ceilings, {}",
            parts.join("; ")
        );
        emit!(
            out,
            "    a token would take {} ms instead of {} ms ({:.1} tok/s instead of {:.1}), if the GPU stays the limiter",
            ms(w.token_after_ns as u64),
            ms(w.token_now_ns as u64),
            w.tok_per_s_after,
            w.tok_per_s_now
        );
    }
}
