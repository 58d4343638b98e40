//! Dispatch sites: each position of the token graph (the dispatch with the same
//! `index` in every token), aggregated over a set of tokens.
//!
//! A decoder runs the same graph every token, so "which dispatch" is its index: the
//! roofline, the checklist and fusion analysis name a site by its label
//! (`L12.ffn_down`), op and layer, and sum its calls over tokens. Aggregating by index
//! costs one vector slot per site instead of a string lookup per event.

use super::per_token::TokenSet;
use gpuscope_trace::Profile;

/// One position of the token graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// Dispatch index within a token.
    pub index: u32,
    pub op: String,
    pub label: String,
    pub layer: Option<u32>,
    pub pass: u32,
    pub workgroups: [u32; 3],
    /// Events at this index over the tokens used.
    pub calls: u64,
    /// Calls with a valid GPU span.
    pub timed_calls: u64,
    /// Sum of the valid spans, ns.
    pub timed_ns: u64,
    /// Declared bytes and FLOPs of the timed calls.
    pub timed_bytes: u64,
    pub timed_flops: u64,
    /// Declared bytes and FLOPs of all calls.
    pub bytes: u64,
    pub flops: u64,
    /// Median and 10th/90th percentiles of the timed calls, ns: one slow call (a
    /// preempted worker, the first token's cold cache) moves a mean, not these.
    pub call_ns: Option<Spread>,
}

/// A median with its spread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spread {
    pub p10: u64,
    pub median: u64,
    pub p90: u64,
    /// Mean of the calls left when the slowest and fastest tenth (at least one each, from
    /// three calls up) are dropped: what a site's few samples estimate its mean by,
    /// since one preempted call in fifteen moves a plain mean by tens of percent.
    pub trimmed_mean: u64,
}

impl Spread {
    /// The spread of one value.
    pub fn of(ns: u64) -> Spread {
        Spread {
            p10: ns,
            median: ns,
            p90: ns,
            trimmed_mean: ns,
        }
    }

    /// The spread of `sorted` (ascending, not empty).
    fn of_sorted(sorted: &[u64]) -> Spread {
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        let cut = if sorted.len() >= 3 {
            sorted.len().div_ceil(10)
        } else {
            0
        };
        let kept = &sorted[cut..sorted.len() - cut];
        let sum: u128 = kept.iter().map(|&ns| u128::from(ns)).sum();
        Spread {
            p10: at(0.1),
            median: at(0.5),
            p90: at(0.9),
            trimmed_mean: (sum / kept.len() as u128) as u64,
        }
    }
}

impl Site {
    /// Total workgroups of one call.
    pub fn workgroup_count(&self) -> u64 {
        self.workgroups.iter().map(|&w| w as u64).product()
    }

    /// Mean time of a timed call, ns.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.timed_calls > 0).then(|| self.timed_ns as f64 / self.timed_calls as f64)
    }

    /// Median time of a timed call, ns (what the checklist judges by).
    pub fn median_ns(&self) -> Option<u64> {
        self.call_ns.map(|s| s.median)
    }
}

/// Sites in index order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Sites {
    pub sites: Vec<Site>,
    /// Events whose op or label differs from the first event at the same index (the
    /// graph changed between tokens); they are counted in their index's site anyway.
    pub mismatched: u64,
}

/// Aggregates the dispatch events of the tokens in `tokens` by index.
pub fn dispatch_sites(p: &Profile, tokens: &TokenSet) -> Sites {
    let mut sites: Vec<Option<Site>> = Vec::new();
    let mut spans: Vec<Vec<u64>> = Vec::new();
    let mut mismatched = 0;
    for d in p.dispatches.iter().filter(|d| tokens.contains(d.token)) {
        let i = d.index as usize;
        // An index far beyond the graph (a malformed file) must not allocate a huge
        // vector: such events are left out and counted as mismatched.
        if i >= sites.len() {
            if i > p.dispatches.len() {
                mismatched += 1;
                continue;
            }
            sites.resize(i + 1, None);
            spans.resize(i + 1, Vec::new());
        }
        let site = sites[i].get_or_insert_with(|| Site {
            index: d.index,
            op: d.op.to_string(),
            label: d.label.to_string(),
            layer: d.layer,
            pass: d.pass,
            workgroups: d.workgroups,
            calls: 0,
            timed_calls: 0,
            timed_ns: 0,
            timed_bytes: 0,
            timed_flops: 0,
            bytes: 0,
            flops: 0,
            call_ns: None,
        });
        if site.op != d.op || site.label != d.label {
            mismatched += 1;
        }
        site.calls += 1;
        site.bytes = site.bytes.saturating_add(d.bytes);
        site.flops = site.flops.saturating_add(d.flops);
        if let Some(ns) = d.valid_gpu_ns() {
            site.timed_calls += 1;
            site.timed_ns = site.timed_ns.saturating_add(ns);
            site.timed_bytes = site.timed_bytes.saturating_add(d.bytes);
            site.timed_flops = site.timed_flops.saturating_add(d.flops);
            spans[i].push(ns);
        }
    }
    for (site, v) in sites.iter_mut().zip(&mut spans) {
        if let (Some(site), false) = (site, v.is_empty()) {
            v.sort_unstable();
            site.call_ns = Some(Spread::of_sorted(v));
        }
    }
    Sites {
        sites: sites.into_iter().flatten().collect(),
        mismatched,
    }
}
