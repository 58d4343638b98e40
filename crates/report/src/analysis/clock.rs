//! Clock alignment: GPU spans on the CPU's clock.
//!
//! GPU spans count nanoseconds from the run's first GPU timestamp; [`gpuscope_trace::CpuSpan`]s
//! count from the run's CPU origin. The two clocks tick at the same rate (both are
//! nanoseconds) but their origins differ by an unknown offset `o`:
//! `cpu time = gpu time + o`. Causality bounds it, for every token `t` that has both:
//!
//! - the GPU cannot start a token's work before the CPU submits it:
//!   `gpu_first_start[t] + o ≥ submit_start[t]`
//! - the CPU cannot see the result before the GPU finished it:
//!   `gpu_last_end[t] + o ≤ done[t]` (end of the token's `readback` or `wait` span)
//!
//! so `lo = max_t(submit_start[t] − gpu_first_start[t]) ≤ o ≤ min_t(done[t] −
//! gpu_last_end[t]) = hi`. The alignment takes `o = lo`: the token that started
//! soonest after its submit started at once, which is within the GPU's submit latency
//! of the truth (microseconds), while the other bound carries the readback's latency.
//! `slack = hi − lo` says how well the clocks are pinned. `lo > hi` means the spans
//! contradict each other (clocks drifting, or wrong spans): no alignment.
//!
//! When a token has no `submit` span its `step` span's start is used, and without
//! `readback`/`wait` its `step` span's end; both are weaker bounds, never wrong ones.

use std::collections::HashMap;

use gpuscope_trace::{GpuSpan, Profile};

/// An offset that maps GPU time onto the CPU clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClockAlignment {
    /// `cpu ns = gpu ns + offset_ns`.
    pub offset_ns: i64,
    /// `hi − lo`: how far the true offset may be from `offset_ns`; `None` when only
    /// one bound was known (no token had both a start and an end on the CPU).
    pub slack_ns: Option<u64>,
    /// Tokens that constrained it.
    pub tokens: usize,
}

impl ClockAlignment {
    /// A GPU time on the CPU clock.
    pub fn to_cpu(&self, gpu_ns: u64) -> i64 {
        gpu_ns as i64 + self.offset_ns
    }

    /// A CPU time on the GPU clock.
    pub fn to_gpu(&self, cpu_ns: u64) -> i64 {
        cpu_ns as i64 - self.offset_ns
    }
}

/// Why the clocks could not be aligned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AlignError {
    /// The profile records no per-token CPU spans.
    NoCpuSpans,
    /// No token has a valid GPU span.
    NoGpuSpans,
    /// No token has both.
    NoCommonTokens,
    /// The bounds cross: token `late_start` needs an offset of at least `lo`, token
    /// `early_end` one of at most `hi`.
    Inconsistent {
        lo: i64,
        hi: i64,
        late_start: u32,
        early_end: u32,
    },
}

impl std::fmt::Display for AlignError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AlignError::NoCpuSpans => write!(f, "the profile has no per-token CPU spans"),
            AlignError::NoGpuSpans => write!(f, "no token has a valid GPU span"),
            AlignError::NoCommonTokens => {
                write!(f, "no token has both CPU spans and a valid GPU span")
            }
            AlignError::Inconsistent {
                lo,
                hi,
                late_start,
                early_end,
            } => write!(
                f,
                "CPU and GPU spans contradict each other: token {late_start} needs the GPU \
                 clock {lo} ns behind the CPU's, token {early_end} at most {hi} ns"
            ),
        }
    }
}

/// Per token: the CPU's submit start and result time, on the CPU clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct CpuBracket {
    pub submit_ns: Option<u64>,
    pub done_ns: Option<u64>,
    step_start: Option<u64>,
    step_end: Option<u64>,
}

impl CpuBracket {
    /// When the GPU could first start the token's work.
    pub fn start(&self) -> Option<u64> {
        self.submit_ns.or(self.step_start)
    }

    /// When the CPU had the token's result.
    pub fn end(&self) -> Option<u64> {
        self.done_ns.or(self.step_end)
    }
}

/// The CPU brackets of every token that has per-token CPU spans, by token index.
pub fn cpu_brackets(p: &Profile) -> HashMap<u32, CpuBracket> {
    let mut out: HashMap<u32, CpuBracket> = HashMap::new();
    for s in &p.cpu_spans {
        let Some(token) = s.token else { continue };
        let b = out.entry(token).or_default();
        let min = |x: &mut Option<u64>, v| *x = Some(x.map_or(v, |x: u64| x.min(v)));
        let max = |x: &mut Option<u64>, v| *x = Some(x.map_or(v, |x: u64| x.max(v)));
        match s.name.as_str() {
            "submit" => min(&mut b.submit_ns, s.start_ns),
            "wait" | "readback" => max(&mut b.done_ns, s.end_ns),
            "step" => {
                min(&mut b.step_start, s.start_ns);
                max(&mut b.step_end, s.end_ns);
            }
            _ => {}
        }
    }
    out
}

/// Per token: the first start and last end of its valid GPU spans (dispatches, else
/// passes), by token index.
pub fn gpu_brackets(p: &Profile) -> HashMap<u32, (u64, u64)> {
    let spans = p
        .dispatches
        .iter()
        .filter_map(|d| Some((d.token, d.gpu?, d.valid_gpu_ns()?)));
    let out = brackets(spans);
    if !out.is_empty() {
        return out;
    }
    brackets(
        p.passes
            .iter()
            .filter_map(|s| Some((s.token, s.gpu?, s.valid_gpu_ns()?))),
    )
}

/// First start and last end per token; events come grouped by token, so the map is
/// touched once per token rather than once per event.
fn brackets(spans: impl Iterator<Item = (u32, GpuSpan, u64)>) -> HashMap<u32, (u64, u64)> {
    let mut out: HashMap<u32, (u64, u64)> = HashMap::new();
    let mut flush = |cur: Option<(u32, u64, u64)>| {
        if let Some((token, start, end)) = cur {
            let e = out.entry(token).or_insert((start, end));
            e.0 = e.0.min(start);
            e.1 = e.1.max(end);
        }
    };
    let mut cur: Option<(u32, u64, u64)> = None;
    for (token, span, _) in spans {
        match &mut cur {
            Some((t, start, end)) if *t == token => {
                *start = (*start).min(span.start_ns);
                *end = (*end).max(span.end_ns);
            }
            _ => {
                flush(cur.take());
                cur = Some((token, span.start_ns, span.end_ns));
            }
        }
    }
    flush(cur);
    out
}

/// Aligns the GPU clock to the CPU clock (see the module docs).
pub fn align_clocks(p: &Profile) -> Result<ClockAlignment, AlignError> {
    let cpu = cpu_brackets(p);
    if cpu.is_empty() {
        return Err(AlignError::NoCpuSpans);
    }
    let gpu = gpu_brackets(p);
    if gpu.is_empty() {
        return Err(AlignError::NoGpuSpans);
    }
    let mut lo: Option<(i64, u32)> = None;
    let mut hi: Option<(i64, u32)> = None;
    let mut tokens = 0;
    let mut indices: Vec<u32> = gpu.keys().copied().collect();
    indices.sort_unstable();
    for t in indices {
        let (Some(b), Some(&(first, last))) = (cpu.get(&t), gpu.get(&t)) else {
            continue;
        };
        let mut used = false;
        if let Some(start) = b.start() {
            let v = start as i64 - first as i64;
            if lo.is_none_or(|(x, _)| v > x) {
                lo = Some((v, t));
            }
            used = true;
        }
        if let Some(end) = b.end() {
            let v = end as i64 - last as i64;
            if hi.is_none_or(|(x, _)| v < x) {
                hi = Some((v, t));
            }
            used = true;
        }
        tokens += usize::from(used);
    }
    match (lo, hi) {
        (Some((lo, late_start)), Some((hi, early_end))) if lo > hi => {
            Err(AlignError::Inconsistent {
                lo,
                hi,
                late_start,
                early_end,
            })
        }
        (Some((lo, _)), hi) => Ok(ClockAlignment {
            offset_ns: lo,
            slack_ns: hi.map(|(h, _)| (h - lo) as u64),
            tokens,
        }),
        (None, Some((hi, _))) => Ok(ClockAlignment {
            offset_ns: hi,
            slack_ns: None,
            tokens,
        }),
        (None, None) => Err(AlignError::NoCommonTokens),
    }
}
