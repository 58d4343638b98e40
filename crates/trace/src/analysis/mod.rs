//! Analysis: one module per question, each a pure function from a [`Profile`] to a
//! plain result struct. Nothing here formats text; [`crate::render`] does that.
//!
//! Which spans count: a GPU span is used only when it is present, carries no
//! [`crate::TimestampIssue`] and does not end before it starts
//! ([`crate::valid_span_ns`]). Every span left out is counted in [`timestamps`], so
//! no bad timestamp is averaged in silently.
//!
//! Times are integer nanoseconds, as in the profile; rates are GB/s (10^9 bytes per
//! second) and GFLOP/s.

pub mod bottleneck;
pub mod counters;
pub mod layers;
pub mod ops;
pub mod stats;
pub mod timestamps;
pub mod tokens;

pub use bottleneck::{bottleneck, Bottleneck, Verdict};
pub use counters::{counter_report, Check, CheckStatus, CounterReport};
pub use layers::{layer_breakdown, LayerBreakdown, LayerExtremes, LayerRow, LayerTimeSource};
pub use ops::{op_breakdown, OpBreakdown, OpRow};
pub use stats::{percentile, Summary};
pub use timestamps::{timestamp_health, SpanCounts, SpanStatus, TimestampHealth};
pub use tokens::{token_stats, token_stats_steady, TokenSelection, TokenStats};

use crate::Profile;

/// Every analysis of one profile, as the text report shows them.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// All tokens.
    pub tokens: TokenStats,
    /// Tokens after the first (the first pays for warm-up).
    pub tokens_steady: TokenStats,
    pub ops: OpBreakdown,
    pub layers: LayerBreakdown,
    pub counters: CounterReport,
    pub timestamps: TimestampHealth,
    pub bottleneck: Bottleneck,
}

/// Runs every analysis.
pub fn analyze(p: &Profile) -> Analysis {
    Analysis {
        tokens: token_stats(p),
        tokens_steady: token_stats_steady(p),
        ops: op_breakdown(p),
        layers: layer_breakdown(p),
        counters: counter_report(p),
        timestamps: timestamp_health(p),
        bottleneck: bottleneck(p),
    }
}
