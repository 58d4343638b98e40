//! Counters per token and the checks that prove steady-state decode is lean.
//!
//! The checks are the design's rules for decoding (docs/DESIGN.md, "Steady-state
//! decode creates nothing"): no resource created after the first token, one submit
//! and at most one sync (readback) per token, and exactly the dispatches and passes
//! the decoder graph declares. Per-token rules are checked on every token, the first
//! included; creation is checked on the tokens after the first, since the first may
//! create lazily.

use gpuscope_trace::stats::{median, percentile};
use gpuscope_trace::{Counters, Profile};

/// Whether a check held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CheckStatus {
    Ok,
    Fail,
    /// Nothing to check (no tokens, or no steady-state tokens, or no declared count).
    NotApplicable,
}

/// One rule, what it expects and what the run did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    pub name: String,
    /// e.g. `0`, `1`, `<= 1`, `58`.
    pub expected: String,
    /// A single value when every token agreed, else `min-max`, or why not checked.
    pub observed: String,
    pub status: CheckStatus,
}

impl Check {
    pub fn ok(&self) -> bool {
        self.status == CheckStatus::Ok
    }

    pub fn failed(&self) -> bool {
        self.status == CheckStatus::Fail
    }
}

/// First-token and steady-state counters, and the checks.
#[derive(Debug, Clone, PartialEq)]
pub struct CounterReport {
    pub first: Option<Counters>,
    /// Number of tokens after the first.
    pub steady_tokens: usize,
    /// Field-wise median, p10, p90 and maximum over the tokens after the first.
    pub steady_median: Option<Counters>,
    pub steady_p10: Option<Counters>,
    pub steady_p90: Option<Counters>,
    pub steady_max: Option<Counters>,
    pub checks: Vec<Check>,
    /// Counters beyond [`Counters`] (`TokenRecord::other_counters`, e.g. the Vulkan
    /// layer's barriers by kind and copies), by name; a token without one counts 0.
    pub other: Vec<OtherCounter>,
}

/// A counter beyond [`Counters`]: its first-token value and its spread over the tokens
/// after the first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtherCounter {
    pub name: String,
    pub first: u64,
    pub median: Option<u64>,
    pub p10: Option<u64>,
    pub p90: Option<u64>,
    pub max: Option<u64>,
}

fn other_counters(p: &Profile) -> Vec<OtherCounter> {
    let names: std::collections::BTreeSet<&String> = p
        .tokens
        .iter()
        .flat_map(|t| t.other_counters.keys())
        .collect();
    names
        .into_iter()
        .map(|name| {
            let values: Vec<u64> = p
                .tokens
                .iter()
                .map(|t| t.other_counters.get(name).copied().unwrap_or(0))
                .collect();
            let steady = values.get(1..).unwrap_or(&[]);
            OtherCounter {
                name: name.clone(),
                first: values.first().copied().unwrap_or(0),
                median: median(steady.iter().copied()),
                p10: sorted_percentile(steady, 10.0),
                p90: sorted_percentile(steady, 90.0),
                max: steady.iter().copied().max(),
            }
        })
        .collect()
}

impl CounterReport {
    /// True when no check failed (not-applicable checks do not fail).
    pub fn all_ok(&self) -> bool {
        !self.checks.iter().any(Check::failed)
    }
}

/// Computes the counter report.
pub fn counter_report(p: &Profile) -> CounterReport {
    let all: Vec<Counters> = p.tokens.iter().map(|t| t.counters).collect();
    let steady = all.get(1..).unwrap_or(&[]);
    let field = |f: fn(&[u64]) -> Option<u64>| -> Option<Counters> {
        let mut v = [0u64; 10];
        for (i, slot) in v.iter_mut().enumerate() {
            let column: Vec<u64> = steady.iter().map(|c| c.fields()[i].1).collect();
            *slot = f(&column)?;
        }
        Some(Counters::from_values(v))
    };
    let w = &p.workload;
    CounterReport {
        first: all.first().copied(),
        steady_tokens: steady.len(),
        steady_median: field(|c| median(c.iter().copied())),
        steady_p10: field(|c| sorted_percentile(c, 10.0)),
        steady_p90: field(|c| sorted_percentile(c, 90.0)),
        steady_max: field(|c| c.iter().copied().max()),
        other: other_counters(p),
        checks: vec![
            created_after_warm_up(p),
            per_token(
                &all,
                "submits per token",
                |c| c.submits,
                engine(p, Rule::Eq(1)),
            ),
            per_token(
                &all,
                "syncs per token",
                |c| c.syncs,
                engine(p, Rule::AtMost(1)),
            ),
            per_token(
                &all,
                "dispatches per token",
                |c| c.dispatches,
                engine(p, declared(w.graph_dispatches_per_token)),
            ),
            per_token(
                &all,
                "passes per token",
                |c| c.passes,
                engine(p, declared(w.graph_passes_per_token)),
            ),
        ],
    }
}

fn sorted_percentile(values: &[u64], p: f64) -> Option<u64> {
    let mut v = values.to_vec();
    v.sort_unstable();
    percentile(&v, p)
}

enum Rule {
    Eq(u64),
    AtMost(u64),
    /// The graph declares no count (0): nothing to compare with.
    Undeclared,
    /// An attached program: gpuscope's engine rules are not its rules; the values are
    /// shown, not judged.
    Foreign,
}

/// `rule` for gpuscope's own engine; an attached program's steps are shown, not judged.
fn engine(p: &Profile, rule: Rule) -> Rule {
    if p.is_attached() {
        Rule::Foreign
    } else {
        rule
    }
}

fn declared(n: u32) -> Rule {
    if n == 0 {
        Rule::Undeclared
    } else {
        Rule::Eq(n as u64)
    }
}

/// The first token whose creations count against a program: 1 for gpuscope's engine,
/// whose setup is recorded apart, before token 0; the second half of the tokens for an
/// attached program, whose setup runs in its first steps (llama.cpp's Vulkan backend
/// compiles pipelines and sizes buffers on first use, in its first decode tokens: a
/// warm-up, not churn). What recurs into the second half is churn either way.
pub fn creations_judged_from(p: &Profile) -> usize {
    if p.is_attached() {
        (p.tokens.len() / 2).max(1)
    } else {
        1
    }
}

fn created_after_warm_up(p: &Profile) -> Check {
    let from = creations_judged_from(p);
    let name = if p.is_attached() {
        format!(
            "resources created in tokens {from}-{} (an attached program's warm-up is its first tokens)",
            p.tokens.len().saturating_sub(1)
        )
    } else {
        "resources created after first token".to_string()
    };
    let judged = p.tokens.get(from..).unwrap_or(&[]);
    if judged.is_empty() {
        return not_applicable(name, "0".into(), "only one token");
    }
    let created: u64 = judged.iter().map(|t| t.counters.resources_created()).sum();
    Check {
        name,
        expected: "0".into(),
        observed: created.to_string(),
        status: pass(created == 0),
    }
}

fn per_token(all: &[Counters], name: &str, get: fn(&Counters) -> u64, rule: Rule) -> Check {
    let expected = match rule {
        Rule::Eq(n) => n.to_string(),
        Rule::AtMost(n) => format!("<= {n}"),
        Rule::Undeclared => "? (graph declares none)".into(),
        Rule::Foreign => "- (an attached program's own)".into(),
    };
    let (Some(min), Some(max)) = (all.iter().map(get).min(), all.iter().map(get).max()) else {
        return not_applicable(name.into(), expected, "no tokens");
    };
    let observed = if min == max {
        min.to_string()
    } else {
        format!("{min}-{max}")
    };
    let status = match rule {
        Rule::Eq(n) => pass(min == n && max == n),
        Rule::AtMost(n) => pass(max <= n),
        Rule::Undeclared | Rule::Foreign => CheckStatus::NotApplicable,
    };
    Check {
        name: name.into(),
        expected,
        observed,
        status,
    }
}

fn pass(ok: bool) -> CheckStatus {
    if ok {
        CheckStatus::Ok
    } else {
        CheckStatus::Fail
    }
}

fn not_applicable(name: String, expected: String, why: &str) -> Check {
    Check {
        name,
        expected,
        observed: why.into(),
        status: CheckStatus::NotApplicable,
    }
}
