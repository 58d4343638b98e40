//! Per-op breakdown: where GPU time goes, by kernel family (`op`).
//!
//! Times come only from valid dispatch spans; rates divide the bytes and FLOPs of the
//! *timed* calls by their time, so an untimed call never inflates a rate. With timing
//! `pass` or `off` no dispatch has a span: rows still list calls, bytes and FLOPs, and
//! every time field is `None`.

use std::collections::BTreeMap;

use super::per_token::TokenSet;
use gpuscope_trace::Profile;

/// One kernel family over the whole run.
#[derive(Debug, Clone, PartialEq)]
pub struct OpRow {
    pub op: String,
    pub calls: u64,
    /// Calls without a valid GPU span (not timed, or timestamps left out).
    pub untimed_calls: u64,
    /// Declared bytes and FLOPs of all calls.
    pub bytes: u64,
    pub flops: u64,
    /// Declared bytes and FLOPs of the timed calls (what the rates divide).
    pub timed_bytes: u64,
    pub timed_flops: u64,
    /// Sum of valid spans; `None` when no call of this op has one.
    pub total_gpu_ns: Option<u64>,
    /// Mean over the timed calls.
    pub avg_gpu_ns: Option<f64>,
    /// Share of the summed valid dispatch time of all ops, in percent.
    pub gpu_percent: Option<f64>,
    /// Bytes of the timed calls over their time, in GB/s (10^9 bytes/s).
    pub gb_per_s: Option<f64>,
    /// FLOPs of the timed calls over their time, in GFLOP/s.
    pub gflop_per_s: Option<f64>,
}

impl OpRow {
    pub fn timed_calls(&self) -> u64 {
        self.calls - self.untimed_calls
    }
}

/// Rows sorted by total GPU time, largest first; untimed rows after the timed ones,
/// by bytes then name (so the order is stable).
#[derive(Debug, Clone, PartialEq)]
pub struct OpBreakdown {
    pub rows: Vec<OpRow>,
    /// Sum of every valid dispatch span; `None` when there is none.
    pub total_gpu_ns: Option<u64>,
    pub calls: u64,
    pub untimed_calls: u64,
}

#[derive(Default)]
struct Acc {
    calls: u64,
    untimed: u64,
    bytes: u64,
    flops: u64,
    timed_ns: u64,
    timed_bytes: u64,
    timed_flops: u64,
}

/// Groups the dispatch events of every token by `op`.
pub fn op_breakdown(p: &Profile) -> OpBreakdown {
    op_breakdown_of(p, &TokenSet::all(p))
}

/// Groups the dispatch events of the tokens in `tokens` by `op`.
pub fn op_breakdown_of(p: &Profile, tokens: &TokenSet) -> OpBreakdown {
    let mut by_op: BTreeMap<&str, Acc> = BTreeMap::new();
    for d in p.dispatches.iter().filter(|d| tokens.contains(d.token)) {
        let a = by_op.entry(d.op.as_str()).or_default();
        a.calls += 1;
        a.bytes = a.bytes.saturating_add(d.bytes);
        a.flops = a.flops.saturating_add(d.flops);
        match d.valid_gpu_ns() {
            Some(ns) => {
                a.timed_ns = a.timed_ns.saturating_add(ns);
                a.timed_bytes = a.timed_bytes.saturating_add(d.bytes);
                a.timed_flops = a.timed_flops.saturating_add(d.flops);
            }
            None => a.untimed += 1,
        }
    }
    finish(by_op)
}

fn finish(by_op: BTreeMap<&str, Acc>) -> OpBreakdown {
    let timed_total = gpuscope_trace::stats::saturating_sum(by_op.values().map(|a| a.timed_ns));
    let any_timed = by_op.values().any(|a| a.untimed < a.calls);
    let mut rows: Vec<OpRow> = by_op
        .into_iter()
        .map(|(op, a)| row(op, &a, timed_total))
        .collect();
    rows.sort_by(|x, y| {
        y.total_gpu_ns
            .cmp(&x.total_gpu_ns)
            .then(y.bytes.cmp(&x.bytes))
            .then(x.op.cmp(&y.op))
    });
    OpBreakdown {
        calls: rows.iter().map(|r| r.calls).sum(),
        untimed_calls: rows.iter().map(|r| r.untimed_calls).sum(),
        rows,
        total_gpu_ns: any_timed.then_some(timed_total),
    }
}

/// The same breakdown from dispatch sites: equal to [`op_breakdown_of`] over the
/// sites' tokens when every site kept one op ([`super::sites::Sites::mismatched`] is
/// 0), at the cost of one step per site instead of one per event.
pub fn op_breakdown_from_sites(sites: &[super::sites::Site]) -> OpBreakdown {
    let mut by_op: BTreeMap<&str, Acc> = BTreeMap::new();
    for s in sites {
        let a = by_op.entry(s.op.as_str()).or_default();
        a.calls += s.calls;
        a.untimed += s.calls - s.timed_calls;
        a.bytes = a.bytes.saturating_add(s.bytes);
        a.flops = a.flops.saturating_add(s.flops);
        a.timed_ns = a.timed_ns.saturating_add(s.timed_ns);
        a.timed_bytes = a.timed_bytes.saturating_add(s.timed_bytes);
        a.timed_flops = a.timed_flops.saturating_add(s.timed_flops);
    }
    finish(by_op)
}

fn row(op: &str, a: &Acc, timed_total: u64) -> OpRow {
    let timed = a.calls - a.untimed;
    let total = (timed > 0).then_some(a.timed_ns);
    // bytes per ns is GB/s (10^9 / 10^9); a zero-length span gives no rate, not infinity.
    let per_ns = |x: u64| (a.timed_ns > 0).then(|| x as f64 / a.timed_ns as f64);
    OpRow {
        op: op.to_string(),
        calls: a.calls,
        untimed_calls: a.untimed,
        bytes: a.bytes,
        flops: a.flops,
        timed_bytes: a.timed_bytes,
        timed_flops: a.timed_flops,
        total_gpu_ns: total,
        avg_gpu_ns: total.map(|t| t as f64 / timed as f64),
        gpu_percent: total
            .filter(|_| timed_total > 0)
            .map(|t| t as f64 / timed_total as f64 * 100.0),
        // No bytes and no FLOPs recorded (an attached program's dispatches): the rates
        // are unknown, not zero.
        gb_per_s: total.and(per_ns(a.timed_bytes)).filter(|_| a.bytes > 0),
        gflop_per_s: total
            .and(per_ns(a.timed_flops))
            .filter(|_| a.bytes > 0 || a.flops > 0),
    }
}
