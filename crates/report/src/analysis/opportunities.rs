//! Opportunities: what could be made faster, ranked by the time per token it would
//! save (steady tokens).
//!
//! - an op brought to [`super::roofline::TARGET_PERCENT`] of its ceiling saves
//!   `now − t*/0.8` per token ([`super::roofline::op_savings`]; needs ceilings);
//! - a fusion candidate saves at most the consumer's time per call
//!   ([`super::FusionCandidate::consumer_ns`]), once per token.
//!
//! Without ceilings or timings nothing can be estimated; the ops are then listed by
//! GPU time with no estimate, so the reader still sees where to look.

use super::checklist::FusionCandidate;
use super::ops::OpBreakdown;
use super::roofline::{op_savings, Roofline, TARGET_PERCENT};

/// One thing to try.
#[derive(Debug, Clone, PartialEq)]
pub struct Opportunity {
    /// What to do, e.g. `gemv_q4_1 to 80% of its ceiling`.
    pub what: String,
    /// Estimated saving per token, ns; `None` when it cannot be estimated.
    pub saved_ns: Option<f64>,
    /// How the estimate was made, with its numbers.
    pub basis: String,
}

/// Ranks the opportunities (largest estimated saving first, unestimated last).
pub fn opportunities(
    roofline: &Roofline,
    ops: &OpBreakdown,
    fusion: &[FusionCandidate],
    steady_tokens: usize,
) -> Vec<Opportunity> {
    let mut out: Vec<Opportunity> = op_savings(&roofline.ops, steady_tokens)
        .into_iter()
        .filter(|s| s.saved_ns > 0.0)
        .map(|s| Opportunity {
            what: format!("{} to {TARGET_PERCENT:.0}% of its ceiling", s.op),
            saved_ns: Some(s.saved_ns),
            basis: format!(
                "{:.1} µs per token now, {:.1} µs at the target (roofline)",
                s.now_ns / 1e3,
                s.target_ns / 1e3
            ),
        })
        .collect();
    for f in fusion {
        let Some(ns) = f.consumer_ns else { continue };
        out.push(Opportunity {
            what: format!(
                "fuse {} into {} (dispatch {} into {})",
                f.consumer.label, f.producer.label, f.consumer.index, f.producer.index
            ),
            saved_ns: Some(ns),
            basis: format!(
                "at most the consumer's {:.1} µs per call{}",
                ns / 1e3,
                f.bytes_saved.map_or(String::new(), |b| format!(
                    ", {b} bytes per token not moved"
                ))
            ),
        });
    }
    out.sort_by(|a, b| {
        b.saved_ns
            .unwrap_or(0.0)
            .total_cmp(&a.saved_ns.unwrap_or(0.0))
    });
    if out.is_empty() {
        out.extend(ops.rows.iter().take(3).map(|r| Opportunity {
            what: format!("look at {}", r.op),
            saved_ns: None,
            basis: match r.gpu_percent {
                Some(p) => format!(
                    "{p:.1}% of GPU time; an estimate needs measured ceilings (`gpuscope peak`)"
                ),
                None => "no GPU times (timing `dispatch` gives them)".into(),
            },
        }));
    }
    out
}
