//! Bottleneck: one headline and the evidence for it.
//!
//! Heuristics, in order (computed over the steady tokens, see [`super::steady`], when
//! there are any, else over all tokens, with medians):
//!
//! 1. Red flags come first, whatever else holds: more than one sync per token (the
//!    CPU waits on the GPU mid-token) and resources created after the first token
//!    (allocation in the decode loop). Either breaks the design's steady-state rules.
//! 2. GPU time unknown (timing off, or no valid span): say so and give wall-based
//!    facts: wall per token, tok/s, wall per dispatch, and declared bytes per token
//!    over wall time, which is a lower bound on the bandwidth achieved.
//! 3. GPU busy below 50% of wall: the GPU idles more than it works, so the token is
//!    CPU- or launch-bound; evidence: busy %, dispatches per token, wall per dispatch
//!    and CPU encode time per token.
//! 4. Otherwise GPU-bound: the op with the largest share of GPU time and its achieved
//!    GB/s; without per-op times (timing `pass`), the slowest section.

use super::layers::{layer_breakdown_of, LayerBreakdown};
use super::ops::{op_breakdown_of, OpBreakdown, OpRow};
use super::per_token::{token_totals, TokenSet, TokenTotals};
use super::steady::steady_state;
use super::tokens::{token_stats, token_stats_of, TokenStats};
use gpuscope_trace::stats::median;
use gpuscope_trace::stats::Summary;
use gpuscope_trace::{Profile, TimingMode};

/// GPU busy below this share of wall (percent) means CPU- or launch-bound.
pub const CPU_BOUND_BELOW_PERCENT: f64 = 50.0;

/// The conclusion, as data.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    NoTokens,
    /// Timing off, or every span invalid.
    GpuTimeUnknown,
    CpuBound {
        busy_percent: f64,
    },
    /// The op with the largest share of GPU time.
    GpuBoundOp {
        busy_percent: f64,
        op: String,
        gpu_percent: f64,
        gb_per_s: Option<f64>,
    },
    /// GPU-bound but no per-op times; the slowest section, if timed.
    GpuBound {
        busy_percent: f64,
        slowest_section: Option<String>,
    },
}

/// Headline, red flags and evidence lines, ready to print.
#[derive(Debug, Clone, PartialEq)]
pub struct Bottleneck {
    pub verdict: Verdict,
    /// Violations of the steady-state rules; they lead the headline.
    pub red_flags: Vec<String>,
    /// One line: the red flags, then the verdict.
    pub headline: String,
    pub evidence: Vec<String>,
}

/// Applies the heuristics above.
pub fn bottleneck(p: &Profile) -> Bottleneck {
    let steady = token_stats_of(p, &steady_state(p));
    let stats = if steady.count() > 0 {
        steady
    } else {
        token_stats(p)
    };
    let set = TokenSet::new(stats.tokens.iter().copied());
    let totals = token_totals(p);
    let used: Vec<TokenTotals> = p
        .tokens
        .iter()
        .zip(&totals)
        .filter(|(t, _)| set.contains(t.index))
        .map(|(_, x)| *x)
        .collect();
    bottleneck_of(
        p,
        &BottleneckInput {
            stats: &stats,
            totals: &used,
            ops: &op_breakdown_of(p, &set),
            layers: &layer_breakdown_of(p, &set),
        },
    )
}

/// What the heuristics read, computed over the same tokens by the other analyses.
pub struct BottleneckInput<'a> {
    pub stats: &'a TokenStats,
    /// Totals of the tokens `stats` covers, in order.
    pub totals: &'a [TokenTotals],
    pub ops: &'a OpBreakdown,
    pub layers: &'a LayerBreakdown,
}

/// Applies the heuristics to analyses already computed.
pub fn bottleneck_of(p: &Profile, input: &BottleneckInput) -> Bottleneck {
    let red_flags = red_flags(p);
    let Finding {
        verdict,
        text,
        evidence,
    } = verdict(p, input);
    let headline = red_flags
        .iter()
        .map(|f| format!("RED FLAG: {f}"))
        .chain(std::iter::once(text))
        .collect::<Vec<_>>()
        .join("; ");
    Bottleneck {
        verdict,
        red_flags,
        headline,
        evidence,
    }
}

fn red_flags(p: &Profile) -> Vec<String> {
    let mut flags = Vec::new();
    // A token made of several of an attached program's steps has a sync per step (the
    // profile's notes say so); more than that is a wait mid-step.
    let expected: u64 = p
        .workload
        .settings
        .get("steps_per_token")
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    if let Some(t) = p.tokens.iter().max_by_key(|t| t.counters.syncs) {
        if t.counters.syncs > expected {
            flags.push(format!(
                "{} syncs in token {} (expected <= {expected} per token): the CPU waits on the GPU mid-token",
                t.counters.syncs, t.index
            ));
        }
    }
    // From the token creations count against (an attached program's warm-up is left out).
    let from = super::counters::creations_judged_from(p);
    let judged = p.tokens.get(from..).unwrap_or(&[]);
    let created: u64 = judged.iter().map(|t| t.counters.resources_created()).sum();
    if created > 0 {
        let after = if from == 1 {
            "after the first token".to_string()
        } else {
            format!(
                "in tokens {from}-{} (after the program's warm-up)",
                p.tokens.len() - 1
            )
        };
        flags.push(format!(
            "{created} resources created {after} (expected 0): allocation in the decode loop"
        ));
    }
    flags
}

/// A verdict with its one-line text and the evidence gathered on the way to it.
struct Finding {
    verdict: Verdict,
    text: String,
    evidence: Vec<String>,
}

/// Walks the heuristics of the module docs in order; the first that holds decides.
fn verdict(p: &Profile, input: &BottleneckInput) -> Finding {
    let stats = input.stats;
    let Some(wall) = stats.wall_ns else {
        return Finding {
            verdict: Verdict::NoTokens,
            text: "no tokens decoded".into(),
            evidence: Vec::new(),
        };
    };
    let mut evidence = wall_evidence(p, input, wall);
    let Some(busy) = stats.gpu_busy_ns else {
        return gpu_time_unknown(p, input, wall.median, evidence);
    };
    let wall_ns = wall.median;
    let busy_percent = busy.median as f64 / wall_ns.max(1) as f64 * 100.0;
    evidence.insert(
        0,
        format!(
            "GPU busy {:.3} ms (p10-p90 {:.3}-{:.3}, n={}) of {:.3} ms wall per token ({busy_percent:.1}%)",
            ms(busy.median),
            ms(busy.p10),
            ms(busy.p90),
            busy.count,
            ms(wall_ns)
        ),
    );
    if busy_percent < CPU_BOUND_BELOW_PERCENT {
        let encode = median(input.totals.iter().map(|t| t.cpu_encode_ns)).unwrap_or(0);
        evidence.push(format!("CPU encode {:.3} ms per token", ms(encode)));
        return Finding {
            verdict: Verdict::CpuBound { busy_percent },
            text: format!(
                "CPU/launch-bound: the GPU is busy {busy_percent:.1}% of wall time (below {CPU_BOUND_BELOW_PERCENT:.0}%)"
            ),
            evidence,
        };
    }
    match input.ops.rows.first().filter(|r| r.gpu_percent.is_some()) {
        Some(top) => gpu_bound_op(input.ops, top, busy_percent, evidence),
        None => gpu_bound_section(input.layers, busy_percent, evidence),
    }
}

/// Wall per token and tok/s, and wall per dispatch when dispatches were counted.
fn wall_evidence(p: &Profile, input: &BottleneckInput, wall: Summary) -> Vec<String> {
    let stats = input.stats;
    let set = TokenSet::new(stats.tokens.iter().copied());
    let tokens: Vec<_> = p.tokens.iter().filter(|t| set.contains(t.index)).collect();
    let dispatches = median(tokens.iter().map(|t| t.counters.dispatches)).unwrap_or(0);
    let which = match stats.tokens.as_slice() {
        [only] => format!("token {only}"),
        [first, .., last] => format!("median of {} tokens in {first}-{last}", stats.count()),
        [] => String::new(),
    };
    let mut evidence = vec![format!(
        "wall {:.3} ms per token ({which}; p10-p90 {:.3}-{:.3} ms), {:.1} tok/s",
        ms(wall.median),
        ms(wall.p10),
        ms(wall.p90),
        stats.tok_per_s.unwrap_or(0.0)
    )];
    if dispatches > 0 {
        evidence.push(format!(
            "{dispatches} dispatches per token, {:.1} µs of wall per dispatch",
            wall.median as f64 / dispatches as f64 / 1e3
        ));
    }
    evidence
}

/// Heuristic 2: no GPU time; the declared traffic over wall time is a lower bound on
/// the bandwidth achieved.
fn gpu_time_unknown(
    p: &Profile,
    input: &BottleneckInput,
    wall_ns: u64,
    mut evidence: Vec<String>,
) -> Finding {
    let bytes = median(input.totals.iter().map(|t| t.bytes)).unwrap_or(0);
    if bytes > 0 && wall_ns > 0 {
        evidence.push(format!(
            "{:.2} MB declared traffic per token: at least {:.1} GB/s over wall time",
            bytes as f64 / 1e6,
            bytes as f64 / wall_ns as f64
        ));
    }
    let why = match p.timing.mode {
        TimingMode::Off => "timing off".to_string(),
        m => format!("timing {m} but no valid GPU span"),
    };
    Finding {
        verdict: Verdict::GpuTimeUnknown,
        text: format!("GPU time unknown ({why}); only wall-clock facts below"),
        evidence,
    }
}

/// Heuristic 4 with per-op times: `top`, the op with the largest share of GPU time, and
/// the top three ops as evidence.
fn gpu_bound_op(
    ops: &OpBreakdown,
    top: &OpRow,
    busy_percent: f64,
    mut evidence: Vec<String>,
) -> Finding {
    let gpu_percent = top.gpu_percent.unwrap_or(0.0);
    let rate = match top.gb_per_s {
        Some(r) => format!(" at {r:.1} GB/s"),
        None => String::new(),
    };
    let text = format!(
        "GPU-bound: {} takes {gpu_percent:.1}% of GPU time{rate}",
        top.op
    );
    evidence.extend(ops.rows.iter().take(3).filter_map(|r| {
        Some(format!(
            "{}: {:.1}% of GPU time, {} calls, {}",
            r.op,
            r.gpu_percent?,
            r.calls,
            r.gb_per_s
                .map_or("GB/s unknown".into(), |g| format!("{g:.1} GB/s"))
        ))
    }));
    let verdict = Verdict::GpuBoundOp {
        busy_percent,
        op: top.op.clone(),
        gpu_percent,
        gb_per_s: top.gb_per_s,
    };
    Finding {
        verdict,
        text,
        evidence,
    }
}

/// Heuristic 4 without per-op times (timing `pass`): the slowest section, if timed.
fn gpu_bound_section(
    layers: &LayerBreakdown,
    busy_percent: f64,
    mut evidence: Vec<String>,
) -> Finding {
    let slowest = layers
        .rows
        .iter()
        .filter_map(|r| Some((r.gpu_ns_median?, r)))
        .max_by_key(|(ns, _)| *ns);
    if let Some((ns, r)) = slowest {
        evidence.push(format!(
            "slowest section {} at {:.3} ms per token",
            r.name,
            ms(ns)
        ));
    }
    Finding {
        verdict: Verdict::GpuBound {
            busy_percent,
            slowest_section: slowest.map(|(_, r)| r.name.clone()),
        },
        text: format!(
            "GPU-bound: busy {busy_percent:.1}% of wall time; per-op times need timing mode `dispatch`"
        ),
        evidence,
    }
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}
