//! Roofline: how far each op, and each token, is from what the device allows.
//!
//! The ceilings are measured (`gpuscope peak`, [`gpuscope_trace::ceilings`]); without them this
//! analysis gives the arithmetic intensity only and says the rest is unknown.
//!
//! Per call of an op, with bandwidth `B` (copy kernel, bytes/ns), FLOP rate `F` (f32
//! FMA, FLOP/ns) and dependent-dispatch floor `D` (ns):
//!
//! - intensity `I = flops / bytes` (FLOP/byte)
//! - ceiling `min(B × I, F)` GFLOP/s — the classic roofline
//! - attainable time `t* = max(bytes / B, flops / F, D)`: no call can beat the memory
//!   system, the ALUs, or the cost of a dispatch that waits for the previous one
//! - % of ceiling `= Σ t* / Σ t` over the timed calls (the share of the roofline's
//!   rate reached; 100% means at the ceiling)
//! - bound: `launch` when the mean call takes at most 2 × `D`; else `memory` when
//!   `Σ bytes / B ≥ Σ flops / F`, `compute` otherwise
//!
//! Per token: floor `= max(bytes / B, dispatches × D, dispatches × C)` with `C` the
//! CPU encode + submit cost of one dispatch, and "N× from the floor" `= wall / floor`,
//! each a median over the steady tokens with its spread.
//!
//! "What it would take": for each of the 3 ops with the most GPU time, the time per
//! token saved if it ran at [`TARGET_PERCENT`] of its ceiling (`t* / 0.8` instead of
//! `t`), and the token time if all three did.

use super::ops::OpBreakdown;
use super::per_token::TokenTotals;
use super::sites::Site;
use gpuscope_trace::ceilings::Ceilings;
use gpuscope_trace::stats::{percentile_f64, Summary};

/// A call within this factor of the dispatch floor is launch-bound.
pub const LAUNCH_FACTOR: f64 = 2.0;
/// "What it would take" assumes the top ops reach this share of their ceiling.
pub const TARGET_PERCENT: f64 = 80.0;
/// Ops "what it would take" considers.
pub const TOP_OPS: usize = 3;

/// The figures of the ceilings this analysis used.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RooflineCeilings {
    /// Copy bandwidth, GB/s (= bytes/ns).
    pub bandwidth_gbps: f64,
    /// f32 FMA rate, GFLOP/s (= FLOP/ns); `None` when not measured.
    pub flop_rate_gflops: Option<f64>,
    /// Dependent-dispatch floor, ns.
    pub dispatch_floor_ns: Option<f64>,
    /// CPU encode + submit per dispatch, ns.
    pub cpu_dispatch_ns: Option<f64>,
}

impl RooflineCeilings {
    /// The roofline's figures from measured ceilings; `None` without a bandwidth.
    pub fn from(c: &Ceilings) -> Option<RooflineCeilings> {
        Some(RooflineCeilings {
            bandwidth_gbps: c.bandwidth_bytes_per_ns()?,
            flop_rate_gflops: c.flops_per_ns(),
            dispatch_floor_ns: c.dispatch_floor_ns(),
            cpu_dispatch_ns: c.cpu_dispatch_floor_ns(),
        })
    }

    /// Time spent moving `bytes` at the ceiling, ns.
    pub fn memory_ns(&self, bytes: f64) -> f64 {
        bytes / self.bandwidth_gbps
    }

    /// Time spent doing `flops` at the ceiling, ns (0 when the rate is unknown).
    pub fn compute_ns(&self, flops: f64) -> f64 {
        self.flop_rate_gflops.map_or(0.0, |f| flops / f)
    }

    /// `t*` of one call moving `bytes` and doing `flops`.
    pub fn attainable_ns(&self, bytes: f64, flops: f64) -> f64 {
        self.memory_ns(bytes)
            .max(self.compute_ns(flops))
            .max(self.dispatch_floor_ns.unwrap_or(0.0))
    }

    /// The roofline ceiling at intensity `i` (FLOP/byte), GFLOP/s.
    pub fn ceiling_gflops(&self, i: f64) -> f64 {
        let memory = self.bandwidth_gbps * i;
        self.flop_rate_gflops.map_or(memory, |f| memory.min(f))
    }

    /// Σ t* over a site's timed calls (each call taken at the site's mean size).
    pub fn site_attainable_ns(&self, s: &Site) -> Option<f64> {
        (s.timed_calls > 0).then(|| {
            let n = s.timed_calls as f64;
            n * self.attainable_ns(s.timed_bytes as f64 / n, s.timed_flops as f64 / n)
        })
    }

    /// What limits a group of calls.
    pub fn bound(&self, calls: u64, measured_ns: f64, bytes: f64, flops: f64) -> Bound {
        let mean = measured_ns / calls.max(1) as f64;
        if self
            .dispatch_floor_ns
            .is_some_and(|d| mean <= LAUNCH_FACTOR * d)
        {
            Bound::Launch
        } else if self.memory_ns(bytes) >= self.compute_ns(flops) {
            Bound::Memory
        } else {
            Bound::Compute
        }
    }
}

/// What limits an op.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Memory,
    Compute,
    /// Its calls take no more than twice the dependent-dispatch floor.
    Launch,
}

impl Bound {
    pub fn as_str(self) -> &'static str {
        match self {
            Bound::Memory => "memory",
            Bound::Compute => "compute",
            Bound::Launch => "launch",
        }
    }
}

/// One op against the roofline.
#[derive(Debug, Clone, PartialEq)]
pub struct OpRoofline {
    pub op: String,
    pub calls: u64,
    pub timed_calls: u64,
    /// Sum of the valid spans, ns.
    pub measured_ns: Option<u64>,
    /// FLOP per byte of the timed calls (of all calls when none was timed).
    pub intensity: Option<f64>,
    pub ceiling_gflops: Option<f64>,
    /// Σ t* over the timed calls, ns.
    pub attainable_ns: Option<f64>,
    pub percent_of_ceiling: Option<f64>,
    pub bound: Option<Bound>,
}

/// The term that sets the token floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FloorTerm {
    /// Declared bytes over the copy bandwidth.
    Bytes,
    /// Dispatches times the dependent-dispatch floor.
    Dispatches,
    /// Dispatches times the CPU encode + submit cost.
    CpuEncode,
}

impl FloorTerm {
    pub fn as_str(self) -> &'static str {
        match self {
            FloorTerm::Bytes => "bytes / copy bandwidth",
            FloorTerm::Dispatches => "dispatches × dependent-dispatch cost",
            FloorTerm::CpuEncode => "dispatches × CPU encode + submit cost",
        }
    }
}

/// A median of real numbers with its spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub n: usize,
}

impl Spread {
    pub fn of(values: &mut [f64]) -> Option<Spread> {
        Some(Spread {
            median: percentile_f64(values, 50.0)?,
            p10: percentile_f64(values, 10.0)?,
            p90: percentile_f64(values, 90.0)?,
            n: values.len(),
        })
    }
}

/// The fastest a token could be, and how far the steady tokens are from it.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenFloor {
    /// Medians over the steady tokens, ns.
    pub bytes_ns: Spread,
    pub dispatches_ns: Option<Spread>,
    pub cpu_ns: Option<Spread>,
    pub floor_ns: Spread,
    /// The term that set the floor most often.
    pub limiter: FloorTerm,
    /// Wall time over floor, per token.
    pub times_floor: Spread,
}

/// Time saved if one op reached [`TARGET_PERCENT`] of its ceiling.
#[derive(Debug, Clone, PartialEq)]
pub struct Saving {
    pub op: String,
    /// GPU time per token now and at the target, ns.
    pub now_ns: f64,
    pub target_ns: f64,
    pub saved_ns: f64,
}

/// The top ops at [`TARGET_PERCENT`] of their ceilings.
#[derive(Debug, Clone, PartialEq)]
pub struct WhatItWouldTake {
    pub savings: Vec<Saving>,
    /// Steady median wall per token now, and minus the savings, ns.
    pub token_now_ns: f64,
    pub token_after_ns: f64,
    /// The same as tokens per second.
    pub tok_per_s_now: f64,
    pub tok_per_s_after: f64,
}

/// The roofline of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Roofline {
    /// `None`: no usable ceilings; only intensities are known.
    pub ceilings: Option<RooflineCeilings>,
    /// In the order of the op breakdown (most GPU time first).
    pub ops: Vec<OpRoofline>,
    pub token_floor: Option<TokenFloor>,
    pub what_it_would_take: Option<WhatItWouldTake>,
}

/// Inputs computed by other analyses over the same (steady) tokens.
pub struct RooflineInput<'a> {
    pub ceilings: Option<&'a Ceilings>,
    pub ops: &'a OpBreakdown,
    pub sites: &'a [Site],
    /// Per steady token: its totals and wall time.
    pub tokens: &'a [(TokenTotals, u64)],
    pub wall: Option<Summary>,
}

/// Computes the roofline (see the module docs).
pub fn roofline(input: &RooflineInput) -> Roofline {
    let ceilings = input.ceilings.and_then(RooflineCeilings::from);
    let ops = input
        .ops
        .rows
        .iter()
        .map(|r| {
            let (bytes, flops) = if r.timed_calls() > 0 {
                (r.timed_bytes, r.timed_flops)
            } else {
                (r.bytes, r.flops)
            };
            let intensity = (bytes > 0).then(|| flops as f64 / bytes as f64);
            let attainable_ns = ceilings.and_then(|c| {
                let sites = input.sites.iter().filter(|s| s.op == r.op);
                r.total_gpu_ns?;
                Some(sites.filter_map(|s| c.site_attainable_ns(s)).sum::<f64>())
            });
            OpRoofline {
                op: r.op.clone(),
                calls: r.calls,
                timed_calls: r.timed_calls(),
                measured_ns: r.total_gpu_ns,
                intensity,
                ceiling_gflops: ceilings.zip(intensity).map(|(c, i)| c.ceiling_gflops(i)),
                attainable_ns,
                percent_of_ceiling: attainable_ns
                    .zip(r.total_gpu_ns.filter(|&t| t > 0))
                    .map(|(a, t)| a / t as f64 * 100.0),
                bound: ceilings.zip(r.total_gpu_ns).map(|(c, t)| {
                    c.bound(
                        r.timed_calls(),
                        t as f64,
                        r.timed_bytes as f64,
                        r.timed_flops as f64,
                    )
                }),
            }
        })
        .collect::<Vec<_>>();
    let token_floor = ceilings.and_then(|c| token_floor(&c, input.tokens));
    let what_it_would_take = what_it_would_take(&ops, input);
    Roofline {
        ceilings,
        ops,
        token_floor,
        what_it_would_take,
    }
}

fn token_floor(c: &RooflineCeilings, tokens: &[(TokenTotals, u64)]) -> Option<TokenFloor> {
    let mut bytes = Vec::new();
    let mut dispatches = Vec::new();
    let mut cpu = Vec::new();
    let mut floor = Vec::new();
    let mut ratio = Vec::new();
    let mut limiter_count = [0usize; 3];
    for (t, wall) in tokens {
        let terms = [
            Some(c.memory_ns(t.bytes as f64)),
            c.dispatch_floor_ns.map(|d| d * t.dispatches as f64),
            c.cpu_dispatch_ns.map(|d| d * t.dispatches as f64),
        ];
        let (which, f) = terms
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.map(|v| (i, v)))
            .fold((0, 0.0), |best, x| if x.1 > best.1 { x } else { best });
        bytes.extend(terms[0]);
        dispatches.extend(terms[1]);
        cpu.extend(terms[2]);
        if f > 0.0 {
            limiter_count[which] += 1;
            floor.push(f);
            ratio.push(*wall as f64 / f);
        }
    }
    let limiter = match (0..3).max_by_key(|&i| (limiter_count[i], std::cmp::Reverse(i)))? {
        0 => FloorTerm::Bytes,
        1 => FloorTerm::Dispatches,
        _ => FloorTerm::CpuEncode,
    };
    Some(TokenFloor {
        bytes_ns: Spread::of(&mut bytes)?,
        dispatches_ns: Spread::of(&mut dispatches),
        cpu_ns: Spread::of(&mut cpu),
        floor_ns: Spread::of(&mut floor)?,
        limiter,
        times_floor: Spread::of(&mut ratio)?,
    })
}

/// Per op (in the order of `ops`), the time per token saved if it ran at
/// [`TARGET_PERCENT`] of its ceiling; ops without a measured time or ceilings are left
/// out. `n_tokens`: the tokens the op times cover.
pub fn op_savings(ops: &[OpRoofline], n_tokens: usize) -> Vec<Saving> {
    let n_tokens = n_tokens.max(1) as f64;
    ops.iter()
        .filter_map(|o| {
            let measured = o.measured_ns? as f64;
            let attainable = o.attainable_ns?;
            // Untimed calls (sampling, flagged spans) cost what the timed ones did.
            let scale = o.calls as f64 / o.timed_calls.max(1) as f64 / n_tokens;
            let now_ns = measured * scale;
            let target_ns = (attainable / (TARGET_PERCENT / 100.0) * scale).min(now_ns);
            Some(Saving {
                op: o.op.clone(),
                now_ns,
                target_ns,
                saved_ns: now_ns - target_ns,
            })
        })
        .collect()
}

fn what_it_would_take(ops: &[OpRoofline], input: &RooflineInput) -> Option<WhatItWouldTake> {
    let wall = input.wall?;
    let mut savings = op_savings(ops, input.tokens.len());
    savings.truncate(TOP_OPS);
    if savings.is_empty() {
        return None;
    }
    let saved: f64 = savings.iter().map(|s| s.saved_ns).sum();
    let token_now_ns = wall.median as f64;
    let token_after_ns = (token_now_ns - saved).max(0.0);
    let rate = |ns: f64| if ns > 0.0 { 1e9 / ns } else { 0.0 };
    Some(WhatItWouldTake {
        tok_per_s_now: rate(token_now_ns),
        tok_per_s_after: rate(token_after_ns),
        token_after_ns,
        token_now_ns,
        savings,
    })
}

/// One dispatch's achieved rates: what a timeline shows on each slice.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DispatchRate {
    /// Declared bytes over the measured span, GB/s.
    pub gb_per_s: f64,
    /// Declared FLOPs over the measured span, GFLOP/s.
    pub gflop_per_s: f64,
    /// `t* / t` in percent, as for an op (see the module docs); `None` without
    /// ceilings.
    pub percent_of_ceiling: Option<f64>,
}

/// The rates of one call that moved `bytes` and did `flops` in `gpu_ns`; `None` for
/// an empty span.
pub fn dispatch_rate(
    bytes: u64,
    flops: u64,
    gpu_ns: u64,
    ceilings: Option<&RooflineCeilings>,
) -> Option<DispatchRate> {
    if gpu_ns == 0 {
        return None;
    }
    let t = gpu_ns as f64;
    Some(DispatchRate {
        gb_per_s: bytes as f64 / t,
        gflop_per_s: flops as f64 / t,
        percent_of_ceiling: ceilings
            .map(|c| c.attainable_ns(bytes as f64, flops as f64) / t * 100.0),
    })
}
