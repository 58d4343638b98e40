//! What a chart of a whole run draws when the run is too long to draw event by event:
//! tokens merged into buckets, and the one token whose dispatches are shown.

use super::tokens::TokenStats;
use gpuscope_trace::Profile;

/// Consecutive tokens merged into one point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenBucket {
    /// First and last token index in it.
    pub first: u32,
    pub last: u32,
    /// Mean wall time, ns.
    pub wall_ns: f64,
    /// Mean GPU-busy time of the tokens that have one, ns.
    pub gpu_busy_ns: Option<f64>,
}

/// The tokens in at most `max_points` buckets of equal size (one token per bucket when
/// they fit).
pub fn token_buckets(p: &Profile, max_points: usize) -> Vec<TokenBucket> {
    let size = p.tokens.len().div_ceil(max_points.max(1)).max(1);
    p.tokens
        .chunks(size)
        .map(|c| {
            let busy: Vec<u64> = c.iter().filter_map(|t| t.gpu_busy_ns).collect();
            TokenBucket {
                first: c[0].index,
                last: c[c.len() - 1].index,
                wall_ns: c.iter().map(|t| t.wall_ns as f64).sum::<f64>() / c.len() as f64,
                gpu_busy_ns: (!busy.is_empty())
                    .then(|| busy.iter().map(|&b| b as f64).sum::<f64>() / busy.len() as f64),
            }
        })
        .collect()
}

/// The token to show dispatch by dispatch: the steady token whose wall time is the
/// median (the first such), preferring tokens that have valid dispatch spans.
pub fn representative_token(p: &Profile, steady: &TokenStats) -> Option<u32> {
    let timed: std::collections::HashSet<u32> = p
        .dispatches
        .iter()
        .filter(|d| d.valid_gpu_ns().is_some())
        .map(|d| d.token)
        .collect();
    let pool: Vec<&gpuscope_trace::TokenRecord> = {
        let steady_set: std::collections::HashSet<u32> = steady.tokens.iter().copied().collect();
        let mut v: Vec<_> = p
            .tokens
            .iter()
            .filter(|t| steady_set.contains(&t.index) || steady_set.is_empty())
            .collect();
        if v.iter().any(|t| timed.contains(&t.index)) {
            v.retain(|t| timed.contains(&t.index));
        }
        v
    };
    let mut by_wall = pool;
    by_wall.sort_by_key(|t| (t.wall_ns, t.index));
    by_wall
        .get(by_wall.len().saturating_sub(1) / 2)
        .map(|t| t.index)
}
