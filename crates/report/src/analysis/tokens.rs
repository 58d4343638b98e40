//! Per-token statistics: how long a token takes, on the wall and on the GPU.
//!
//! The first tokens often pay for warm-up (pipeline compilation, first-touch of
//! buffers, cold caches) or run at ramping GPU clocks, so [`token_stats_steady`] uses
//! the steady tokens [`super::steady`] finds; both results say which tokens they used.

use super::steady::{steady_state, SteadyMethod, SteadyState};
use gpuscope_trace::stats::Summary;
use gpuscope_trace::Profile;

/// Which tokens a [`TokenStats`] covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenSelection {
    All,
    /// Every token but the first (too few tokens to detect a steady state).
    SkipFirst,
    /// The steady tokens: slow start and outliers left out.
    Steady,
}

/// Wall and GPU-busy time per token, in nanoseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenStats {
    pub selection: TokenSelection,
    /// `index` of each token used, in order.
    pub tokens: Vec<u32>,
    /// Wall time of the tokens used; `None` when there are none.
    pub wall_ns: Option<Summary>,
    /// GPU-busy time of those tokens that have one (its `count` says how many);
    /// `None` when none has (timing off, or every span invalid).
    pub gpu_busy_ns: Option<Summary>,
    /// `gpu_busy_ns` is sampled timing's estimate (every token the same: the sites'
    /// estimated times summed), not measured token by token.
    pub gpu_busy_estimated: bool,
    /// That estimate is corrected for the timestamps around the sampled dispatches.
    pub gpu_busy_corrected: bool,
    /// Tokens per second from the median wall time.
    pub tok_per_s: Option<f64>,
    /// CPU launch time (upload + encode + submit) and GPU wait per token; `None` when
    /// the profile has no CPU breakdown (format 1.0).
    pub cpu_launch_ns: Option<Summary>,
    pub cpu_wait_ns: Option<Summary>,
    pub cpu_encode_ns: Option<Summary>,
    pub cpu_submit_ns: Option<Summary>,
}

impl TokenStats {
    pub fn count(&self) -> usize {
        self.tokens.len()
    }
}

/// Statistics over every token.
pub fn token_stats(p: &Profile) -> TokenStats {
    let all: Vec<&gpuscope_trace::TokenRecord> = p.tokens.iter().collect();
    stats(&all, TokenSelection::All)
}

/// Statistics over the steady tokens (see [`super::steady`]); with fewer tokens than
/// the detection needs, every token but the first.
pub fn token_stats_steady(p: &Profile) -> TokenStats {
    token_stats_of(p, &steady_state(p))
}

/// Statistics over the steady tokens of an already computed [`SteadyState`].
pub fn token_stats_of(p: &Profile, s: &SteadyState) -> TokenStats {
    let used: Vec<&gpuscope_trace::TokenRecord> = s.steady.iter().map(|&i| &p.tokens[i]).collect();
    let selection = match s.method {
        SteadyMethod::Detected => TokenSelection::Steady,
        SteadyMethod::TooFewTokens if used.len() == p.tokens.len() => TokenSelection::All,
        SteadyMethod::TooFewTokens => TokenSelection::SkipFirst,
    };
    stats(&used, selection)
}

fn stats(used: &[&gpuscope_trace::TokenRecord], selection: TokenSelection) -> TokenStats {
    let wall_ns = Summary::of(used.iter().map(|t| t.wall_ns));
    let has_cpu = used
        .iter()
        .any(|t| t.cpu != gpuscope_trace::CpuTimes::default());
    let cpu = |f: fn(&gpuscope_trace::CpuTimes) -> u64| {
        if has_cpu {
            Summary::of(used.iter().map(|t| f(&t.cpu)))
        } else {
            None
        }
    };
    TokenStats {
        cpu_launch_ns: cpu(|c| c.launch_ns()),
        cpu_wait_ns: cpu(|c| c.wait_ns),
        cpu_encode_ns: cpu(|c| c.encode_ns),
        cpu_submit_ns: cpu(|c| c.submit_ns),
        selection,
        tokens: used.iter().map(|t| t.index).collect(),
        wall_ns,
        gpu_busy_ns: Summary::of(used.iter().filter_map(|t| t.gpu_busy_ns)),
        gpu_busy_estimated: false,
        gpu_busy_corrected: false,
        tok_per_s: wall_ns.and_then(|w| rate_per_s(w.median)),
    }
}

/// Events per second for one event every `ns` nanoseconds; `None` for zero.
pub fn rate_per_s(ns: u64) -> Option<f64> {
    (ns > 0).then(|| 1e9 / ns as f64)
}
