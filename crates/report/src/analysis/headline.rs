//! The headline figures: prompt processing (pp) and text generation (tg) in tokens
//! per second, as llama-bench reports them, each with its spread.
//!
//! tg: `10^9 / wall` per steady token; its median and p10–p90 are those of the wall
//! times inverted (the slowest tokens give p10). pp: the prompt's tokens over its wall
//! time, one measurement (no spread).

use super::tokens::TokenStats;
use gpuscope_trace::PromptRecord;

/// A rate in tokens per second.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokRate {
    pub median: f64,
    /// `None` for a single measurement.
    pub p10: Option<f64>,
    pub p90: Option<f64>,
    /// Tokens measured.
    pub n: usize,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headline {
    pub pp: Option<TokRate>,
    pub tg: Option<TokRate>,
}

fn per_s(ns: u64) -> f64 {
    1e9 / ns.max(1) as f64
}

pub fn headline(steady: &TokenStats, prompt: Option<&PromptRecord>) -> Headline {
    Headline {
        pp: prompt.filter(|p| p.tokens > 0).map(|p| TokRate {
            median: per_s(p.wall_ns) * p.tokens as f64,
            p10: None,
            p90: None,
            n: p.tokens as usize,
        }),
        tg: steady.wall_ns.map(|w| TokRate {
            median: per_s(w.median),
            p10: Some(per_s(w.p90)),
            p90: Some(per_s(w.p10)),
            n: w.count,
        }),
    }
}
