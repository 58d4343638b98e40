//! Steady state and noise: which tokens a headline may use.
//!
//! A run starts with a slow phase more often than not: lazy pipeline compiles and cold
//! caches (warm-up), GPU clocks ramping up from idle (seen on an H200: 9 tokens at
//! 21.3 ms, then 6.3 ms). A median over all tokens then describes no token the user
//! will see, so every headline is computed over the steady tokens found here.
//!
//! Method (per-token wall time; formulas in `docs/analysis.md`):
//!
//! 1. Reference level `R` = median of the last half of the tokens (runs end steadier
//!    than they start), spread `S` = 1.4826 · MAD of that half, at least 1% of `R`.
//! 2. A token is *in band* when `|x − R| ≤ max(3.5 · S, 10% of R)`: a robust z-score
//!    of 3.5 (Iglewicz and Hoaglin's outlier cut-off), and never a difference under 10%,
//!    which timer jitter on a busy machine reaches.
//! 3. The run *settles* at the first token that starts [`SETTLE_RUN`] consecutive
//!    in-band tokens. Tokens before it are the slow start when they are slower than
//!    `R` (else outliers); in-band tokens before it belong to the slow start too.
//! 4. After that, tokens out of band are outliers. The rest are the steady tokens.
//! 5. The run reached a steady state when the steady tokens are at least a quarter of
//!    the run (and 3) and the medians of their first and second halves differ by at
//!    most 10% of `R` (no drift; a trend through the tail would widen the band, so
//!    the band is not used here).
//!
//! Below [`MIN_TOKENS`] tokens the method is not applied (a robust spread needs a
//! sample): every token but the first is used, and the result says so.
//!
//! Time that grows with the token's position (attention reading a longer KV cache) is
//! expected, not instability: a least-squares line of wall time against position, over
//! the last three quarters of the tokens, is taken out before the steps above when it
//! explains the growth (R² at least [`GROWTH_R2`] and a rise over the run of at least
//! 10% of the level), and [`SteadyState::growth`] reports its slope. Only what the line
//! does not explain can make a run unsettled. [`growth_by_op`] says which ops carry the
//! slope.
//!
//! A slow start of the first token alone, in a run whose steps overlap (a token's `step`
//! span begins before the previous one's ends: several steps in flight), is the
//! pipeline filling: a token's wall time runs from the later of its own start and the
//! previous completion, so the first token waits for a whole step while the others are
//! intervals between completions. More warm-up would not remove it (the warm-up's steps
//! end before the recorded ones begin), so no `--warmup` is suggested for it.

use gpuscope_trace::stats::{mad, median};
use gpuscope_trace::Profile;

/// Fewer tokens than this: no detection, the first token is left out.
pub const MIN_TOKENS: usize = 8;
/// Robust z-score beyond which a token is out of band.
pub const Z_LIMIT: f64 = 3.5;
/// Differences below this share of the reference level are never flagged.
pub const MIN_RELATIVE: f64 = 0.10;
/// The spread is at least this share of the reference level (timer resolution).
pub const SPREAD_FLOOR_RELATIVE: f64 = 0.01;
/// Consecutive in-band tokens that mark the start of the steady state.
pub const SETTLE_RUN: usize = 3;
/// A line of time against position explains the growth from this R² on.
pub const GROWTH_R2: f64 = 0.5;
/// MAD to standard deviation for normally distributed values.
const MAD_TO_SIGMA: f64 = 1.4826;

/// The reference level tokens are compared with.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reference {
    /// Median wall time of the last half of the tokens, ns.
    pub median_ns: u64,
    /// 1.4826 · MAD of that half, at least 1% of the median, ns.
    pub spread_ns: f64,
    /// Half-width of the band around the median, ns.
    pub band_ns: f64,
    /// Tokens the reference was taken over.
    pub n: usize,
}

impl Reference {
    fn z(&self, x: u64) -> f64 {
        (x as f64 - self.median_ns as f64) / self.spread_ns
    }

    fn in_band(&self, x: u64) -> bool {
        (x as f64 - self.median_ns as f64).abs() <= self.band_ns
    }
}

/// What the GPU timestamps say about a slow start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuEvidence {
    /// The GPU itself took longer per token (clock ramp-up, cold caches).
    Slower {
        slow_busy_ns: u64,
        steady_busy_ns: u64,
    },
    /// GPU time did not change: the slow start was on the CPU side.
    Unchanged {
        slow_busy_ns: u64,
        steady_busy_ns: u64,
    },
    /// No GPU-busy times to tell.
    Unknown,
}

/// The slow phase at the start of the recorded tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct SlowStart {
    /// Positions `0..end` in `Profile::tokens`.
    pub end: usize,
    /// Token indices of the first and last token of the phase.
    pub first_token: u32,
    pub last_token: u32,
    /// Median wall time over the phase, ns.
    pub median_ns: u64,
    pub gpu: GpuEvidence,
    /// The phase is the first token alone of a run with steps in flight: the pipeline
    /// filling (see the module docs).
    pub pipeline_fill: bool,
}

impl SlowStart {
    /// `the pipeline filling`, `clock ramp`, `warm-up (CPU side)` or `warm-up or clock
    /// ramp`.
    pub fn kind(&self) -> &'static str {
        if self.pipeline_fill {
            return "the pipeline filling (the first of the steps in flight waited for a \
                    whole step; the others' walls are intervals between completions)";
        }
        match self.gpu {
            GpuEvidence::Slower { .. } => "clock ramp (the GPU itself was slower)",
            GpuEvidence::Unchanged { .. } => "warm-up on the CPU side (GPU time unchanged)",
            GpuEvidence::Unknown => "warm-up or clock ramp (no GPU times to tell)",
        }
    }

    pub fn len(&self) -> usize {
        self.end
    }

    pub fn is_empty(&self) -> bool {
        self.end == 0
    }
}

/// A token out of band after the run settled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outlier {
    pub position: usize,
    pub token: u32,
    pub wall_ns: u64,
    /// Robust z-score against the reference.
    pub z: f64,
}

/// The steady tokens' first and second halves disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Drift {
    pub first_half_median_ns: u64,
    pub second_half_median_ns: u64,
}

/// Time per token growing with the token's position, as a line fitted by least squares.
#[derive(Debug, Clone, PartialEq)]
pub struct Growth {
    /// Slope, ns per position.
    pub ns_per_position: f64,
    /// Share of the variance the line explains.
    pub r2: f64,
    /// Positions the fit covered.
    pub first_position: u32,
    pub last_position: u32,
    /// The ops' own slopes (ns per position), largest first ([`growth_by_op`]).
    pub by_op: Vec<(String, f64)>,
}

impl Growth {
    /// µs per 1,000 positions, as the report prints it (ns per position × 1,000 / 1,000).
    pub fn us_per_1k(&self) -> f64 {
        self.ns_per_position
    }
}

/// Least-squares slope and R² of `y` against `x`; `None` for fewer than 3 points or no
/// spread in `x`.
pub fn fit_line(points: &[(f64, f64)]) -> Option<(f64, f64)> {
    let n = points.len() as f64;
    if points.len() < 3 {
        return None;
    }
    let (mx, my) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x / n, b + y / n));
    let (mut sxx, mut sxy, mut syy) = (0.0, 0.0, 0.0);
    for (x, y) in points {
        sxx += (x - mx) * (x - mx);
        sxy += (x - mx) * (y - my);
        syy += (y - my) * (y - my);
    }
    if sxx <= 0.0 {
        return None;
    }
    let slope = sxy / sxx;
    let r2 = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        0.0
    };
    Some((slope, r2))
}

/// The growth of wall time with position over the last three quarters of the tokens,
/// when a line explains it (see the module docs).
fn growth(p: &Profile, x: &[u64], level: u64) -> Option<Growth> {
    let from = x.len() / 4;
    let points: Vec<(f64, f64)> = (from..x.len())
        .map(|i| (f64::from(p.tokens[i].position), x[i] as f64))
        .collect();
    let (slope, r2) = fit_line(&points)?;
    let (first, last) = (p.tokens[from].position, p.tokens[x.len() - 1].position);
    let rise = slope * f64::from(last.saturating_sub(first));
    (slope > 0.0 && r2 >= GROWTH_R2 && rise >= MIN_RELATIVE * level as f64).then(|| Growth {
        ns_per_position: slope,
        r2,
        first_position: first,
        last_position: last,
        by_op: growth_by_op(p, &(from..x.len()).collect::<Vec<_>>()),
    })
}

/// Per op, the slope of its time per token against position over `tokens` (positions
/// in `Profile::tokens`), largest first: which ops carry [`SteadyState::growth`].
pub fn growth_by_op(p: &Profile, tokens: &[usize]) -> Vec<(String, f64)> {
    use std::collections::BTreeMap;
    let index: std::collections::HashMap<u32, usize> =
        tokens.iter().map(|&i| (p.tokens[i].index, i)).collect();
    let mut per_op: BTreeMap<&str, BTreeMap<usize, u64>> = BTreeMap::new();
    for d in &p.dispatches {
        if let (Some(&i), Some(ns)) = (index.get(&d.token), d.valid_gpu_ns()) {
            *per_op.entry(&d.op).or_default().entry(i).or_default() += ns;
        }
    }
    let mut out: Vec<(String, f64)> = per_op
        .into_iter()
        .filter_map(|(op, times)| {
            let points: Vec<(f64, f64)> = times
                .iter()
                .map(|(&i, &ns)| (f64::from(p.tokens[i].position), ns as f64))
                .collect();
            fit_line(&points).map(|(slope, _)| (op.to_string(), slope))
        })
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1));
    out
}

/// How the steady tokens were chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SteadyMethod {
    /// The robust method above ran.
    Detected,
    /// Fewer than [`MIN_TOKENS`] tokens: every token but the first (all of one).
    TooFewTokens,
}

/// The result: which tokens are steady, and what the others were.
#[derive(Debug, Clone, PartialEq)]
pub struct SteadyState {
    pub method: SteadyMethod,
    /// Tokens in the run.
    pub tokens: usize,
    pub reference: Option<Reference>,
    pub slow_start: Option<SlowStart>,
    pub outliers: Vec<Outlier>,
    pub drift: Option<Drift>,
    /// Whether the run reached a steady state (see the module docs).
    pub settled: bool,
    /// Positions in `Profile::tokens` the headlines use, ascending.
    pub steady: Vec<usize>,
    /// When the slow start ran into the recorded tokens: the `--warmup` that would
    /// have covered it (the profile's warm-up plus the phase's length).
    pub suggested_warmup: Option<u32>,
    /// Time growing with position, taken out before the detection (see the module
    /// docs); `None` when no line explains a growth.
    pub growth: Option<Growth>,
}

impl SteadyState {
    /// Token indices of the steady tokens.
    pub fn steady_tokens<'a>(&'a self, p: &'a Profile) -> impl Iterator<Item = u32> + 'a {
        self.steady.iter().map(move |&i| p.tokens[i].index)
    }
}

/// Finds the steady tokens of `p` (see the module docs).
pub fn steady_state(p: &Profile) -> SteadyState {
    let n = p.tokens.len();
    let x: Vec<u64> = p.tokens.iter().map(|t| t.wall_ns).collect();
    if n < MIN_TOKENS {
        return SteadyState {
            method: SteadyMethod::TooFewTokens,
            tokens: n,
            reference: None,
            slow_start: None,
            outliers: Vec::new(),
            drift: None,
            settled: false,
            steady: (usize::from(n > 1)..n).collect(),
            suggested_warmup: None,
            growth: None,
        };
    }
    // Growth with position is taken out first: what is left is what the method judges.
    let level = median(x[n / 2..].iter().copied()).unwrap_or(0);
    let growth = growth(p, &x, level);
    let x: Vec<u64> = match &growth {
        Some(g) => {
            let last = f64::from(p.tokens[n - 1].position);
            x.iter()
                .zip(&p.tokens)
                .map(|(&v, t)| {
                    let shift = g.ns_per_position * (last - f64::from(t.position));
                    (v as f64 + shift).max(0.0) as u64
                })
                .collect()
        }
        None => x,
    };
    let reference = reference(&x[n / 2..]);
    let settle = (0..n)
        .find(|&i| {
            x[i..(i + SETTLE_RUN).min(n)]
                .iter()
                .all(|&v| reference.in_band(v))
        })
        .unwrap_or(n);
    let mut outliers = Vec::new();
    let slow_median = median(x[..settle].iter().copied());
    let slow = slow_median.filter(|&m| m > reference.median_ns);
    if slow.is_none() {
        // A prefix out of band but not slower is no slow start: its tokens are outliers.
        outliers.extend((0..settle).filter(|&i| !reference.in_band(x[i])));
    }
    outliers.extend((settle..n).filter(|&i| !reference.in_band(x[i])));
    let outlier = |i: usize| Outlier {
        position: i,
        token: p.tokens[i].index,
        wall_ns: x[i],
        z: reference.z(x[i]),
    };
    let mut is_outlier = vec![false; n];
    for &i in &outliers {
        is_outlier[i] = true;
    }
    let outliers: Vec<Outlier> = outliers.into_iter().map(outlier).collect();
    let start = if slow.is_some() { settle } else { 0 };
    let mut steady: Vec<usize> = (start..n).filter(|&i| !is_outlier[i]).collect();
    let drift = drift(&x, &steady, &reference);
    let settled = steady.len() >= SETTLE_RUN.max(n / 4) && drift.is_none();
    if steady.is_empty() {
        // Never settled: the last half is the best there is; `settled` says so.
        steady = (n / 2..n).collect();
    }
    let slow_start = slow.map(|median_ns| SlowStart {
        end: settle,
        first_token: p.tokens[0].index,
        last_token: p.tokens[settle - 1].index,
        median_ns,
        gpu: gpu_evidence(p, 0..settle, &steady),
        pipeline_fill: settle == 1 && steps_overlap(p),
    });
    let suggested_warmup = slow_start
        .as_ref()
        .filter(|s| !s.pipeline_fill)
        .map(|s| p.warmup_tokens.unwrap_or(0).saturating_add(s.end as u32));
    SteadyState {
        method: SteadyMethod::Detected,
        tokens: n,
        reference: Some(reference),
        slow_start,
        outliers,
        drift,
        settled,
        steady,
        suggested_warmup,
        growth,
    }
}

/// Whether some token's `step` span begins before the previous token's ends: the
/// program kept several steps in flight.
fn steps_overlap(p: &Profile) -> bool {
    let mut steps: Vec<(u32, u64, u64)> = p
        .cpu_spans
        .iter()
        .filter(|c| c.name == "step")
        .filter_map(|c| Some((c.token?, c.start_ns, c.end_ns)))
        .collect();
    steps.sort_unstable();
    steps
        .windows(2)
        .any(|w| w[1].0 == w[0].0 + 1 && w[1].1 < w[0].2)
}

fn reference(tail: &[u64]) -> Reference {
    let median_ns = median(tail.iter().copied()).unwrap_or(0);
    let mad = mad(tail.iter().copied(), median_ns).unwrap_or(0);
    let spread_ns = (MAD_TO_SIGMA * mad as f64)
        .max(SPREAD_FLOOR_RELATIVE * median_ns as f64)
        .max(1.0);
    Reference {
        median_ns,
        spread_ns,
        band_ns: (Z_LIMIT * spread_ns).max(MIN_RELATIVE * median_ns as f64),
        n: tail.len(),
    }
}

fn drift(x: &[u64], steady: &[usize], r: &Reference) -> Option<Drift> {
    if steady.len() < 2 * SETTLE_RUN {
        return None;
    }
    let (a, b) = steady.split_at(steady.len() / 2);
    let first = median(a.iter().map(|&i| x[i]))?;
    let second = median(b.iter().map(|&i| x[i]))?;
    (first.abs_diff(second) as f64 > MIN_RELATIVE * r.median_ns as f64).then_some(Drift {
        first_half_median_ns: first,
        second_half_median_ns: second,
    })
}

fn gpu_evidence(p: &Profile, slow: std::ops::Range<usize>, steady: &[usize]) -> GpuEvidence {
    let busy = |i: usize| p.tokens[i].gpu_busy_ns;
    let (Some(slow_busy_ns), Some(steady_busy_ns)) = (
        median(slow.filter_map(busy)),
        median(steady.iter().filter_map(|&i| busy(i))),
    ) else {
        return GpuEvidence::Unknown;
    };
    if slow_busy_ns as f64 > steady_busy_ns as f64 * (1.0 + MIN_RELATIVE) {
        GpuEvidence::Slower {
            slow_busy_ns,
            steady_busy_ns,
        }
    } else {
        GpuEvidence::Unchanged {
            slow_busy_ns,
            steady_busy_ns,
        }
    }
}
