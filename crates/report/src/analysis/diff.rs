//! Diff: did the new run get faster or slower than the base run, and where?
//!
//! Two profiles side by side: headline tok/s and time per token, per-op, per-label and
//! per-layer time, declared bytes and FLOPs per token, counters (compared exactly),
//! `workload.settings`, and what differs about the runs themselves (model, adapter,
//! timing mode). Ops and labels present in only one run are marked added or removed.
//!
//! Every timing row compares *samples*, not two numbers: the steady tokens' times (the
//! first token, which pays for warm-up, is left out). A row is a [`TimeDiff`]: both
//! medians, the Hodges-Lehmann shift, a Mann-Whitney p-value (see [`super::significance`])
//! and a [`Verdict`]. A change counts as slower or faster only when it is significant
//! (`p < alpha`) *and* at least `min_effect` of the base median; anything else is noise.
//! `docs/diff.md` describes the method and why.
//!
//! Per-op and per-label samples are the op's time in each token (the sum of its calls'
//! spans), from tokens where every call was validly timed; with sampled timestamps
//! (or many invalid spans) too few tokens are complete, and each valid dispatch span is
//! a sample instead ([`SampleUnit::Dispatch`]). Dispatches are grouped in one pass over
//! the profile, so a million-dispatch profile costs a million map look-ups.

mod groups;

use std::collections::BTreeSet;

use serde::Serialize;

use super::layers::section_samples;
use super::significance::shift_test;
use super::tokens::{rate_per_s, token_stats, token_stats_steady};
use gpuscope_trace::stats::median;
use gpuscope_trace::{Counters, Profile};

use groups::{group_dispatches, Grouped};

/// How a diff separates change from noise.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DiffOptions {
    /// Significance level of the Mann-Whitney test (two-sided).
    pub alpha: f64,
    /// Smallest relative change (of the base median) that counts, e.g. 0.02 for 2%.
    pub min_effect: f64,
}

impl Default for DiffOptions {
    /// `alpha` 0.01, `min_effect` 2%: run-to-run drift of a GPU's clocks and of a
    /// shared machine is of that order (docs/diff.md).
    fn default() -> Self {
        DiffOptions {
            alpha: 0.01,
            min_effect: 0.02,
        }
    }
}

/// The same quantity in both runs.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Pair<T> {
    pub base: T,
    pub new: T,
}

/// A rate (tok/s) in both runs and its relative change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RateDiff {
    pub base: Option<f64>,
    pub new: Option<f64>,
    /// `new / base - 1`: +0.10 is 10% more tokens per second.
    pub change: Option<f64>,
}

impl RateDiff {
    pub fn of(base: Option<f64>, new: Option<f64>) -> RateDiff {
        let change = match (base, new) {
            (Some(b), Some(n)) if b > 0.0 => Some(n / b - 1.0),
            _ => None,
        };
        RateDiff { base, new, change }
    }
}

/// One op of the prompt in both runs: its GPU ms (sum of the timed calls' spans) and
/// calls, `None` where a run has no timed call of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptOpDiff {
    pub op: String,
    pub ms: RateDiff,
    pub calls: Pair<u32>,
}

/// What a timing comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Significantly slower by at least the minimum effect.
    Slower,
    /// Significantly faster by at least the minimum effect.
    Faster,
    /// Not significant, or smaller than the minimum effect.
    Noise,
    /// One side has no timed samples (or a zero median): nothing to compare.
    NotCompared,
}

/// What one sample is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleUnit {
    /// One steady token's time.
    Token,
    /// One valid dispatch span (per-op rows of sampled profiles).
    Dispatch,
    /// No samples: each run's time per token, estimated from its dispatch sites' medians
    /// over the steady tokens (per-op rows of two engines' runs when one sampled its
    /// dispatches: per-dispatch spans compare calls, not where a token's time goes). No
    /// test.
    Estimate,
}

/// Count and median of one side's samples, in ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Samples {
    pub count: usize,
    pub median_ns: u64,
}

/// One timing row: both sides' samples and what the comparison concluded.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TimeDiff {
    pub unit: SampleUnit,
    pub base: Option<Samples>,
    pub new: Option<Samples>,
    /// Hodges-Lehmann estimate of `new - base`, in ns (the test's effect size).
    pub shift_ns: Option<i64>,
    /// The new median over the base median, less one: +0.10 is 10% slower. The same
    /// figures the row shows, so the column never disagrees with the values beside it
    /// (the Hodges-Lehmann shift can, when a side's samples are bimodal).
    pub change: Option<f64>,
    pub p_value: Option<f64>,
    pub verdict: Verdict,
}

impl TimeDiff {
    /// Compares two sets of samples (ns).
    pub fn of(base: &[u64], new: &[u64], unit: SampleUnit, o: &DiffOptions) -> TimeDiff {
        let summary = |v: &[u64]| {
            median(v.iter().copied()).map(|median_ns| Samples {
                count: v.len(),
                median_ns,
            })
        };
        let (b, n) = (summary(base), summary(new));
        let test = shift_test(base, new);
        let change = match (b, n, test) {
            (Some(b), Some(n), Some(_)) if b.median_ns > 0 => {
                Some(n.median_ns as f64 / b.median_ns as f64 - 1.0)
            }
            _ => None,
        };
        let verdict = match (change, test) {
            (Some(c), Some(t)) if t.p_value < o.alpha && c.abs() >= o.min_effect => {
                if c > 0.0 {
                    Verdict::Slower
                } else {
                    Verdict::Faster
                }
            }
            (Some(_), Some(_)) => Verdict::Noise,
            _ => Verdict::NotCompared,
        };
        TimeDiff {
            unit,
            base: b,
            new: n,
            shift_ns: test.map(|t| t.shift_ns),
            change,
            p_value: test.map(|t| t.p_value),
            verdict,
        }
    }
}

/// Whether a row exists in both runs or in one only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    Both,
    /// Only in the new run.
    Added,
    /// Only in the base run.
    Removed,
}

/// Which run a message is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Base,
    New,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Base => "base",
            Side::New => "new",
        })
    }
}

/// Why two profiles cannot be diffed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffError {
    #[error("the {0} profile has no tokens: nothing to compare")]
    NoTokens(Side),
}

/// What kind of difference between the runs a [`Mismatch`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    /// Different model, weights or shape: the times measure different work.
    Model,
    /// Different adapter, backend or driver: the times come from different hardware.
    Adapter,
    /// Different timing mode: different instrumentation overhead and counters.
    Timing,
    /// Different engines (gpuscope's own decoder against a program profiled through
    /// the Vulkan layer, or two such programs): ops are different kernels; compare by
    /// op family (`diff --by family`).
    Engine,
}

/// A property of the runs that should match for the diff to mean something.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Mismatch {
    pub kind: MismatchKind,
    /// e.g. `model`, `weights`, `adapter`, `driver`, `timing mode`.
    pub what: String,
    pub base: String,
    pub new: String,
}

/// One side's identity, for the header.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub tool: String,
    pub format: String,
    pub commit: Option<String>,
    pub workload: String,
    pub adapter: String,
    pub timing: String,
    pub tokens: usize,
}

/// A `workload.settings` entry that differs (absent on one side: `None`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SettingChange {
    pub name: String,
    pub base: Option<String>,
    pub new: Option<String>,
}

/// Throughput and time per token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Headline {
    /// Steady tokens compared (the first of each run left out).
    pub tokens: Pair<usize>,
    /// From the median steady wall time, as the profile report computes it.
    pub tok_per_s: RateDiff,
    /// Wall time per token: what the gate's `--max-regress` checks.
    pub wall: TimeDiff,
    /// GPU-busy time per token (timing `pass` or `dispatch` in both runs).
    pub gpu_busy: TimeDiff,
    /// Prompt processing (tok/s), when both runs had a prompt: one sample each, so
    /// shown without a test.
    pub prompt_tok_per_s: Option<RateDiff>,
}

/// One op (kernel family), per token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OpDiff {
    pub op: String,
    pub presence: Presence,
    pub calls_per_token: Pair<f64>,
    /// Declared bytes and FLOPs per token (all calls over all tokens).
    pub bytes_per_token: Pair<f64>,
    pub flops_per_token: Pair<f64>,
    pub time: TimeDiff,
}

/// One dispatch label (op plus place, e.g. `L3.ffn_down`), per token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LabelDiff {
    pub label: String,
    pub op: String,
    pub presence: Presence,
    pub time: TimeDiff,
}

/// One section of the graph (`embed`, `L0`.., `head`), per token.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LayerDiff {
    pub name: String,
    pub presence: Presence,
    pub time: TimeDiff,
}

/// Which counters a [`CounterDiff`] compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CounterScope {
    /// Everything before the first token.
    Setup,
    /// The first recorded token.
    FirstToken,
    /// The largest value over the tokens after the first (every token when there is
    /// only one): an extra sync or a resource made in any one token shows here.
    SteadyMax,
}

/// One counter in one scope, compared exactly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CounterDiff {
    pub scope: CounterScope,
    pub name: String,
    pub base: u64,
    pub new: u64,
}

impl CounterDiff {
    pub fn delta(&self) -> i128 {
        self.new as i128 - self.base as i128
    }
}

/// Everything `gpuscope diff` shows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diff {
    pub options: DiffOptions,
    pub runs: Pair<RunSummary>,
    /// Model, adapter and timing differences: reasons the diff may mean little.
    pub mismatches: Vec<Mismatch>,
    /// Other remarks: a run that stopped early, instrumentation that missed work.
    pub notes: Vec<String>,
    pub settings: Vec<SettingChange>,
    pub headline: Headline,
    /// Ops in both runs first, by base time per token (largest first), then added and
    /// removed ones.
    pub ops: Vec<OpDiff>,
    /// In the base run's order, then added labels.
    pub labels: Vec<LabelDiff>,
    /// In graph order, then added sections.
    pub layers: Vec<LayerDiff>,
    /// Setup, first-token and steady-max counters, every field of each.
    pub counters: Vec<CounterDiff>,
    /// The prompt's GPU ms by op (`PromptRecord::ops`), where either run timed its
    /// prompt: base's order (largest first), then ops only `new` has. One prompt per run,
    /// so no test.
    pub prompt_ops: Vec<PromptOpDiff>,
    /// Set when the wall time and nearly every op moved together by about the same
    /// factor: the machine or its load changed, not the code (see [`machine_change`]).
    pub machine_change: Option<MachineChange>,
}

/// Everything moved together: what a different machine, clock or load does, and what a
/// code change rarely does (it moves the ops it touches).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MachineChange {
    /// The wall time's factor, new median over base.
    pub factor: f64,
    /// Ops timed in both runs, and those that moved with the wall time.
    pub ops: usize,
    pub ops_moved: usize,
    /// The base GPU time of the ops that moved, as a share of all compared ops'.
    pub share_moved: f64,
}

/// Share of the compared ops' base time that must move with the wall time for the
/// diff to call the change the machine's.
pub const MACHINE_SHARE: f64 = 0.75;

/// Whether the change between the runs is the machine's: the wall time changed
/// significantly, and ops carrying at least [`MACHINE_SHARE`] of the base GPU time
/// moved the same way by about the same factor (within half the wall's change, in log
/// scale). Needs per-op times in both runs and three ops at least.
pub fn machine_change(headline: &Headline, ops: &[OpDiff]) -> Option<MachineChange> {
    let w = &headline.wall;
    if !matches!(w.verdict, Verdict::Slower | Verdict::Faster) {
        return None;
    }
    let factor = w.change? + 1.0;
    let log_f = factor.ln();
    let compared: Vec<(f64, f64)> = ops
        .iter()
        .filter_map(|r| {
            let (b, n) = (r.time.base?, r.time.new?);
            (b.median_ns > 0 && n.median_ns > 0 && b.count >= 3 && n.count >= 3)
                .then(|| (b.median_ns as f64, n.median_ns as f64 / b.median_ns as f64))
        })
        .collect();
    if compared.len() < 3 {
        return None;
    }
    let total: f64 = compared.iter().map(|(t, _)| t).sum();
    let moved: Vec<&(f64, f64)> = compared
        .iter()
        .filter(|(_, r)| (r.ln() - log_f).abs() <= 0.5 * log_f.abs())
        .collect();
    let share_moved = moved.iter().map(|(t, _)| t).sum::<f64>() / total;
    (share_moved >= MACHINE_SHARE).then_some(MachineChange {
        factor,
        ops: compared.len(),
        ops_moved: moved.len(),
        share_moved,
    })
}

impl Diff {
    /// Model or adapter differences (what `--strict` refuses).
    pub fn incompatible(&self) -> impl Iterator<Item = &Mismatch> {
        self.mismatches
            .iter()
            .filter(|m| m.kind != MismatchKind::Timing)
    }
}

/// Compares `new` against `base`.
pub fn diff(base: &Profile, new: &Profile, options: &DiffOptions) -> Result<Diff, DiffError> {
    if base.tokens.is_empty() {
        return Err(DiffError::NoTokens(Side::Base));
    }
    if new.tokens.is_empty() {
        return Err(DiffError::NoTokens(Side::New));
    }
    let (gb, gn) = (group_dispatches(base), group_dispatches(new));
    let headline = headline(base, new, options);
    let mut ops = ops(&gb, &gn, options);
    let mismatches = mismatches(base, new);
    // Two engines make different calls: per-call spans say nothing of where a token's
    // time goes. (One engine against itself keeps the spans' test, which the gate uses.)
    let engines = mismatches.iter().any(|m| m.kind == MismatchKind::Engine);
    if engines && (is_sampled(base) || is_sampled(new)) {
        estimate_op_times(&mut ops, base, new);
    }
    Ok(Diff {
        machine_change: machine_change(&headline, &ops),
        options: *options,
        runs: Pair {
            base: run_summary(base),
            new: run_summary(new),
        },
        mismatches,
        notes: notes(base, Side::Base)
            .into_iter()
            .chain(notes(new, Side::New))
            .collect(),
        settings: settings(base, new),
        headline,
        ops,
        labels: labels(&gb, &gn, options),
        layers: layers(base, new, options),
        counters: counters(base, new),
        prompt_ops: prompt_ops(base, new),
    })
}

/// [`Diff::prompt_ops`].
fn prompt_ops(base: &Profile, new: &Profile) -> Vec<PromptOpDiff> {
    let timed = |p: &Profile| -> Vec<(String, (f64, u32))> {
        p.prompt
            .iter()
            .flat_map(|r| &r.ops)
            .filter(|o| o.timed_calls > 0)
            .map(|o| (o.name(), (o.gpu_ns as f64 / 1e6, o.calls)))
            .collect()
    };
    let (b, n) = (timed(base), timed(new));
    paired(&b, &n)
        .into_iter()
        .map(|(op, b, n)| PromptOpDiff {
            op: op.to_string(),
            ms: RateDiff::of(b.map(|v| v.0), n.map(|v| v.0)),
            calls: Pair {
                base: b.map_or(0, |v| v.1),
                new: n.map_or(0, |v| v.1),
            },
        })
        .collect()
}

fn is_sampled(p: &Profile) -> bool {
    p.timing.sampling.as_ref().is_some_and(|s| s.stride > 1)
}

/// Per-op rows as each run's estimated time per token (see [`SampleUnit::Estimate`]):
/// corrected for the timestamps when both runs can be, else both as measured.
fn estimate_op_times(ops: &mut [OpDiff], base: &Profile, new: &Profile) {
    let (ab, an) = (super::analyze(base), super::analyze(new));
    let corrected = ab.correction.is_some() && an.correction.is_some();
    let per_token = |a: &super::Analysis, op: &str| -> Option<u64> {
        let breakdown = match (&a.correction, corrected) {
            (Some(c), true) => &c.ops,
            _ => &a.ops,
        };
        let row = breakdown.rows.iter().find(|r| r.op == op)?;
        let tokens = a.steady.steady.len().max(1) as u64;
        row.total_gpu_ns.map(|t| t / tokens)
    };
    for row in ops {
        let (b, n) = (per_token(&ab, &row.op), per_token(&an, &row.op));
        row.time = TimeDiff {
            unit: SampleUnit::Estimate,
            base: b.map(|median_ns| Samples {
                count: 1,
                median_ns,
            }),
            new: n.map(|median_ns| Samples {
                count: 1,
                median_ns,
            }),
            shift_ns: None,
            change: match (b, n) {
                (Some(b), Some(n)) if b > 0 => Some(n as f64 / b as f64 - 1.0),
                _ => None,
            },
            p_value: None,
            verdict: Verdict::NotCompared,
        };
    }
}

fn run_summary(p: &Profile) -> RunSummary {
    RunSummary {
        tool: p.tool.clone(),
        format: p.format.to_string(),
        commit: p.commit.clone(),
        workload: p.workload.name.clone(),
        adapter: format!("{} ({})", p.adapter.name, p.adapter.backend),
        timing: p.timing.mode.to_string(),
        tokens: p.tokens.len(),
    }
}

fn mismatches(b: &Profile, n: &Profile) -> Vec<Mismatch> {
    let (wb, wn, ab, an) = (&b.workload, &n.workload, &b.adapter, &n.adapter);
    let fields: [(MismatchKind, &str, String, String); 10] = [
        (MismatchKind::Engine, "engine", engine(b), engine(n)),
        (
            MismatchKind::Model,
            "model",
            wb.name.clone(),
            wn.name.clone(),
        ),
        (
            MismatchKind::Model,
            "architecture",
            wb.architecture.clone(),
            wn.architecture.clone(),
        ),
        (
            MismatchKind::Model,
            "weights",
            wb.weights.clone(),
            wn.weights.clone(),
        ),
        (
            MismatchKind::Model,
            "parameters",
            wb.params.to_string(),
            wn.params.to_string(),
        ),
        (
            MismatchKind::Model,
            "layers",
            wb.layers.to_string(),
            wn.layers.to_string(),
        ),
        (
            MismatchKind::Adapter,
            "adapter",
            ab.name.clone(),
            an.name.clone(),
        ),
        (
            MismatchKind::Adapter,
            "backend",
            ab.backend.clone(),
            an.backend.clone(),
        ),
        (
            MismatchKind::Adapter,
            "driver",
            format!("{} {}", ab.driver, ab.driver_info),
            format!("{} {}", an.driver, an.driver_info),
        ),
        (
            MismatchKind::Timing,
            "timing mode",
            b.timing.mode.to_string(),
            n.timing.mode.to_string(),
        ),
    ];
    fields
        .into_iter()
        .filter(|(_, _, x, y)| x != y)
        .map(|(kind, what, base, new)| Mismatch {
            kind,
            what: what.to_string(),
            base,
            new,
        })
        .collect()
}

/// Which engine made a profile: the attached program's command for the Vulkan layer's
/// profiles, else the tool that wrote it.
pub fn engine(p: &Profile) -> String {
    let s = &p.workload.settings;
    match (s.get("source"), s.get("command")) {
        (Some(source), Some(command)) => format!("{command} ({source})"),
        _ => p.tool.clone(),
    }
}

/// `p` seen by op family (`diff --by family`): each dispatch's op and label become its
/// family ([`gpuscope_trace::recording::op_family`]: llama.cpp's `mul_mat_vec_q4_0_f32_f32`
/// and gpuscope's `gemv_q4_0` are both `gemv_q4_0`), so two engines running the same
/// model compare family by family.
pub fn by_family(p: &Profile) -> Profile {
    let mut q = p.clone();
    for d in &mut q.dispatches {
        let family = gpuscope_trace::recording::op_family(&d.op);
        d.label = family.clone().into();
        d.op = family.into();
    }
    q
}

fn notes(p: &Profile, side: Side) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(why) = &p.incomplete {
        out.push(format!("the {side} run stopped early: {why}"));
    }
    if p.instrumentation.as_ref().is_some_and(|i| i.is_partial()) {
        out.push(format!(
            "the {side} run's recorder missed some GPU work (see its report)"
        ));
    }
    if let Some(s) = &p.timing.sampling {
        out.push(format!(
            "the {side} run timed one dispatch in {} (per-op rows use dispatch samples; between two engines, each run's time per token estimated from its dispatch sites' medians, with no test)",
            s.stride
        ));
    }
    out
}

fn settings(b: &Profile, n: &Profile) -> Vec<SettingChange> {
    let (sb, sn) = (&b.workload.settings, &n.workload.settings);
    let names: BTreeSet<&String> = sb.keys().chain(sn.keys()).collect();
    names
        .into_iter()
        .filter(|k| sb.get(*k) != sn.get(*k))
        .map(|k| SettingChange {
            name: k.clone(),
            base: sb.get(k).cloned(),
            new: sn.get(k).cloned(),
        })
        .collect()
}

/// The tokens after the first (every token when there is only one).
fn steady(p: &Profile) -> &[gpuscope_trace::TokenRecord] {
    p.tokens
        .get(1..)
        .filter(|t| !t.is_empty())
        .unwrap_or(&p.tokens)
}

fn headline(b: &Profile, n: &Profile, o: &DiffOptions) -> Headline {
    let walls = |p: &Profile| steady(p).iter().map(|t| t.wall_ns).collect::<Vec<_>>();
    let busy = |p: &Profile| {
        steady(p)
            .iter()
            .filter_map(|t| t.gpu_busy_ns)
            .collect::<Vec<_>>()
    };
    // A run of one token has no steady tokens: its only token then.
    let tok_per_s = |p: &Profile| {
        token_stats_steady(p)
            .tok_per_s
            .or_else(|| token_stats(p).tok_per_s)
    };
    let pp = |p: &Profile| {
        p.prompt
            .as_ref()
            .and_then(|r| rate_per_s(r.wall_ns).map(|per_s| per_s * r.tokens as f64))
    };
    Headline {
        tokens: Pair {
            base: steady(b).len(),
            new: steady(n).len(),
        },
        tok_per_s: RateDiff::of(tok_per_s(b), tok_per_s(n)),
        wall: TimeDiff::of(&walls(b), &walls(n), SampleUnit::Token, o),
        gpu_busy: TimeDiff::of(&busy(b), &busy(n), SampleUnit::Token, o),
        prompt_tok_per_s: pp(b)
            .zip(pp(n))
            .map(|(base, new)| RateDiff::of(Some(base), Some(new))),
    }
}

/// Pairs up rows present in either run: base order first, then what only `new` has.
fn paired<'a, T>(
    base: &'a [(String, T)],
    new: &'a [(String, T)],
) -> Vec<(&'a str, Option<&'a T>, Option<&'a T>)> {
    let find = |v: &'a [(String, T)], k: &str| v.iter().find(|(name, _)| name == k).map(|e| &e.1);
    let mut out: Vec<_> = base
        .iter()
        .map(|(k, b)| (k.as_str(), Some(b), find(new, k)))
        .collect();
    out.extend(
        new.iter()
            .filter(|(k, _)| find(base, k).is_none())
            .map(|(k, n)| (k.as_str(), None, Some(n))),
    );
    out
}

fn presence<T>(b: Option<T>, n: Option<T>) -> Presence {
    match (b.is_some(), n.is_some()) {
        (true, true) => Presence::Both,
        (false, _) => Presence::Added,
        (true, false) => Presence::Removed,
    }
}

fn ops(b: &Grouped, n: &Grouped, o: &DiffOptions) -> Vec<OpDiff> {
    let per_token = |g: &Grouped, x: Option<&groups::Group>, f: fn(&groups::Group) -> u64| {
        x.map_or(0.0, |x| f(x) as f64 / g.tokens as f64)
    };
    let mut rows: Vec<OpDiff> = paired(&b.ops, &n.ops)
        .into_iter()
        .map(|(op, xb, xn)| OpDiff {
            op: op.to_string(),
            presence: presence(xb, xn),
            calls_per_token: Pair {
                base: per_token(b, xb, |x| x.calls),
                new: per_token(n, xn, |x| x.calls),
            },
            bytes_per_token: Pair {
                base: per_token(b, xb, |x| x.bytes),
                new: per_token(n, xn, |x| x.bytes),
            },
            flops_per_token: Pair {
                base: per_token(b, xb, |x| x.flops),
                new: per_token(n, xn, |x| x.flops),
            },
            time: groups::compare(xb, xn, o),
        })
        .collect();
    let rank = |r: &OpDiff| match r.presence {
        Presence::Both => 0,
        Presence::Added => 1,
        Presence::Removed => 2,
    };
    let base_ns = |r: &OpDiff| r.time.base.map_or(0, |s| s.median_ns);
    rows.sort_by(|x, y| {
        rank(x)
            .cmp(&rank(y))
            .then(base_ns(y).cmp(&base_ns(x)))
            .then(x.op.cmp(&y.op))
    });
    rows
}

fn labels(b: &Grouped, n: &Grouped, o: &DiffOptions) -> Vec<LabelDiff> {
    paired(&b.labels, &n.labels)
        .into_iter()
        .map(|(label, xb, xn)| LabelDiff {
            label: label.to_string(),
            op: xb.or(xn).map(|x| x.op.clone()).unwrap_or_default(),
            presence: presence(xb, xn),
            time: groups::compare(xb, xn, o),
        })
        .collect()
}

fn layers(b: &Profile, n: &Profile, o: &DiffOptions) -> Vec<LayerDiff> {
    // Per-token section times of the steady tokens, by section name.
    let steady_samples = |p: &Profile| -> Vec<(String, Vec<u64>)> {
        let first = p
            .tokens
            .first()
            .map(|t| t.index)
            .filter(|_| p.tokens.len() > 1);
        section_samples(p)
            .into_iter()
            .map(|s| {
                let v = s
                    .per_token
                    .iter()
                    .filter(|(t, _)| Some(*t) != first)
                    .map(|&(_, ns)| ns)
                    .collect();
                (s.name, v)
            })
            .collect()
    };
    let (sb, sn) = (steady_samples(b), steady_samples(n));
    paired(&sb, &sn)
        .into_iter()
        .map(|(name, xb, xn)| LayerDiff {
            name: name.to_string(),
            presence: presence(xb, xn),
            time: TimeDiff::of(
                xb.map_or(&[][..], |v| v),
                xn.map_or(&[][..], |v| v),
                SampleUnit::Token,
                o,
            ),
        })
        .collect()
}

fn counters(b: &Profile, n: &Profile) -> Vec<CounterDiff> {
    let steady_max = |p: &Profile| {
        let mut v = [0u64; 10];
        for t in steady(p) {
            for (slot, (_, x)) in v.iter_mut().zip(t.counters.fields()) {
                *slot = (*slot).max(x);
            }
        }
        Counters::from_values(v)
    };
    let first = |p: &Profile| p.tokens.first().map(|t| t.counters).unwrap_or_default();
    let scopes = [
        (CounterScope::Setup, b.setup, n.setup),
        (CounterScope::FirstToken, first(b), first(n)),
        (CounterScope::SteadyMax, steady_max(b), steady_max(n)),
    ];
    scopes
        .into_iter()
        .flat_map(|(scope, cb, cn)| {
            cb.fields()
                .into_iter()
                .zip(cn.fields())
                .map(move |((name, base), (_, new))| CounterDiff {
                    scope,
                    name: name.to_string(),
                    base,
                    new,
                })
        })
        .collect()
}
