//! Dispatch spans corrected for the instrument.
//!
//! Timestamps written just before and after a dispatch lengthen it: the GPU drains its
//! work to write them, so per-dispatch timing measures a slower program than the one
//! that runs untimed (on an H100, 2.1 µs per dependent dispatch became 8.7 µs;
//! shared/docs/GPU-HOSTS.md). `peak` measures that cost (`Ceilings::timestamp_ns`: the
//! dependent chain timed per dispatch, less the chain timed per pass). Each timed
//! dispatch's median is corrected by it, never below the dependent-dispatch floor (or
//! the measured time itself, if shorter), and the per-op table, GPU busy and the
//! bottleneck are given both ways: measured, and corrected, which describes the
//! untimed program.

use super::ops::{op_breakdown_from_sites, OpBreakdown};
use super::sites::{Site, Spread};
use gpuscope_trace::ceilings::Ceilings;
use gpuscope_trace::{Profile, TimingMode};

/// Spans corrected for the timestamps around them.
#[derive(Debug, Clone, PartialEq)]
pub struct Correction {
    /// What each timed dispatch's span gains from its timestamps, ns (`peak`'s median).
    pub timestamp_ns: f64,
    /// The floor no corrected call goes below: the dependent-dispatch cost, ns.
    pub floor_ns: f64,
    /// Per-op breakdown from the corrected sites.
    pub ops: OpBreakdown,
    /// Dispatch time per token, measured and corrected (the sites' medians summed), ns.
    pub measured_per_token_ns: u64,
    pub corrected_per_token_ns: u64,
}

/// The correction of `sites` (each site's median per call) by the ceilings' timestamp
/// cost; `None` unless dispatches were timed one by one and `peak` measured that cost.
pub fn correct(
    p: &Profile,
    sites: &[Site],
    tokens: usize,
    ceilings: Option<&Ceilings>,
) -> Option<Correction> {
    if p.timing.mode != TimingMode::Dispatch || tokens == 0 {
        return None;
    }
    let c = ceilings?;
    let timestamp_ns = c.timestamp_ns?.median;
    let floor_ns = c.dispatch_ns.map_or(0.0, |m| m.median);
    let (mut measured, mut corrected) = (0.0, 0.0);
    let corrected_sites: Vec<Site> = sites
        .iter()
        .map(|s| {
            let Some(ns) = s.median_ns() else {
                return s.clone();
            };
            let ns = ns as f64;
            let fixed = (ns - timestamp_ns).max(floor_ns.min(ns));
            let per_token = s.calls as f64 / tokens as f64;
            measured += ns * per_token;
            corrected += fixed * per_token;
            corrected_site(s, fixed.round() as u64)
        })
        .collect();
    Some(Correction {
        timestamp_ns,
        floor_ns,
        ops: op_breakdown_from_sites(&corrected_sites),
        measured_per_token_ns: measured.round() as u64,
        corrected_per_token_ns: corrected.round() as u64,
    })
}

fn corrected_site(s: &Site, ns: u64) -> Site {
    Site {
        timed_ns: ns.saturating_mul(s.timed_calls),
        call_ns: Some(Spread::of(ns)),
        ..s.clone()
    }
}
