//! Sampled timing, estimated whole: every dispatch site's time from its samples.
//!
//! Sampled timing (`--timing dispatch` with a stride, NVIDIA's default) times dispatch
//! `i` of step `t` only when `(i + t + t / stride) % stride == 0`, so each site of the
//! graph (the dispatch with the same index every token) is timed once in every
//! `stride` tokens. A
//! token's own spans cover one dispatch in `stride`: summed per token they say nothing
//! of the token, and without an estimate the per-layer times, GPU busy, utilization and
//! bottleneck stay unknown.
//!
//! The graph is the same every steady token, so a site's time is estimated by the mean
//! of its samples across the steady tokens: a token's time is the sum of its calls'
//! times, which a mean estimates, trimmed of its slowest and fastest tenth because one
//! preempted call among a site's fifteen samples weighs `stride` times what it weighs
//! timed every dispatch (a loaded CI machine moved an op's share from 29% to 40% so);
//! a median of a few samples flips
//! between the modes of a call whose time is bimodal (lavapipe runs a two-workgroup
//! dispatch on one thread or on two: 16% or 33% of a tiny model's GPU time for rope,
//! against 25% timed every dispatch). A site with no sample is imputed from the
//! median of its op's sampled sites with the same workgroup count (else its op's), and
//! counted as imputed. From those estimates come per-op time, per-layer time, GPU busy
//! per token and the bottleneck, each labelled "estimated from N samples covering K of
//! M dispatches". Where coverage is thin the estimate says how many more tokens would
//! give every site [`SAMPLES_WANTED`] samples.

use std::collections::HashMap;

use super::layers::{LayerBreakdown, LayerRow, LayerTimeSource};
use super::sites::{Site, Spread};
use gpuscope_trace::stats::Summary;
use gpuscope_trace::Profile;

/// Samples per site for a trusted estimate.
pub const SAMPLES_WANTED: u64 = 3;

/// What the estimate rests on.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub stride: u32,
    /// Valid samples used.
    pub samples: u64,
    /// Sites with at least one sample, of all sites.
    pub covered: usize,
    pub sites: usize,
    /// Sites without a sample, imputed from their op's sampled sites.
    pub imputed: usize,
    /// Sites neither sampled nor imputable (an op never sampled); left out of the totals.
    pub missing: usize,
    /// Sites with fewer than [`SAMPLES_WANTED`] samples.
    pub thin: usize,
    /// Estimated GPU time of one token's dispatches (their spans summed), ns.
    pub per_token_ns: u64,
    /// Steady tokens the estimate used.
    pub tokens: usize,
    /// Steady tokens to add so every site gets [`SAMPLES_WANTED`] samples; 0 when none.
    pub more_tokens: u64,
    /// The sites with their estimated times as if every call were timed (`timed_calls =
    /// calls`, `timed_ns = estimate × calls`), for the op table and the roofline.
    pub estimated_sites: Vec<Site>,
}

impl Estimate {
    /// `estimated from N samples covering K of M dispatches (I imputed from their op)`.
    pub fn basis(&self) -> String {
        let mut s = format!(
            "estimated from {} samples covering {} of {} dispatches",
            self.samples, self.covered, self.sites
        );
        if self.imputed > 0 {
            s.push_str(&format!(", {} imputed from their op", self.imputed));
        }
        if self.missing > 0 {
            s.push_str(&format!(", {} left out (op never sampled)", self.missing));
        }
        s
    }

    /// Whether every site has [`SAMPLES_WANTED`] samples.
    pub fn is_thin(&self) -> bool {
        self.thin > 0
    }
}

/// The estimate of a sampled profile over `tokens` steady tokens; `None` when the
/// profile is not sampled or no site was sampled.
pub fn estimate(p: &Profile, sites: &[Site], tokens: usize) -> Option<Estimate> {
    let stride = p.timing.sampling.as_ref()?.stride;
    if stride <= 1 || tokens == 0 || !sites.iter().any(|s| s.call_ns.is_some()) {
        return None;
    }
    let by_op = op_medians(sites);
    let mut e = Estimate {
        stride,
        samples: 0,
        covered: 0,
        sites: sites.len(),
        imputed: 0,
        missing: 0,
        thin: 0,
        per_token_ns: 0,
        tokens,
        more_tokens: 0,
        estimated_sites: Vec::with_capacity(sites.len()),
    };
    let mut per_token = 0.0;
    for s in sites {
        e.samples += s.timed_calls;
        let ns = match sample_mean_ns(s) {
            Some(ns) => {
                e.covered += 1;
                Some(ns)
            }
            None => {
                let imputed = by_op
                    .get(&(s.op.as_str(), s.workgroup_count()))
                    .or_else(|| by_op.get(&(s.op.as_str(), ANY_WORKGROUPS)))
                    .copied();
                match imputed {
                    Some(_) => e.imputed += 1,
                    None => e.missing += 1,
                }
                imputed
            }
        };
        if s.timed_calls < SAMPLES_WANTED {
            e.thin += 1;
        }
        let Some(ns) = ns else {
            e.estimated_sites.push(s.clone());
            continue;
        };
        // A site missing from some tokens (a graph that changes) counts in proportion.
        per_token += ns as f64 * s.calls as f64 / tokens as f64;
        e.estimated_sites.push(estimated_site(s, ns));
    }
    e.per_token_ns = per_token.round() as u64;
    if e.thin > 0 {
        // Each site is sampled once every `stride` tokens.
        let have = tokens as u64;
        let want = SAMPLES_WANTED * u64::from(stride);
        e.more_tokens = want.saturating_sub(have).max(u64::from(stride));
    }
    Some(e)
}

/// The trimmed mean of a site's timed calls, ns (see [`Spread::trimmed_mean`]).
fn sample_mean_ns(s: &Site) -> Option<u64> {
    s.call_ns.map(|c| c.trimmed_mean)
}

/// Key of an op's median over all its sites, whatever their workgroups.
const ANY_WORKGROUPS: u64 = u64::MAX;

/// Median sampled time per (op, workgroups) and per op, over the sampled sites.
fn op_medians(sites: &[Site]) -> HashMap<(&str, u64), u64> {
    let mut samples: HashMap<(&str, u64), Vec<u64>> = HashMap::new();
    for s in sites {
        if let Some(ns) = sample_mean_ns(s) {
            samples
                .entry((s.op.as_str(), s.workgroup_count()))
                .or_default()
                .push(ns);
            samples
                .entry((s.op.as_str(), ANY_WORKGROUPS))
                .or_default()
                .push(ns);
        }
    }
    samples
        .into_iter()
        .map(|(k, mut v)| {
            v.sort_unstable();
            (k, v[v.len() / 2])
        })
        .collect()
}

fn estimated_site(s: &Site, ns: u64) -> Site {
    Site {
        timed_calls: s.calls,
        timed_ns: ns.saturating_mul(s.calls),
        timed_bytes: s.bytes,
        timed_flops: s.flops,
        call_ns: s.call_ns.or(Some(Spread::of(ns))),
        ..s.clone()
    }
}

/// Per-layer times from the estimated sites: a layer's sites by layer number, the rest
/// by the pass they run in (its name from the profile's passes, else `passN`; `embed` or
/// `head` when a pass holds the whole step).
pub fn layers(p: &Profile, e: &Estimate) -> LayerBreakdown {
    let pass_names: HashMap<u32, &str> = p
        .passes
        .iter()
        .map(|s| (s.index, s.name.as_str()))
        .collect();
    let mixed = super::layers::passes_hold_several_layers(p);
    let mut place = super::layers::OutsideLayers::default();
    let mut rows: Vec<LayerRow> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut sums: Vec<f64> = Vec::new();
    for s in &e.estimated_sites {
        let outside = place.name(0, s.layer);
        // The site's estimate (sites neither sampled nor imputed have none).
        if s.timed_calls == 0 {
            continue;
        }
        let ns = s.timed_ns / s.timed_calls;
        let name = match s.layer {
            Some(l) => format!("L{l}"),
            None if mixed => outside.to_string(),
            None => pass_names
                .get(&s.pass)
                .map_or_else(|| format!("pass{}", s.pass), |n| n.to_string()),
        };
        let i = *index.entry(name.clone()).or_insert_with(|| {
            rows.push(LayerRow {
                name,
                layer: s.layer,
                gpu_ns_median: None,
                gpu_ns: None,
                source: Some(LayerTimeSource::Estimated),
                tokens_timed: e.tokens as u32,
            });
            sums.push(0.0);
            rows.len() - 1
        });
        sums[i] += ns as f64 * s.calls as f64 / e.tokens as f64;
    }
    for (r, sum) in rows.iter_mut().zip(sums) {
        let ns = sum.round() as u64;
        r.gpu_ns_median = Some(ns);
        r.gpu_ns = Summary::of([ns]);
    }
    LayerBreakdown {
        extremes: super::layers::extremes(&rows),
        rows,
    }
}
