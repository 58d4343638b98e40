//! The regression gate: does a [`Diff`] stay within the limits a CI job sets?
//!
//! A timing check fails only for a *significant* slowdown beyond its limit: the row's
//! verdict is [`Verdict::Slower`] (significant at `alpha`, at least `min_effect`) and
//! its change exceeds the limit. Noise never fails the gate, and neither does a row
//! that could not be compared (untimed in one run), which the result lists as not
//! checked. A counter check fails when any per-token counter (the steady tokens'
//! maximum) grew by more than the allowed increase: counters are exact, so no
//! statistics are needed. Setup counters are shown by the diff but not gated: a new
//! kernel variant legitimately adds a pipeline at setup. When the diff finds that the
//! machine or its load changed (everything moved together), no timing check can be
//! judged: each is inconclusive and none fails; counter checks still apply.

use serde::Serialize;

use super::diff::{CounterScope, Diff, Presence, TimeDiff, Verdict};

/// The limits of `gpuscope diff --max-regress ... --max-regress-op ...
/// --max-counter-increase ...`; `None` and empty lists check nothing.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GateOptions {
    /// Largest allowed slowdown of the wall time per token, as a fraction (0.05 = 5%).
    pub max_regress: Option<f64>,
    /// Per op (kernel family, e.g. `gemv_q4_1`) or per label (e.g. `L3.ffn_down`): the
    /// largest allowed slowdown of its time per token.
    pub max_regress_op: Vec<(String, f64)>,
    /// Largest allowed increase of any per-token counter (0: none).
    pub max_counter_increase: Option<u64>,
}

impl GateOptions {
    /// Whether any limit is set.
    pub fn any(&self) -> bool {
        self.max_regress.is_some()
            || !self.max_regress_op.is_empty()
            || self.max_counter_increase.is_some()
    }
}

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckOutcome {
    Pass,
    Fail,
    /// The row has no timed samples in one run (timing off, an added op): not checked.
    NotChecked,
    /// A timing limit the gate cannot judge: everything moved together, so the machine
    /// or its load changed ([`super::diff::MachineChange`]); rerun both on one machine.
    Inconclusive,
}

/// What a check looked at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Subject {
    /// The wall time per token (`--max-regress`).
    TimePerToken,
    /// An op or a label (`--max-regress-op NAME=...`).
    Op(String),
    /// A per-token counter, by field name (`--max-counter-increase`).
    Counter(String),
}

/// The limit a check applied.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// Largest allowed slowdown, as a fraction.
    MaxRegress(f64),
    /// Largest allowed increase of a count.
    MaxIncrease(u64),
}

/// What the diff showed for the subject.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Observed {
    Time {
        presence: Presence,
        change: Option<f64>,
        p_value: Option<f64>,
        verdict: Verdict,
    },
    Counter {
        base: u64,
        new: u64,
    },
}

/// One limit applied to one row.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateCheck {
    pub subject: Subject,
    pub limit: Limit,
    pub observed: Observed,
    pub outcome: CheckOutcome,
}

/// Every check, failed ones included.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateResult {
    pub checks: Vec<GateCheck>,
}

impl GateResult {
    pub fn failures(&self) -> impl Iterator<Item = &GateCheck> {
        self.checks
            .iter()
            .filter(|c| c.outcome == CheckOutcome::Fail)
    }

    pub fn passed(&self) -> bool {
        self.failures().next().is_none()
    }
}

/// A limit that names nothing in either profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    #[error("--max-regress-op {0}: no op or label `{0}` in either profile")]
    UnknownOp(String),
}

/// Applies the limits to a diff.
pub fn gate(d: &Diff, o: &GateOptions) -> Result<GateResult, GateError> {
    let mut checks = Vec::new();
    let machine = d.machine_change.is_some();
    let time_check = |subject, presence, t: &TimeDiff, limit| {
        let mut c = time_check(subject, presence, t, limit);
        if machine && c.outcome != CheckOutcome::NotChecked {
            c.outcome = CheckOutcome::Inconclusive;
        }
        c
    };
    if let Some(limit) = o.max_regress {
        checks.push(time_check(
            Subject::TimePerToken,
            Presence::Both,
            &d.headline.wall,
            limit,
        ));
    }
    for (name, limit) in &o.max_regress_op {
        let (presence, time) = d
            .ops
            .iter()
            .find(|r| &r.op == name)
            .map(|r| (r.presence, &r.time))
            .or_else(|| {
                d.labels
                    .iter()
                    .find(|r| &r.label == name)
                    .map(|r| (r.presence, &r.time))
            })
            .ok_or_else(|| GateError::UnknownOp(name.clone()))?;
        checks.push(time_check(
            Subject::Op(name.clone()),
            presence,
            time,
            *limit,
        ));
    }
    if let Some(allowed) = o.max_counter_increase {
        checks.extend(
            d.counters
                .iter()
                .filter(|c| c.scope == CounterScope::SteadyMax)
                .map(|c| GateCheck {
                    subject: Subject::Counter(c.name.clone()),
                    limit: Limit::MaxIncrease(allowed),
                    observed: Observed::Counter {
                        base: c.base,
                        new: c.new,
                    },
                    outcome: if c.delta() > allowed as i128 {
                        CheckOutcome::Fail
                    } else {
                        CheckOutcome::Pass
                    },
                }),
        );
    }
    Ok(GateResult { checks })
}

fn time_check(subject: Subject, presence: Presence, t: &TimeDiff, limit: f64) -> GateCheck {
    let outcome = match (presence, t.verdict, t.change) {
        (Presence::Added | Presence::Removed, _, _)
        | (_, Verdict::NotCompared, _)
        | (_, _, None) => CheckOutcome::NotChecked,
        (_, Verdict::Slower, Some(c)) if c > limit => CheckOutcome::Fail,
        _ => CheckOutcome::Pass,
    };
    GateCheck {
        subject,
        limit: Limit::MaxRegress(limit),
        observed: Observed::Time {
            presence,
            change: t.change,
            p_value: t.p_value,
            verdict: t.verdict,
        },
        outcome,
    }
}
