//! Timeline metrics: how densely the GPU was kept busy, with the definitions Holistic
//! Trace Analysis (HTA) uses, adapted to one wgpu queue (formulas in
//! `docs/analysis.md`).
//!
//! - kernels: the valid dispatch spans (timing `dispatch`), else the pass spans
//!   (timing `pass`: busy time then includes the gaps inside passes)
//! - busy = length of the union of the kernel spans; utilization = busy / wall, with
//!   wall the tokens' summed wall time
//! - gaps: idle time between consecutive kernels (start minus the latest end before
//!   it); a gap next to a kernel without a valid span is unknown and left out
//! - launch efficiency = Σ busy within each token / Σ (last end − first start) of each
//!   fully timed token: the share of a token's GPU span in which a kernel runs
//! - idle = wall − busy, split into kernel gaps (the next kernel's work was already
//!   submitted: launch and barrier overhead, HTA's "kernel wait") and host wait (the
//!   CPU had not yet submitted the next kernel's token when the previous kernel ended,
//!   HTA's rule with `submit` as the launch call), and what lies outside the kernels'
//!   span (before the first, after the last, around missing spans). Host wait needs
//!   the CPU spans on the GPU's clock ([`super::clock`]).
//!
//! Every metric that cannot be computed is listed in [`Timeline::unavailable`] with
//! the reason (no timestamps, pass timing, sampling, no CPU spans).

use std::collections::HashMap;

use super::clock::{align_clocks, cpu_brackets, AlignError, ClockAlignment};
use super::per_token::TokenSet;
use gpuscope_trace::stats::percentile;
use gpuscope_trace::{GpuSpan, Profile, TimestampIssue, TimingMode};

/// Where the kernel spans came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KernelSource {
    Dispatches,
    /// Pass spans stand in for kernels (timing `pass`, or sampled dispatch timing).
    Passes,
}

/// Statistics of the gaps between consecutive kernels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GapStats {
    pub count: u64,
    pub total_ns: u64,
    pub mean_ns: f64,
    pub p90_ns: u64,
}

/// Idle time split by cause (ns over the covered tokens).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdleSplit {
    /// wall − busy.
    pub idle_ns: u64,
    /// Gaps inside a token plus gaps between tokens whose work was already submitted.
    pub kernel_gaps_ns: u64,
    /// Gaps between tokens while the CPU had not submitted the next one; `None`
    /// without CPU spans on the GPU clock.
    pub host_wait_ns: Option<u64>,
    /// Gaps between tokens that could not be attributed (no CPU spans).
    pub between_tokens_unattributed_ns: u64,
    /// The rest of the idle time: outside the kernels' span (the CPU's part of the
    /// first and last token), or around kernels without a valid span.
    pub other_ns: u64,
    /// How much the measured gaps exceed wall − busy (tokens in flight overlap, so
    /// the GPU's span can be longer than the wall time each token added); 0 mostly.
    pub gaps_beyond_idle_ns: u64,
}

/// A metric that could not be computed, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable {
    pub metric: &'static str,
    pub reason: String,
}

/// The timeline metrics of a set of tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub source: Option<KernelSource>,
    /// Tokens covered and their summed wall time.
    pub tokens: usize,
    pub wall_ns: u64,
    /// Dispatches recorded in those tokens.
    pub kernel_count: u64,
    /// Kernel spans used (dispatches or passes, see `source`).
    pub timed_kernels: u64,
    pub busy_ns: Option<u64>,
    /// busy / wall, in percent.
    pub utilization_percent: Option<f64>,
    /// `busy_ns` is sampled timing's estimate (the sites' estimated spans summed), not
    /// the union of measured spans.
    pub busy_estimated: bool,
    /// The estimate is corrected for the timestamps around the sampled dispatches.
    pub busy_corrected: bool,
    /// Mean valid dispatch span, ns.
    pub mean_kernel_ns: Option<f64>,
    pub gaps: Option<GapStats>,
    /// Gaps left out because a kernel next to them has no valid span.
    pub unknown_gaps: u64,
    /// Kernels that started before the previous one ended (their overlap counts once
    /// in busy time).
    pub overlaps: u64,
    pub launch_efficiency_percent: Option<f64>,
    pub idle: Option<IdleSplit>,
    /// The clock alignment used for host wait, or why there is none.
    pub alignment: Result<ClockAlignment, AlignError>,
    pub unavailable: Vec<Unavailable>,
}

/// One kernel span in profile order.
#[derive(Clone, Copy)]
struct Kernel {
    token: u32,
    span: Option<GpuSpan>,
}

fn valid(span: Option<GpuSpan>, issue: Option<TimestampIssue>) -> Option<GpuSpan> {
    gpuscope_trace::valid_span_ns(span, issue).and(span)
}

/// Timeline metrics over the tokens in `tokens` (see the module docs).
pub fn timeline(p: &Profile, tokens: &TokenSet) -> Timeline {
    let covered: Vec<&gpuscope_trace::TokenRecord> = p
        .tokens
        .iter()
        .filter(|t| tokens.contains(t.index))
        .collect();
    let covered = Covered {
        tokens: covered.len(),
        wall_ns: covered
            .iter()
            .fold(0u64, |sum, t| sum.saturating_add(t.wall_ns)),
    };
    let spans = KernelSpans::of(p, tokens);
    let alignment = align_clocks(p);
    match spans.source() {
        None => untimed(p, &spans, covered, alignment),
        Some(source) => timed(p, spans, source, covered, alignment),
    }
}

/// The tokens a timeline covers: how many, and their summed wall time.
#[derive(Clone, Copy)]
struct Covered {
    tokens: usize,
    wall_ns: u64,
}

/// The metrics that could not be computed, in the order they were found.
#[derive(Default)]
struct Missing(Vec<Unavailable>);

impl Missing {
    fn add(&mut self, metric: &'static str, reason: &str) {
        self.0.push(Unavailable {
            metric,
            reason: reason.to_string(),
        })
    }
}

/// The candidate kernel spans of the covered tokens: dispatches and passes.
struct KernelSpans {
    dispatches: Vec<Kernel>,
    passes: Vec<Kernel>,
    /// Dispatches recorded, timed or not.
    kernel_count: u64,
    /// Mean valid dispatch span, ns.
    mean_kernel_ns: Option<f64>,
    /// Some dispatch has a valid span.
    dispatch_timed: bool,
    /// Only some dispatches were timed (sampling).
    sampled: bool,
}

impl KernelSpans {
    fn of(p: &Profile, tokens: &TokenSet) -> KernelSpans {
        // One walk over the dispatch events (a million in a long run): count them, sum
        // the valid spans and keep each as a small record for the walks below.
        let mut dispatches: Vec<Kernel> = Vec::new();
        let (mut timed_sum, mut timed_n) = (0u64, 0u64);
        for d in p.dispatches.iter().filter(|d| tokens.contains(d.token)) {
            let span = valid(d.gpu, d.timestamp_issue);
            if let Some(s) = span {
                // Saturating: a hostile file's spans can sum past u64 (fuzzing found it).
                timed_sum = timed_sum.saturating_add(s.duration_ns());
                timed_n += 1;
            }
            dispatches.push(Kernel {
                token: d.token,
                span,
            });
        }
        let passes: Vec<Kernel> = p
            .passes
            .iter()
            .filter(|s| tokens.contains(s.token))
            .map(|s| Kernel {
                token: s.token,
                span: valid(s.gpu, s.timestamp_issue),
            })
            .collect();
        let dispatch_timed = timed_n > 0;
        KernelSpans {
            kernel_count: dispatches.len() as u64,
            dispatches,
            passes,
            mean_kernel_ns: dispatch_timed.then(|| timed_sum as f64 / timed_n as f64),
            dispatch_timed,
            sampled: p.timing.sampling.as_ref().is_some_and(|s| s.stride > 1),
        }
    }

    /// Dispatch spans when every dispatch was timed, else pass spans if any is valid.
    fn source(&self) -> Option<KernelSource> {
        let pass_timed = self.passes.iter().any(|k| k.span.is_some());
        match (self.dispatch_timed && !self.sampled, pass_timed) {
            (true, _) => Some(KernelSource::Dispatches),
            (false, true) => Some(KernelSource::Passes),
            (false, false) => None,
        }
    }
}

/// No kernel spans to use: only counts and wall time, every other metric unavailable.
fn untimed(
    p: &Profile,
    spans: &KernelSpans,
    covered: Covered,
    alignment: Result<ClockAlignment, AlignError>,
) -> Timeline {
    let mut missing = Missing::default();
    let why = match (p.timing.mode, spans.sampled && spans.dispatch_timed) {
        (TimingMode::Off, _) => "timing off: no GPU timestamps",
        (_, true) => "only some dispatches were timed (sampling) and no pass has a span",
        _ => "no valid GPU span in these tokens",
    };
    for m in [
        "busy",
        "utilization",
        "gaps",
        "launch efficiency",
        "idle split",
    ] {
        missing.add(m, why);
    }
    if spans.mean_kernel_ns.is_none() {
        missing.add("mean kernel time", why);
    }
    Timeline {
        busy_estimated: false,
        busy_corrected: false,
        source: None,
        tokens: covered.tokens,
        wall_ns: covered.wall_ns,
        kernel_count: spans.kernel_count,
        timed_kernels: 0,
        busy_ns: None,
        utilization_percent: None,
        mean_kernel_ns: spans.mean_kernel_ns,
        gaps: None,
        unknown_gaps: 0,
        overlaps: 0,
        launch_efficiency_percent: None,
        idle: None,
        alignment,
        unavailable: missing.0,
    }
}

/// The metrics over the kernels `source` names: busy time, the gaps walked and
/// attributed, launch efficiency, the idle split.
fn timed(
    p: &Profile,
    spans: KernelSpans,
    source: KernelSource,
    covered: Covered,
    alignment: Result<ClockAlignment, AlignError>,
) -> Timeline {
    let mut missing = Missing::default();
    if spans.mean_kernel_ns.is_none() {
        missing.add(
            "mean kernel time",
            "timing pass: passes are timed, not dispatches",
        );
    }
    let kernels: Vec<Kernel> = match source {
        KernelSource::Dispatches => spans.dispatches,
        KernelSource::Passes => spans.passes,
    };
    if source == KernelSource::Passes {
        let why = if spans.sampled {
            "sampled dispatch timing: busy time and gaps come from pass spans (they include the gaps inside passes)"
        } else {
            "timing pass: gaps between dispatches inside a pass are not visible"
        };
        missing.add("launch efficiency", why);
        missing.add("gaps inside passes", why);
    }
    let valid_spans: Vec<GpuSpan> = kernels.iter().filter_map(|k| k.span).collect();
    let busy_ns = union_ns(&valid_spans);
    let walk = walk(p, &kernels, alignment.as_ref().ok());
    if let Err(e) = &alignment {
        missing.add(
            "host wait",
            &format!("needs CPU spans on the GPU clock: {e}"),
        );
    }
    let launch_efficiency_percent = (source == KernelSource::Dispatches && walk.token_span_ns > 0)
        .then(|| walk.token_busy_ns as f64 / walk.token_span_ns as f64 * 100.0);
    if source == KernelSource::Dispatches && launch_efficiency_percent.is_none() {
        missing.add(
            "launch efficiency",
            "no token has every dispatch timed with a positive span",
        );
    }
    let wall_ns = covered.wall_ns;
    Timeline {
        busy_estimated: false,
        busy_corrected: false,
        source: Some(source),
        tokens: covered.tokens,
        wall_ns,
        kernel_count: spans.kernel_count,
        timed_kernels: valid_spans.len() as u64,
        busy_ns: Some(busy_ns),
        utilization_percent: (wall_ns > 0).then(|| busy_ns as f64 / wall_ns as f64 * 100.0),
        mean_kernel_ns: spans.mean_kernel_ns,
        gaps: gap_stats(&walk.gaps),
        unknown_gaps: walk.unknown_gaps,
        overlaps: walk.overlaps,
        launch_efficiency_percent,
        idle: Some(idle_split(wall_ns, busy_ns, &walk, alignment.is_ok())),
        alignment,
        unavailable: missing.0,
    }
}

fn gap_stats(gaps: &[u64]) -> Option<GapStats> {
    (!gaps.is_empty()).then(|| {
        let mut g = gaps.to_vec();
        g.sort_unstable();
        let total = gpuscope_trace::stats::saturating_sum(g.iter().copied());
        GapStats {
            count: g.len() as u64,
            total_ns: total,
            mean_ns: total as f64 / g.len() as f64,
            p90_ns: percentile(&g, 90.0).unwrap_or(0),
        }
    })
}

/// wall − busy split by cause; host wait only when the CPU spans are on the GPU clock.
fn idle_split(wall_ns: u64, busy_ns: u64, walk: &Walk, host_wait_known: bool) -> IdleSplit {
    let idle_ns = wall_ns.saturating_sub(busy_ns);
    let attributed = walk.within_ns + walk.queued_ns + walk.host_wait_ns + walk.unattributed_ns;
    IdleSplit {
        idle_ns,
        kernel_gaps_ns: walk.within_ns + walk.queued_ns,
        host_wait_ns: host_wait_known.then_some(walk.host_wait_ns),
        between_tokens_unattributed_ns: walk.unattributed_ns,
        other_ns: idle_ns.saturating_sub(attributed),
        gaps_beyond_idle_ns: attributed.saturating_sub(idle_ns),
    }
}

/// Length of the union of `spans`, ns.
pub fn union_ns(spans: &[GpuSpan]) -> u64 {
    let sorted_storage;
    let spans = if spans.is_sorted_by_key(|s| s.start_ns) {
        spans
    } else {
        let mut v = spans.to_vec();
        v.sort_unstable_by_key(|s| s.start_ns);
        sorted_storage = v;
        &sorted_storage
    };
    let mut total = 0;
    let mut covered_to = 0u64;
    for s in spans {
        let start = s.start_ns.max(covered_to);
        if s.end_ns > start {
            total += s.end_ns - start;
            covered_to = s.end_ns;
        }
    }
    total
}

#[derive(Default)]
struct Walk {
    gaps: Vec<u64>,
    within_ns: u64,
    queued_ns: u64,
    host_wait_ns: u64,
    unattributed_ns: u64,
    unknown_gaps: u64,
    overlaps: u64,
    /// Over fully timed tokens: union of their kernels and first-start-to-last-end.
    token_busy_ns: u64,
    token_span_ns: u64,
}

/// Per token while walking: first start, latest end, union so far, all timed.
struct TokenRun {
    token: u32,
    first: u64,
    end: u64,
    busy: u64,
    complete: bool,
}

/// Walks the kernels in profile (submission) order, measuring each gap between
/// consecutive valid kernels and attributing it.
fn walk(p: &Profile, kernels: &[Kernel], align: Option<&ClockAlignment>) -> Walk {
    let position = super::per_token::token_positions(p);
    let submit: HashMap<u32, u64> = match align {
        Some(_) => cpu_brackets(p)
            .into_iter()
            .filter_map(|(t, b)| Some((t, b.start()?)))
            .collect(),
        None => HashMap::new(),
    };
    let mut w = Walk::default();
    // The latest end so far and its token; `None` after a kernel without a valid span.
    let mut prev: Option<(u32, u64)> = None;
    let mut started = false;
    let mut run: Option<TokenRun> = None;
    let close = |run: Option<TokenRun>, w: &mut Walk| {
        if let Some(r) = run.filter(|r| r.complete && r.end > r.first) {
            w.token_busy_ns = w.token_busy_ns.saturating_add(r.busy);
            w.token_span_ns = w.token_span_ns.saturating_add(r.end - r.first);
        }
    };
    for k in kernels {
        if run.as_ref().is_none_or(|r| r.token != k.token) {
            close(run.take(), &mut w);
            run = Some(TokenRun {
                token: k.token,
                first: u64::MAX,
                end: 0,
                busy: 0,
                complete: true,
            });
        }
        let r = run.as_mut().expect("set above");
        let Some(span) = k.span else {
            r.complete = false;
            if started {
                prev = None;
            }
            continue;
        };
        r.busy += span.end_ns.saturating_sub(span.start_ns.max(r.end));
        r.first = r.first.min(span.start_ns);
        r.end = r.end.max(span.end_ns);
        match prev {
            None if started => w.unknown_gaps += 1,
            None => {}
            Some((token, end)) => {
                let gap = span.start_ns.saturating_sub(end);
                if span.start_ns < end {
                    w.overlaps += 1;
                }
                let next_token = position
                    .get(&token)
                    .zip(position.get(&k.token))
                    .is_some_and(|(a, b)| *b == a + 1);
                if token == k.token {
                    w.gaps.push(gap);
                    w.within_ns = w.within_ns.saturating_add(gap);
                } else if next_token {
                    w.gaps.push(gap);
                    let submitted = align
                        .zip(submit.get(&k.token))
                        .map(|(a, &s)| a.to_gpu(s) <= end as i64);
                    match submitted {
                        Some(true) => w.queued_ns = w.queued_ns.saturating_add(gap),
                        Some(false) => w.host_wait_ns = w.host_wait_ns.saturating_add(gap),
                        None => w.unattributed_ns = w.unattributed_ns.saturating_add(gap),
                    }
                }
                // Else the tokens are not consecutive in the set (a slow start or an
                // outlier left out between them): no gap to measure.
            }
        }
        started = true;
        let end = prev
            .filter(|(t, _)| *t == k.token)
            .map_or(span.end_ns, |(_, e)| e.max(span.end_ns));
        prev = Some((k.token, end));
    }
    close(run, &mut w);
    w
}
