//! The steady-state section, at the top of the report: which tokens the headlines
//! use, and what the others were.

use std::fmt::Write;

use super::super::units::{duration, ms, token_ranges};
use crate::analysis::steady::{GpuEvidence, SteadyMethod, MIN_TOKENS};
use crate::analysis::{Analysis, TokenSelection};
use gpuscope_trace::Profile;

/// Ranges listed before shortening.
const RANGES: usize = 6;

/// The tokens the headlines cover, in words: `steady tokens (14 in 2-15)`.
pub(crate) fn scope(a: &Analysis) -> String {
    let s = &a.tokens_steady;
    match (s.selection, s.tokens.first(), s.tokens.last()) {
        (TokenSelection::Steady, Some(f), Some(l)) => {
            format!("steady tokens ({} in {f}-{l})", s.count())
        }
        (TokenSelection::SkipFirst, Some(f), Some(l)) => format!("tokens {f}-{l}"),
        (TokenSelection::All, ..) => "all tokens".into(),
        _ => "no tokens".into(),
    }
}

pub(super) fn section(out: &mut String, p: &Profile, a: &Analysis) {
    let s = &a.steady;
    emit!(out);
    if s.method == SteadyMethod::TooFewTokens {
        emit!(
            out,
            "Steady state: not detected ({} tokens; the method needs {MIN_TOKENS}): {} used",
            s.tokens,
            if s.tokens > 1 {
                "every token but the first"
            } else {
                "the only token"
            }
        );
        return;
    }
    let steady: Vec<u32> = s.steady_tokens(p).collect();
    let reached = if s.settled { "reached" } else { "NOT reached" };
    emit!(
        out,
        "Steady state: {reached}; headlines use {} of {} tokens ({})",
        steady.len(),
        s.tokens,
        token_ranges(&steady, RANGES)
    );
    if let Some(r) = &s.reference {
        emit!(
            out,
            "  reference: median {} ms of the last {} tokens, spread {} (1.4826 MAD), band ±{}",
            ms(r.median_ns),
            r.n,
            duration(r.spread_ns),
            duration(r.band_ns)
        );
    }
    growth(out, s);
    match &s.slow_start {
        Some(slow) => {
            let gpu = match slow.gpu {
                GpuEvidence::Slower {
                    slow_busy_ns,
                    steady_busy_ns,
                }
                | GpuEvidence::Unchanged {
                    slow_busy_ns,
                    steady_busy_ns,
                } => format!(
                    "; GPU busy {} ms vs {} ms",
                    ms(slow_busy_ns),
                    ms(steady_busy_ns)
                ),
                GpuEvidence::Unknown => String::new(),
            };
            emit!(
                out,
                "  slow start: tokens {}-{} ({} tokens) at median {} ms: {}{gpu}",
                slow.first_token,
                slow.last_token,
                slow.len(),
                ms(slow.median_ns),
                slow.kind()
            );
        }
        None => emit!(out, "  slow start: none"),
    }
    if let Some(n) = s.suggested_warmup {
        emit!(
            out,
            "  the slow start ran into the recorded tokens: rerun with --warmup {n} so it is discarded"
        );
    }
    outliers(out, s);
    if let Some(d) = &s.drift {
        emit!(
            out,
            "  still drifting: the steady tokens' first half has median {} ms, the second half {} ms",
            ms(d.first_half_median_ns),
            ms(d.second_half_median_ns)
        );
    }
    if !s.settled {
        emit!(
            out,
            "  the numbers below describe a run that was still changing: decode more tokens (--tokens) or more warm-up (--warmup)"
        );
    }
}

/// The line of time against position taken out before judging the run.
fn growth(out: &mut String, s: &crate::analysis::SteadyState) {
    let Some(g) = &s.growth else {
        return;
    };
    {
        let carried: Vec<String> = g
            .by_op
            .iter()
            .filter(|(_, slope)| *slope > 0.1 * g.ns_per_position)
            .take(3)
            .map(|(op, slope)| format!("{op} +{slope:.2}"))
            .collect();
        emit!(
            out,
            "  grows with context: +{:.2} µs per 1,000 positions (least squares over positions {}-{}, R² {:.2}), taken out before judging the run{}",
            g.us_per_1k(),
            g.first_position,
            g.last_position,
            g.r2,
            if carried.is_empty() {
                String::new()
            } else {
                format!("; carried by {} (µs per 1,000 positions)", carried.join(", "))
            }
        );
    }
}

fn outliers(out: &mut String, s: &crate::analysis::SteadyState) {
    if s.outliers.is_empty() {
        emit!(out, "  outliers: none");
    } else {
        let list: Vec<String> = s
            .outliers
            .iter()
            .take(RANGES)
            .map(|o| format!("token {} {} ms (z {:+.1})", o.token, ms(o.wall_ns), o.z))
            .collect();
        let more = s.outliers.len().saturating_sub(RANGES);
        emit!(
            out,
            "  outliers: {} left out: {}{}",
            s.outliers.len(),
            list.join(", "),
            if more > 0 {
                format!(", and {more} more")
            } else {
                String::new()
            }
        );
    }
}
