//! What profiling cost: the steady tokens of the profiled run against the steady tokens
//! of the same run with timing off (`--overhead`), each found by [`super::steady`], so a
//! slow start on one side never counts as the instrument's cost.

use gpuscope_trace::{Profile, TimingMode, TokenRecord};

use super::tokens::token_stats_steady;

/// Both rates, how many tokens each stands on, and the cost.
#[derive(Debug, Clone, PartialEq)]
pub struct OverheadFigures {
    pub mode: TimingMode,
    pub profiled_tok_per_s: f64,
    pub profiled_tokens: usize,
    pub off_tok_per_s: f64,
    pub off_tokens: usize,
    /// Throughput lost to profiling, in percent of the untimed rate.
    pub cost_percent: f64,
    /// Whether both sides are steady tokens; `false` for older profiles, which carry
    /// only the two rates (each over the tokens after the first).
    pub steady_vs_steady: bool,
}

/// The cost of `p`'s timing mode, when it was measured.
pub fn overhead(p: &Profile) -> Option<OverheadFigures> {
    let o = p.overhead.as_ref()?;
    if o.off_wall_ns.is_empty() {
        return Some(OverheadFigures {
            mode: o.mode,
            profiled_tok_per_s: o.tok_per_s_profiled,
            profiled_tokens: p.tokens.len().saturating_sub(1),
            off_tok_per_s: o.tok_per_s_off,
            off_tokens: p.tokens.len().saturating_sub(1),
            cost_percent: o.cost_percent(),
            steady_vs_steady: false,
        });
    }
    let on = token_stats_steady(p);
    let off_run = Profile {
        tokens: o
            .off_wall_ns
            .iter()
            .enumerate()
            .map(|(i, &wall_ns)| TokenRecord {
                index: i as u32,
                wall_ns,
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    let off = token_stats_steady(&off_run);
    let (on_rate, off_rate) = (on.tok_per_s?, off.tok_per_s?);
    Some(OverheadFigures {
        mode: o.mode,
        profiled_tok_per_s: on_rate,
        profiled_tokens: on.count(),
        off_tok_per_s: off_rate,
        off_tokens: off.count(),
        cost_percent: if off_rate > 0.0 {
            (1.0 - on_rate / off_rate) * 100.0
        } else {
            0.0
        },
        steady_vs_steady: true,
    })
}

impl OverheadFigures {
    /// `timing dispatch costs 2.1% throughput (439.8 tok/s over 53 steady tokens
    /// profiled, 449.3 over 57 with timing off)`.
    pub fn sentence(&self) -> String {
        let which = if self.steady_vs_steady { "steady " } else { "" };
        format!(
            "timing {} costs {:.1}% throughput ({:.1} tok/s over {} {which}tokens profiled, {:.1} over {} with timing off)",
            self.mode,
            self.cost_percent,
            self.profiled_tok_per_s,
            self.profiled_tokens,
            self.off_tok_per_s,
            self.off_tokens
        )
    }
}
