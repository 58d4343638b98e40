//! Analysis: one module per question, each a pure function from a [`Profile`] (two
//! for [`diff`](mod@diff)) to a plain result struct. Nothing here formats text; [`crate::render`] does that.
//!
//! Which spans count: a GPU span is used only when it is present, carries no
//! [`gpuscope_trace::TimestampIssue`] and does not end before it starts
//! ([`gpuscope_trace::valid_span_ns`]). Every span left out is counted in [`timestamps`], so
//! no bad timestamp is averaged in silently.
//!
//! Times are integer nanoseconds, as in the profile; rates are GB/s (10^9 bytes per
//! second) and GFLOP/s.

pub mod bottleneck;
pub mod checklist;
pub mod clock;
pub mod correction;
pub mod counters;
pub mod diff;
pub mod divergence;
pub mod gate;
pub mod headline;
pub mod layers;
pub mod memory;
pub mod opportunities;
pub mod ops;
pub mod overhead;
pub mod overview;
pub mod per_token;
pub mod roofline;
pub mod sampled;
pub mod setup;
pub mod significance;
pub mod sites;
pub mod steady;
pub mod timeline;
pub mod timestamps;
pub mod tokens;

pub use bottleneck::{bottleneck, bottleneck_of, Bottleneck, BottleneckInput, Verdict};
pub use checklist::{checklist, Checklist, ChecklistInput, FusionCandidate, Item, ItemStatus};
pub use clock::{align_clocks, AlignError, ClockAlignment};
pub use counters::{counter_report, Check, CheckStatus, CounterReport};
pub use diff::{diff, Diff, DiffError, DiffOptions, TimeDiff};
pub use gate::{gate, GateError, GateOptions, GateResult};
pub use gpuscope_trace::stats::{percentile, Summary};
pub use headline::{headline, Headline, TokRate};
pub use layers::{
    layer_breakdown, layer_breakdown_of, section_samples, section_samples_of, LayerBreakdown,
    LayerExtremes, LayerRow, LayerTimeSource, SectionSamples,
};
pub use memory::{memory, Memory};
pub use opportunities::{opportunities, Opportunity};
pub use ops::{op_breakdown, op_breakdown_of, OpBreakdown, OpRow};
pub use overview::{representative_token, token_buckets, TokenBucket};
pub use per_token::{token_totals, TokenSet, TokenTotals};
pub use roofline::{
    dispatch_rate, roofline, Bound, DispatchRate, Roofline, RooflineCeilings, RooflineInput,
};
pub use sites::{dispatch_sites, Site, Sites};
pub use steady::{steady_state, SteadyMethod, SteadyState};
pub use timeline::{timeline, Timeline};
pub use timestamps::{timestamp_health, SpanCounts, SpanStatus, TimestampHealth};
pub use tokens::{token_stats, token_stats_of, token_stats_steady, TokenSelection, TokenStats};

use gpuscope_trace::ceilings::{Ceilings, CeilingsIdentity};
use gpuscope_trace::Profile;

/// Where the ceilings an analysis used came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CeilingsSource {
    /// Embedded in the profile by the run that made it.
    Embedded,
    /// The cache of the machine reading the profile (same adapter and driver).
    LocalCache { path: String },
}

/// The ceilings an analysis used, or why it used none.
#[derive(Debug, Clone, PartialEq)]
pub enum CeilingsUsed {
    Used {
        ceilings: Box<Ceilings>,
        source: CeilingsSource,
    },
    Absent {
        /// One line: why, and what to run.
        reason: String,
    },
}

impl CeilingsUsed {
    pub fn ceilings(&self) -> Option<&Ceilings> {
        match self {
            CeilingsUsed::Used { ceilings, .. } => Some(ceilings),
            CeilingsUsed::Absent { .. } => None,
        }
    }

    pub fn identity(&self) -> Option<&CeilingsIdentity> {
        self.ceilings().map(|c| &c.identity)
    }
}

/// Picks the ceilings for `p`: those embedded in it when they are sane and of its
/// adapter, else `local` (the reading machine's cache entry, with its path) when it is
/// of the same adapter and driver, else none, with the reason. Figures measured on
/// another device are never used.
pub fn choose_ceilings(p: &Profile, local: Option<(&Ceilings, &str)>) -> CeilingsUsed {
    let mut why = Vec::new();
    if let Some(c) = &p.ceilings {
        match c.validate() {
            Err(e) => why.push(format!(
                "the profile's embedded ceilings are unusable ({e})"
            )),
            Ok(()) if !c.identity.same_device(&p.adapter) => why.push(format!(
                "the profile's embedded ceilings are of {}, not of its adapter",
                c.identity.device()
            )),
            Ok(()) => {
                return CeilingsUsed::Used {
                    ceilings: Box::new(c.clone()),
                    source: CeilingsSource::Embedded,
                }
            }
        }
    }
    match local {
        Some((c, path)) if c.validate().is_ok() && c.identity.same_device(&p.adapter) => {
            return CeilingsUsed::Used {
                ceilings: Box::new(c.clone()),
                source: CeilingsSource::LocalCache {
                    path: path.to_string(),
                },
            }
        }
        Some((c, _)) => why.push(format!(
            "the local cache holds ceilings of {}, not of the profile's adapter",
            c.identity.device()
        )),
        None => {}
    }
    if why.is_empty() {
        why.push("none measured for this adapter".into());
    }
    CeilingsUsed::Absent {
        reason: format!(
            "{}: run `gpuscope peak` on the machine that made the profile",
            why.join("; ")
        ),
    }
}

/// Every analysis of one profile, as the text report shows them. Headlines, breakdowns,
/// the roofline, the timeline and the checklist cover the steady tokens
/// ([`steady`]); `tokens` covers all of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    pub steady: SteadyState,
    /// All tokens.
    pub tokens: TokenStats,
    /// The steady tokens.
    pub tokens_steady: TokenStats,
    pub ops: OpBreakdown,
    pub layers: LayerBreakdown,
    /// Sampled timing's estimate of every dispatch site (`None` unless sampled): the op
    /// table, the layers, GPU busy, the timeline's busy time and the bottleneck are then
    /// estimated from it, and say so.
    pub estimate: Option<sampled::Estimate>,
    /// Dispatch spans corrected for the timestamps around them (`None` unless timing
    /// `dispatch` and `peak` measured their cost): the bottleneck judges these.
    pub correction: Option<correction::Correction>,
    pub sites: Sites,
    pub counters: CounterReport,
    pub timestamps: TimestampHealth,
    pub ceilings: CeilingsUsed,
    pub roofline: Roofline,
    pub timeline: Timeline,
    pub memory: Option<Memory>,
    pub checklist: Checklist,
    pub bottleneck: Bottleneck,
    /// pp and tg tok/s with their spread (steady tokens).
    pub headline: Headline,
    /// What could be made faster, largest estimated saving first.
    pub opportunities: Vec<Opportunity>,
}

/// Runs every analysis with the ceilings embedded in the profile (if any).
pub fn analyze(p: &Profile) -> Analysis {
    analyze_with(p, choose_ceilings(p, None))
}

/// Runs every analysis with the given ceilings (see [`choose_ceilings`]).
pub fn analyze_with(p: &Profile, ceilings: CeilingsUsed) -> Analysis {
    let steady = steady_state(p);
    let mut tokens_steady = token_stats_of(p, &steady);
    let set = TokenSet::new(tokens_steady.tokens.iter().copied());
    // The analyses that walk every event run side by side (a million events each).
    let ((sites, totals), (mut timeline, (timestamps, layers))) = rayon::join(
        || rayon::join(|| dispatch_sites(p, &set), || token_totals(p)),
        || {
            rayon::join(
                || timeline(p, &set),
                || rayon::join(|| timestamp_health(p), || layer_breakdown_of(p, &set)),
            )
        },
    );
    let steady_totals: Vec<(TokenTotals, u64)> = steady
        .steady
        .iter()
        .map(|&i| (totals[i], p.tokens[i].wall_ns))
        .collect();
    let just_totals: Vec<TokenTotals> = steady_totals.iter().map(|(t, _)| *t).collect();
    let estimate = sampled::estimate(p, &sites.sites, set.len());
    let (ops, layers) = match &estimate {
        Some(e) => {
            estimated_busy(e, &mut tokens_steady, &mut timeline);
            (
                ops::op_breakdown_from_sites(&e.estimated_sites),
                sampled::layers(p, e),
            )
        }
        None if sites.mismatched == 0 => (ops::op_breakdown_from_sites(&sites.sites), layers),
        None => (op_breakdown_of(p, &set), layers),
    };
    let roofline_sites = estimate
        .as_ref()
        .map_or(&sites.sites, |e| &e.estimated_sites);
    let counters = counter_report(p);
    let roofline = roofline(&RooflineInput {
        ceilings: ceilings.ceilings(),
        ops: &ops,
        sites: roofline_sites,
        tokens: &steady_totals,
        wall: tokens_steady.wall_ns,
    });
    let checklist = checklist(
        p,
        &ChecklistInput {
            sites: &sites.sites,
            ceilings: roofline.ceilings,
            fill_workgroups: ceilings
                .ceilings()
                .and_then(|c| c.fill)
                .map(|f| f.workgroups),
            counters: &counters,
            timestamps: &timestamps,
            tokens: &steady_totals,
        },
    );
    let correction = correction::correct(p, roofline_sites, set.len(), ceilings.ceilings());
    if let Some(c) = &correction {
        correct_estimated_busy(c, &mut tokens_steady, &mut timeline);
    }
    // (An estimated busy time is corrected in place, above.)
    let corrected_stats = correction
        .as_ref()
        .filter(|_| !tokens_steady.gpu_busy_corrected)
        .map(|c| corrected_busy(&tokens_steady, c));
    let mut bottleneck = bottleneck_of(
        p,
        &BottleneckInput {
            stats: corrected_stats.as_ref().unwrap_or(&tokens_steady),
            totals: &just_totals,
            ops: correction.as_ref().map_or(&ops, |c| &c.ops),
            layers: &layers,
        },
    );
    if let Some(c) = &correction {
        bottleneck.headline.push_str(&format!(
            " (spans corrected for their timestamps: {} less per dispatch)",
            crate::render::units::duration(c.timestamp_ns)
        ));
    }
    if let Some(e) = &estimate {
        bottleneck
            .headline
            .push_str(" (estimated from sampled timing)");
        bottleneck
            .evidence
            .insert(0, format!("times {}", e.basis()));
    }
    let opportunities = opportunities(&roofline, &ops, &checklist.fusion, steady_totals.len());
    Analysis {
        headline: headline(&tokens_steady, p.prompt.as_ref()),
        opportunities,
        tokens: token_stats(p),
        timeline,
        memory: memory(p),
        steady,
        tokens_steady,
        ops,
        layers,
        estimate,
        correction,
        sites,
        counters,
        timestamps,
        ceilings,
        roofline,
        checklist,
        bottleneck,
    }
}

/// GPU busy per token and the timeline's busy time and utilization from a sampled
/// estimate, where the spans alone give none.
fn estimated_busy(e: &sampled::Estimate, stats: &mut TokenStats, timeline: &mut Timeline) {
    if stats.gpu_busy_ns.is_none() {
        stats.gpu_busy_ns = Summary::of(std::iter::repeat_n(e.per_token_ns, e.tokens));
        stats.gpu_busy_estimated = true;
    }
    if timeline.busy_ns.is_none() && timeline.wall_ns > 0 {
        let busy = e.per_token_ns.saturating_mul(timeline.tokens as u64);
        timeline.busy_ns = Some(busy);
        timeline.utilization_percent = Some(busy as f64 / timeline.wall_ns as f64 * 100.0);
        timeline.busy_estimated = true;
        timeline
            .unavailable
            .retain(|u| !matches!(u.metric, "busy" | "utilization"));
    }
}

/// An estimated GPU busy (sampled timing) corrected for the timestamps: the estimate
/// sums every site's sampled span, each lengthened by its own timestamps, so uncorrected
/// it describes a program in which every dispatch is timed (utilization over 100%).
fn correct_estimated_busy(c: &correction::Correction, stats: &mut TokenStats, t: &mut Timeline) {
    if stats.gpu_busy_estimated {
        *stats = corrected_busy(stats, c);
        stats.gpu_busy_corrected = true;
    }
    if t.busy_estimated {
        let per_token = c.corrected_per_token_ns;
        let busy = per_token.saturating_mul(t.tokens as u64);
        t.busy_ns = Some(busy);
        t.utilization_percent = (t.wall_ns > 0).then(|| busy as f64 / t.wall_ns as f64 * 100.0);
        t.busy_corrected = true;
    }
}

/// `stats` with GPU busy less what the timestamps added to the token's dispatches.
fn corrected_busy(stats: &TokenStats, c: &correction::Correction) -> TokenStats {
    let added = c
        .measured_per_token_ns
        .saturating_sub(c.corrected_per_token_ns);
    let mut s = stats.clone();
    if let Some(g) = &mut s.gpu_busy_ns {
        for v in [
            &mut g.min,
            &mut g.p10,
            &mut g.median,
            &mut g.p90,
            &mut g.max,
        ] {
            *v = v.saturating_sub(added);
        }
    }
    s
}
