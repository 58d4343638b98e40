//! The performance checklist: each item the seeds list, checked with evidence that
//! names the op, layer or dispatch and the numbers, and the next command to run.
//!
//! Items (thresholds in `docs/analysis.md`):
//!
//! 1. more than one sync per token
//! 2. resources created after the first token
//! 3. CPU fallback: CPU spans named `cpu_fallback` (the GPU path has none by design;
//!    anything that does CPU work on it must record one)
//! 4. fusion candidates: an element-wise dispatch right after the dispatch that writes
//!    its input (see [`ELEMENTWISE_OPS`] and [`fusion_candidates`])
//! 5. kernels under [`UNDER_CEILING_PERCENT`] of their ceiling
//! 6. launch-bound tokens: dispatches × dependent-dispatch floor ≥
//!    [`LAUNCH_BOUND_PERCENT`] of the token's wall time
//! 7. flagged timestamps
//! 8. timing-mode overhead above [`OVERHEAD_PERCENT`]
//! 9. dispatches with fewer workgroups than fill the device (measured by `peak`)

use super::counters::{creations_judged_from, CounterReport};
use super::per_token::TokenTotals;
use super::roofline::RooflineCeilings;
use super::sites::Site;
use super::timestamps::TimestampHealth;
use gpuscope_trace::graph::{Binding, GraphDesc};
use gpuscope_trace::{Profile, TimestampIssue};

pub const UNDER_CEILING_PERCENT: f64 = 10.0;
pub const LAUNCH_BOUND_PERCENT: f64 = 50.0;
pub const OVERHEAD_PERCENT: f64 = 10.0;
/// Findings listed per item; the rest are counted.
pub const LISTED: usize = 5;

/// Op families whose every output element depends only on the input elements at the
/// same position (a rotation pair for `rope`): fusing one into the dispatch before it
/// needs no data from other workgroups. An op matches a family when it equals it or
/// starts with it followed by `_` (`add_f16`).
pub const ELEMENTWISE_OPS: [&str; 8] = [
    "add", "mul", "scale", "silu", "silu_mul", "gelu", "rope", "residual",
];

/// Whether `op` belongs to an element-wise family.
pub fn is_elementwise(op: &str) -> bool {
    ELEMENTWISE_OPS.iter().any(|f| {
        op == *f
            || op.strip_prefix(f).is_some_and(|rest| {
                // `mul_mat…` and `mul_mm…` (llama.cpp's matrix products) and
                // `…_rms…` / `…norm…` (reductions) share a prefix but not the kind.
                rest.starts_with('_')
                    && !["norm", "rms", "mat", "mm"]
                        .iter()
                        .any(|k| rest[1..].split('_').any(|w| w.starts_with(k)))
            })
    })
}

/// How an item came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ItemStatus {
    Ok,
    Warn,
    /// Not checkable from this profile; the summary says what is missing.
    Unknown,
}

/// One checklist item.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Stable key, e.g. `syncs`, `fusion`.
    pub id: &'static str,
    pub title: &'static str,
    pub status: ItemStatus,
    /// One line with the numbers.
    pub summary: String,
    /// Lines naming the ops, layers or dispatches behind it.
    pub evidence: Vec<String>,
    /// The command to run next.
    pub next: Option<String>,
}

/// Two dispatches a fusion would merge.
#[derive(Debug, Clone, PartialEq)]
pub struct FusionCandidate {
    /// Both element-wise (a chain), or an element-wise op after any op (an epilogue).
    pub chain: bool,
    pub producer: SiteRef,
    pub consumer: SiteRef,
    /// The buffer passed between them; `None` without recorded bindings.
    pub via: Option<String>,
    /// Bytes per token a fusion would not move (the consumer's read of the
    /// intermediate, and the producer's write when nothing later reads it).
    pub bytes_saved: Option<u64>,
    /// The consumer's mean GPU time per call: what a fusion could save at most, ns.
    pub consumer_ns: Option<f64>,
}

/// A dispatch site, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SiteRef {
    pub index: u32,
    pub op: String,
    pub label: String,
}

impl SiteRef {
    fn of(s: &Site) -> SiteRef {
        SiteRef {
            index: s.index,
            op: s.op.clone(),
            label: s.label.clone(),
        }
    }
}

/// The checklist.
#[derive(Debug, Clone, PartialEq)]
pub struct Checklist {
    pub items: Vec<Item>,
    pub fusion: Vec<FusionCandidate>,
}

impl Checklist {
    pub fn warnings(&self) -> impl Iterator<Item = &Item> {
        self.items.iter().filter(|i| i.status == ItemStatus::Warn)
    }
}

/// What the checklist reads, computed by the other analyses over the steady tokens.
pub struct ChecklistInput<'a> {
    pub sites: &'a [Site],
    pub ceilings: Option<RooflineCeilings>,
    pub fill_workgroups: Option<u32>,
    pub counters: &'a CounterReport,
    pub timestamps: &'a TimestampHealth,
    /// Per steady token: totals and wall time.
    pub tokens: &'a [(TokenTotals, u64)],
}

/// Runs every item.
pub fn checklist(p: &Profile, input: &ChecklistInput) -> Checklist {
    let fusion = fusion_candidates(p.graph.as_ref(), input.sites);
    let items = vec![
        syncs(p),
        created_after_first(p, input.counters),
        cpu_fallback(p),
        fusion_item(&fusion, p.graph.is_some()),
        under_ceiling(input),
        launch_bound(input),
        flagged_timestamps(p, input.timestamps),
        overhead(p),
        small_grids(input),
    ];
    Checklist { items, fusion }
}

fn item(id: &'static str, title: &'static str) -> Item {
    Item {
        id,
        title,
        status: ItemStatus::Ok,
        summary: String::new(),
        evidence: Vec::new(),
        next: None,
    }
}

use crate::render::units::bytes;

fn ms(ns: f64) -> String {
    format!("{:.3} ms", ns / 1e6)
}

fn us(ns: f64) -> String {
    format!("{:.1} µs", ns / 1e3)
}

fn workgroups(n: u64) -> String {
    format!("{n} workgroup{}", if n == 1 { "" } else { "s" })
}

fn syncs(p: &Profile) -> Item {
    let mut it = item("syncs", "at most one sync per token");
    let over: Vec<&gpuscope_trace::TokenRecord> =
        p.tokens.iter().filter(|t| t.counters.syncs > 1).collect();
    if p.tokens.is_empty() {
        it.status = ItemStatus::Unknown;
        it.summary = "no tokens".into();
    } else if over.is_empty() {
        it.summary = "every token syncs at most once".into();
    } else {
        let worst = over
            .iter()
            .max_by_key(|t| t.counters.syncs)
            .expect("not empty");
        it.status = ItemStatus::Warn;
        it.summary = format!(
            "{} of {} tokens sync more than once (token {} syncs {} times): the CPU waits on the GPU mid-token",
            over.len(),
            p.tokens.len(),
            worst.index,
            worst.counters.syncs
        );
        it.next = Some(
            "GPUSCOPE_LOG=info gpuscope profile <same options> 2>&1 | grep gpu_wait  (each wait, with what called it)"
                .into(),
        );
    }
    it
}

fn created_after_first(p: &Profile, counters: &CounterReport) -> Item {
    let mut it = item("created", "nothing created after the first token");
    let steady = p.tokens.get(1..).unwrap_or(&[]);
    if steady.is_empty() {
        it.status = ItemStatus::Unknown;
        it.summary = "only one token".into();
        return it;
    }
    let created: u64 = steady.iter().map(|t| t.counters.resources_created()).sum();
    if created == 0 {
        it.summary = "no buffer, bind group or pipeline created after the first token".into();
        return it;
    }
    let first = steady
        .iter()
        .find(|t| t.counters.resources_created() > 0)
        .expect("some token created");
    let from = creations_judged_from(p);
    let last = steady
        .iter()
        .rev()
        .find(|t| t.counters.resources_created() > 0)
        .expect("some token created");
    let max = counters.steady_max.unwrap_or_default();
    if (last.index as usize) < from {
        // An attached program's warm-up (see `creations_judged_from`).
        let tokens = if first.index == last.index {
            format!("token {}", first.index)
        } else {
            format!("tokens {}-{}", first.index, last.index)
        };
        it.summary = format!(
            "{created} resources created in {tokens} only, none in the {} tokens after: the program's warm-up (an attached program's setup runs in its first steps), not per-token churn",
            p.tokens.len().saturating_sub(last.index as usize + 1)
        );
        return it;
    }
    it.status = ItemStatus::Warn;
    it.summary = format!(
        "{created} resources created after the first token (first in token {}; at most {} buffers, {} bind groups, {} pipelines in one token)",
        first.index, max.buffers_created, max.bind_groups_created, max.pipelines_created
    );
    it.evidence = p
        .buffers
        .iter()
        .filter(|b| b.created_token.is_some_and(|t| t > 0))
        .take(LISTED)
        .map(|b| {
            format!(
                "buffer {} ({} bytes, {}) created in token {}",
                b.label,
                b.bytes,
                b.kind.as_str(),
                b.created_token.unwrap_or(0)
            )
        })
        .collect();
    it.next = Some(
        "GPUSCOPE_LOG=info gpuscope profile <same options> 2>&1 | grep create_  (each creation span)"
            .into(),
    );
    it
}

fn cpu_fallback(p: &Profile) -> Item {
    let mut it = item("cpu_fallback", "no CPU fallback on the GPU path");
    let spans: Vec<&gpuscope_trace::CpuSpan> = p
        .cpu_spans
        .iter()
        .filter(|s| s.name == "cpu_fallback")
        .collect();
    if spans.is_empty() {
        if p.cpu_spans.is_empty() {
            it.status = ItemStatus::Unknown;
            it.summary = "this profile records no CPU spans (fallbacks are recorded as `cpu_fallback` spans)".into();
        } else {
            it.summary = "no `cpu_fallback` span recorded".into();
        }
        return it;
    }
    let total: u64 = spans
        .iter()
        .map(|s| s.end_ns.saturating_sub(s.start_ns))
        .sum();
    let tokens = p.tokens.len().max(1) as f64;
    it.status = ItemStatus::Warn;
    it.summary = format!(
        "{} CPU fallback spans, {} of CPU time per token",
        spans.len(),
        ms(total as f64 / tokens)
    );
    let mut by_detail: std::collections::BTreeMap<&str, (u64, u64)> = Default::default();
    for s in &spans {
        let e = by_detail
            .entry(s.detail.as_deref().unwrap_or("(no detail)"))
            .or_default();
        e.0 += 1;
        e.1 += s.end_ns.saturating_sub(s.start_ns);
    }
    it.evidence = by_detail
        .iter()
        .take(LISTED)
        .map(|(d, (n, ns))| format!("{d}: {n} times, {} in all", ms(*ns as f64)))
        .collect();
    it.next = Some("move the op to a GPU kernel (the design allows no silent CPU fallback)".into());
    it
}

/// Finds fusion candidates among consecutive sites (see the module docs).
///
/// With the graph's bindings ([`GraphDesc`]): site `i + 1` is element-wise and reads a
/// range site `i` writes. Without them: both are element-wise and in the same pass
/// (their buffers unknown).
pub fn fusion_candidates(graph: Option<&GraphDesc>, sites: &[Site]) -> Vec<FusionCandidate> {
    let mut out = Vec::new();
    for pair in sites.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        if b.index != a.index + 1 || !is_elementwise(&b.op) {
            continue;
        }
        let chain = is_elementwise(&a.op);
        let consumer_ns = b.mean_ns();
        match graph {
            Some(g) => {
                let (Some(da), Some(db)) = (
                    g.dispatches.get(a.index as usize),
                    g.dispatches.get(b.index as usize),
                ) else {
                    continue;
                };
                let Some((w, r)) = da
                    .writes
                    .iter()
                    .find_map(|w| db.reads.iter().find(|r| r.overlaps(w)).map(|r| (w, r)))
                else {
                    continue;
                };
                let later_read = later_reads(g, b.index as usize + 1, w)
                    && !db.writes.iter().any(|x| x.overlaps(w));
                let shared = r.bytes.min(w.bytes);
                out.push(FusionCandidate {
                    chain,
                    producer: SiteRef::of(a),
                    consumer: SiteRef::of(b),
                    via: Some(g.label(w.buffer).to_string()),
                    bytes_saved: Some(if later_read { shared } else { 2 * shared }),
                    consumer_ns,
                });
            }
            None if chain && a.pass == b.pass => out.push(FusionCandidate {
                chain,
                producer: SiteRef::of(a),
                consumer: SiteRef::of(b),
                via: None,
                bytes_saved: None,
                consumer_ns,
            }),
            None => {}
        }
    }
    out
}

fn later_reads(g: &GraphDesc, from: usize, w: &Binding) -> bool {
    g.dispatches
        .iter()
        .skip(from)
        .any(|d| d.reads.iter().any(|r| r.overlaps(w)))
}

fn fusion_item(fusion: &[FusionCandidate], has_graph: bool) -> Item {
    let mut it = item("fusion", "fusion candidates");
    if fusion.is_empty() {
        it.summary = if has_graph {
            "no element-wise dispatch follows the dispatch that writes its input".into()
        } else {
            "no two consecutive element-wise dispatches in one pass (bindings not recorded: epilogue fusions not checked)".into()
        };
        return it;
    }
    let traffic =
        gpuscope_trace::stats::saturating_sum(fusion.iter().filter_map(|f| f.bytes_saved));
    let ns: f64 = fusion.iter().filter_map(|f| f.consumer_ns).sum();
    it.status = ItemStatus::Warn;
    it.summary = format!(
        "{} fusions would save {} dispatches per token{}{}",
        fusion.len(),
        fusion.len(),
        if traffic > 0 {
            format!(" and {} of traffic", bytes(traffic))
        } else {
            String::new()
        },
        if ns > 0.0 {
            format!(" (up to {} of GPU time)", us(ns))
        } else {
            String::new()
        }
    );
    let mut shown: Vec<&FusionCandidate> = fusion.iter().collect();
    shown.sort_by(|x, y| {
        y.consumer_ns
            .unwrap_or(0.0)
            .total_cmp(&x.consumer_ns.unwrap_or(0.0))
    });
    it.evidence = shown
        .iter()
        .take(LISTED)
        .map(|f| {
            let kind = if f.chain {
                "element-wise chain"
            } else {
                "epilogue"
            };
            let via = f
                .via
                .as_ref()
                .map_or(String::new(), |v| format!(" via {v}"));
            let saved = f
                .bytes_saved
                .map_or(String::new(), |b| format!(", {}", bytes(b)));
            let time = f
                .consumer_ns
                .map_or(String::new(), |t| format!(", {} per call", us(t)));
            format!(
                "{kind}: #{} {} ({}) -> #{} {} ({}){via}: 1 dispatch{saved}{time}",
                f.producer.index,
                f.producer.label,
                f.producer.op,
                f.consumer.index,
                f.consumer.label,
                f.consumer.op
            )
        })
        .collect();
    if fusion.len() > LISTED {
        it.evidence
            .push(format!("... and {} more", fusion.len() - LISTED));
    }
    it.next = Some(
        "fuse them where the graph is built, then gpuscope profile <same options> and compare dispatches and time"
            .into(),
    );
    it
}

fn under_ceiling(input: &ChecklistInput) -> Item {
    let mut it = item("under_ceiling", "kernels reach 10% of their ceiling");
    let Some(c) = input.ceilings else {
        it.status = ItemStatus::Unknown;
        it.summary = "no measured ceilings (run `gpuscope peak`)".into();
        return it;
    };
    // Judged per call by the median (a mean carries one slow call: a first-token
    // cold start of 1.6 ms among 54 µs calls once made a WARN).
    let mut low: Vec<(&Site, f64, f64)> = input
        .sites
        .iter()
        .filter_map(|s| {
            let median = s.median_ns()? as f64;
            let per_call = c.site_attainable_ns(s)? / s.timed_calls.max(1) as f64;
            let pct = per_call / median.max(1.0) * 100.0;
            (pct < UNDER_CEILING_PERCENT).then_some((
                s,
                pct,
                (median - per_call) * s.timed_calls as f64,
            ))
        })
        .collect();
    if input.sites.iter().all(|s| s.timed_calls == 0) {
        it.status = ItemStatus::Unknown;
        it.summary = "no per-dispatch GPU times (needs timing `dispatch`)".into();
        it.next = Some("gpuscope profile <same options> --timing dispatch".into());
        return it;
    }
    if low.is_empty() {
        it.summary = format!(
            "every timed dispatch reaches at least {UNDER_CEILING_PERCENT:.0}% of its ceiling (median call)"
        );
        return it;
    }
    low.sort_by(|x, y| y.2.total_cmp(&x.2));
    let lost: f64 = low.iter().map(|x| x.2).sum();
    let tokens = input.tokens.len().max(1) as f64;
    it.status = ItemStatus::Warn;
    it.summary = format!(
        "{} dispatches per token run under {UNDER_CEILING_PERCENT:.0}% of their ceiling (median call), {} per token above the ceiling's time",
        low.len(),
        ms(lost / tokens)
    );
    it.evidence = low
        .iter()
        .take(LISTED)
        .map(|(s, pct, _)| {
            let spread = s.call_ns.map_or(String::new(), |c| {
                format!(" (p10-p90 {}-{})", us(c.p10 as f64), us(c.p90 as f64))
            });
            format!(
                "#{} {} ({}{}): {:.1}% of ceiling, median {} per call{spread}, {} per call, {}",
                s.index,
                s.label,
                s.op,
                s.layer.map_or(String::new(), |l| format!(", layer {l}")),
                pct,
                us(s.median_ns().unwrap_or(0) as f64),
                bytes(s.timed_bytes / s.timed_calls.max(1)),
                workgroups(s.workgroup_count())
            )
        })
        .collect();
    if let Some((s, _, _)) = low.first().filter(|(s, _, _)| s.op.contains("gemv")) {
        it.next = Some(format!(
            "gpuscope bench --sweep variant=shared,subgroup,rows,blocks,dp4a  (why: {} is a gemv, bound by memory: far from its bandwidth ceiling the kernel's variant and spread are what to change; --save-tuning keeps the fastest)",
            s.label
        ));
        return it;
    }
    it.next = Some(
        "gpuscope profile <same options> --capture DIR, then gpuscope replay DIR --per-command  (each command alone)"
            .into(),
    );
    it
}

fn launch_bound(input: &ChecklistInput) -> Item {
    let mut it = item("launch_bound", "tokens are not launch-bound");
    let Some(floor) = input.ceilings.and_then(|c| c.dispatch_floor_ns) else {
        it.status = ItemStatus::Unknown;
        it.summary = "no measured dispatch floor (run `gpuscope peak`)".into();
        return it;
    };
    if input.tokens.is_empty() {
        it.status = ItemStatus::Unknown;
        it.summary = "no steady tokens".into();
        return it;
    }
    let shares: Vec<f64> = input
        .tokens
        .iter()
        .map(|(t, wall)| t.dispatches as f64 * floor / (*wall).max(1) as f64 * 100.0)
        .collect();
    let bound = shares
        .iter()
        .filter(|&&s| s >= LAUNCH_BOUND_PERCENT)
        .count();
    let mut sorted = shares.clone();
    let median = gpuscope_trace::stats::percentile_f64(&mut sorted, 50.0).unwrap_or(0.0);
    let dispatches = input.tokens[0].0.dispatches;
    if bound == 0 {
        it.summary = format!(
            "dispatch floor is {median:.1}% of wall per token (median; {dispatches} dispatches × {})",
            us(floor)
        );
        return it;
    }
    it.status = ItemStatus::Warn;
    it.summary = format!(
        "{bound} of {} steady tokens are launch-bound: {dispatches} dispatches × {} = {median:.1}% of wall (median)",
        input.tokens.len(),
        us(floor)
    );
    it.next = Some(
        "fewer dispatches per token (see the fusion candidates), or more work per dispatch".into(),
    );
    it
}

fn flagged_timestamps(p: &Profile, h: &TimestampHealth) -> Item {
    let mut it = item("timestamps", "no flagged timestamps");
    let t = h.total();
    if t.recorded() == 0 {
        it.status = ItemStatus::Unknown;
        it.summary = format!("no timestamps recorded (timing {})", p.timing.mode);
        return it;
    }
    if t.issues() == 0 {
        it.summary = format!("all {} spans valid", t.valid);
        return it;
    }
    it.status = ItemStatus::Warn;
    it.summary = format!(
        "{} of {} spans flagged and left out ({} zero, {} negative, {} out of order)",
        t.issues(),
        t.recorded(),
        t.zero,
        t.negative,
        t.out_of_order
    );
    let name = |i: TimestampIssue| match i {
        TimestampIssue::Zero => "zero",
        TimestampIssue::Negative => "negative",
        TimestampIssue::OutOfOrder => "out of order",
    };
    it.evidence = p
        .dispatches
        .iter()
        .filter_map(|d| {
            let issue = d.timestamp_issue.or_else(|| {
                d.gpu
                    .filter(|s| s.end_ns < s.start_ns)
                    .map(|_| TimestampIssue::Negative)
            })?;
            Some(format!(
                "token {} dispatch #{} {} ({}): {}",
                d.token,
                d.index,
                d.label,
                d.op,
                name(issue)
            ))
        })
        .chain(p.passes.iter().filter_map(|s| {
            Some(format!(
                "token {} pass {} {}: {}",
                s.token,
                s.index,
                s.name,
                name(s.timestamp_issue?)
            ))
        }))
        .take(LISTED)
        .collect();
    it.next = Some(
        "gpuscope profile <same options> --timing pass  (fewer timestamps; if spans stay flagged, the driver's timestamps are unreliable)"
            .into(),
    );
    it
}

fn overhead(p: &Profile) -> Item {
    let mut it = item("overhead", "timing costs at most 10% throughput");
    let Some(o) = super::overhead::overhead(p) else {
        it.status = ItemStatus::Unknown;
        it.summary = "not measured".into();
        it.next = Some("gpuscope profile <same options> --overhead".into());
        return it;
    };
    let cost = o.cost_percent;
    it.summary = o.sentence();
    if cost > OVERHEAD_PERCENT {
        it.status = ItemStatus::Warn;
        it.next = Some(
            "gpuscope profile <same options> --timing pass  (per-layer times at less cost)".into(),
        );
    }
    it
}

fn small_grids(input: &ChecklistInput) -> Item {
    let mut it = item(
        "small_grids",
        "dispatches have enough workgroups to fill the device",
    );
    let Some(fill) = input.fill_workgroups else {
        it.status = ItemStatus::Unknown;
        it.summary = "workgroups that fill the device not measured (run `gpuscope peak`)".into();
        return it;
    };
    let mut small: Vec<&Site> = input
        .sites
        .iter()
        .filter(|s| s.workgroup_count() < fill as u64)
        .collect();
    if small.is_empty() {
        it.summary = format!("every dispatch has at least {}", workgroups(fill as u64));
        return it;
    }
    small.sort_by(|x, y| y.timed_ns.cmp(&x.timed_ns).then(x.index.cmp(&y.index)));
    let time = gpuscope_trace::stats::saturating_sum(small.iter().map(|s| s.timed_ns));
    let tokens = input.tokens.len().max(1) as f64;
    it.status = ItemStatus::Warn;
    it.summary = format!(
        "{} of {} dispatches per token have fewer than {}{}",
        small.len(),
        input.sites.len(),
        workgroups(fill as u64),
        if time > 0 {
            format!(", {} of GPU time per token", ms(time as f64 / tokens))
        } else {
            String::new()
        }
    );
    it.evidence = small
        .iter()
        .take(LISTED)
        .map(|s| {
            format!(
                "#{} {} ({}): {}{}",
                s.index,
                s.label,
                s.op,
                workgroups(s.workgroup_count()),
                s.mean_ns()
                    .map_or(String::new(), |t| format!(", {} per call", us(t)))
            )
        })
        .collect();
    it.next = Some("split the work over more workgroups (rows per workgroup, split-K); gpuscope replay DIR --per-command times each alone".into());
    it
}
