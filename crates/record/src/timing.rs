//! Timing modes: which one a device allows, and turning raw timestamp ticks into spans.
//!
//! Modes (the profile's [`TimingMode`], plus sampling):
//! - `dispatch`: a timestamp at the start of each pass and after each dispatch (n + 1 per
//!   pass, not 2n: on NVIDIA each timestamp inside a pass costs microseconds, see
//!   shared/docs/GPU-HOSTS.md). Dispatch i's span runs from the timestamp before it to
//!   the one after it, so it includes the barrier it waited on.
//! - `dispatch` sampled every `stride`: timestamps just before and after dispatch i of
//!   step t only when `(i + t + t / stride) % stride == 0` (`Sampling::is_timed`); every
//!   dispatch is timed once in each block of `stride` steps, on steps of both parities,
//!   at a fraction of the cost. No pass spans.
//! - `pass`: timestamps at each pass's start and end (the pass descriptor's
//!   `timestamp_writes`).
//! - `off`: no GPU timestamps; wall-clock only.
//!
//! Zero, negative and out-of-order intervals are flagged, never averaged in.

use gpuscope_trace::{GpuSpan, Sampling, TimestampIssue, TimingMode};

use crate::error::RecorderError;

/// Which timing the program wants. `Auto` takes the finest the device allows, sampled on
/// adapters where a timestamp per dispatch is known to be expensive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimingRequest {
    #[default]
    Auto,
    Exactly(TimingMode),
    /// Per-dispatch timestamps on every `stride`-th dispatch, rotating over steps.
    Sampled {
        stride: u32,
    },
}

/// Stride `Auto` uses where full dispatch timing is expensive: a step of ~300 dispatches
/// then writes ~38 timestamps instead of ~300.
pub const AUTO_SAMPLING_STRIDE: u32 = 16;

/// The timing in use: mode, sampling and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    pub mode: TimingMode,
    pub sampling: Option<Sampling>,
    pub reason: String,
    /// Auto's sampling: the stride is fitted to the program's steps once the first step
    /// has ended ([`fitted_stride`]), so a step carries about
    /// [`AUTO_SAMPLES_PER_STEP`] timed dispatches whatever its size.
    pub fit_stride: bool,
}

/// Timed dispatches per step `auto`'s sampling aims at. Each pair of timestamps between
/// dispatches costs the GPU several µs on NVIDIA: at 1 in 16, SmolLM2's 153 dispatches per
/// token carried 10 samples and lost 11.8% throughput on an H100 (Llama-8B: 5.9%); 3
/// samples lost 5.3% (2.1%) (BENCHMARKS.md, runs 9 and 10).
pub const AUTO_SAMPLES_PER_STEP: u32 = 2;

/// Why auto samples, with the stride and how it rotates.
fn auto_sampling_reason(stride: u32, how: &str, adapter: &str) -> String {
    format!(
        "sampled per-dispatch GPU timestamps (1 dispatch in {stride} per token, {how}): \
         a timestamp after every dispatch is expensive on {adapter}"
    )
}

impl Timing {
    /// The stride a step of `dispatches` is sampled with; `None` when not sampled.
    pub fn stride_for(&self, dispatches: u32) -> Option<u32> {
        let s = self.sampling.as_ref()?;
        Some(if self.fit_stride {
            fitted_stride(dispatches)
        } else {
            s.stride
        })
    }

    /// Auto's sampling fitted to a step of `dispatches` ([`fitted_stride`]), once: after
    /// it, or for any other timing, this does nothing.
    pub(crate) fn fit_to_step(&mut self, dispatches: u32, adapter: &str) {
        if !self.fit_stride || dispatches == 0 {
            return;
        }
        let stride = fitted_stride(dispatches);
        self.fit_stride = false;
        self.sampling = Some(Sampling { stride });
        self.reason = auto_sampling_reason(
            stride,
            &format!("rotating: about {AUTO_SAMPLES_PER_STEP} per step of {dispatches}"),
            adapter,
        );
    }
}

/// The stride auto's sampling takes for steps of `dispatches`: at least
/// [`AUTO_SAMPLING_STRIDE`], and wide enough for about [`AUTO_SAMPLES_PER_STEP`] samples.
pub fn fitted_stride(dispatches: u32) -> u32 {
    AUTO_SAMPLING_STRIDE.max(dispatches.div_ceil(AUTO_SAMPLES_PER_STEP))
}

/// Adapters on which a timestamp between dispatches costs several times a dispatch
/// (measured on an H200 with driver 580: 8.7 µs instead of 2.1 µs per dependent
/// dispatch, shared/docs/GPU-HOSTS.md).
fn dispatch_timestamps_are_expensive(info: &wgpu::AdapterInfo) -> bool {
    const NVIDIA: u32 = 0x10de;
    info.vendor == NVIDIA && info.device_type == wgpu::DeviceType::DiscreteGpu
}

/// Picks the timing `request` asks for, given the device's features.
pub fn choose_timing(
    request: TimingRequest,
    features: wgpu::Features,
    info: &wgpu::AdapterInfo,
) -> Result<Timing, RecorderError> {
    let has_ts = features.contains(wgpu::Features::TIMESTAMP_QUERY);
    let has_inside = has_ts && features.contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);
    let timing = |mode, sampling: Option<Sampling>, reason: String| Timing {
        mode,
        fit_stride: sampling.is_some() && request == TimingRequest::Auto,
        sampling,
        reason,
    };
    let missing = |mode: &str, feature, instead| RecorderError::MissingFeature {
        mode: mode.to_string(),
        feature,
        offered: String::new(),
        instead,
    };
    Ok(match request {
        TimingRequest::Auto if has_inside && dispatch_timestamps_are_expensive(info) => timing(
            TimingMode::Dispatch,
            Some(Sampling {
                stride: AUTO_SAMPLING_STRIDE,
            }),
            auto_sampling_reason(AUTO_SAMPLING_STRIDE, "rotating", &info.name),
        ),
        TimingRequest::Auto if has_inside => timing(
            TimingMode::Dispatch,
            None,
            "per-dispatch GPU timestamps: TIMESTAMP_QUERY_INSIDE_PASSES offered".into(),
        ),
        TimingRequest::Auto if has_ts => timing(
            TimingMode::Pass,
            None,
            "per-pass GPU timestamps: TIMESTAMP_QUERY offered, TIMESTAMP_QUERY_INSIDE_PASSES not"
                .into(),
        ),
        TimingRequest::Auto => timing(
            TimingMode::Off,
            None,
            "wall-clock only: the device has no TIMESTAMP_QUERY".into(),
        ),
        TimingRequest::Exactly(TimingMode::Dispatch) | TimingRequest::Sampled { .. }
            if !has_inside =>
        {
            return Err(if has_ts {
                missing("dispatch", "TIMESTAMP_QUERY_INSIDE_PASSES", "pass")
            } else {
                missing("dispatch", "TIMESTAMP_QUERY", "off")
            })
        }
        TimingRequest::Exactly(TimingMode::Dispatch) => timing(
            TimingMode::Dispatch,
            None,
            "per-dispatch GPU timestamps (requested)".into(),
        ),
        TimingRequest::Sampled { stride } => timing(
            TimingMode::Dispatch,
            Some(Sampling {
                stride: stride.max(1),
            }),
            format!(
                "sampled per-dispatch GPU timestamps, 1 dispatch in {} per token (requested)",
                stride.max(1)
            ),
        ),
        TimingRequest::Exactly(TimingMode::Pass) if has_ts => timing(
            TimingMode::Pass,
            None,
            "per-pass GPU timestamps (requested)".into(),
        ),
        TimingRequest::Exactly(TimingMode::Pass) => {
            return Err(missing("pass", "TIMESTAMP_QUERY", "off"))
        }
        TimingRequest::Exactly(TimingMode::Off) => timing(
            TimingMode::Off,
            None,
            "wall-clock only: GPU timing off (requested)".into(),
        ),
    })
}

/// The device features a timing request needs (what a program should create its device
/// with to get that timing).
pub fn features_for(request: TimingRequest) -> wgpu::Features {
    match request {
        TimingRequest::Exactly(TimingMode::Off) => wgpu::Features::empty(),
        TimingRequest::Exactly(TimingMode::Pass) => wgpu::Features::TIMESTAMP_QUERY,
        _ => wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES,
    }
}

/// Converts ticks to nanoseconds since the run's first timestamp.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TickClock {
    pub(crate) origin: u64,
    pub(crate) period_ns: f64,
}

impl TickClock {
    pub(crate) fn to_ns(self, ticks: u64) -> Option<u64> {
        (ticks >= self.origin).then(|| ((ticks - self.origin) as f64 * self.period_ns) as u64)
    }

    /// The span from `start` to `end`, or why it cannot be trusted.
    pub(crate) fn span(self, start: u64, end: u64) -> (Option<GpuSpan>, Option<TimestampIssue>) {
        if start == 0 || end == 0 {
            return (None, Some(TimestampIssue::Zero));
        }
        if end < start {
            return (None, Some(TimestampIssue::Negative));
        }
        match (self.to_ns(start), self.to_ns(end)) {
            (Some(s), Some(e)) => (
                Some(GpuSpan {
                    start_ns: s,
                    end_ns: e,
                }),
                None,
            ),
            _ => (None, Some(TimestampIssue::OutOfOrder)),
        }
    }
}

/// Query indices of one timed interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Queries {
    pub(crate) start: u32,
    pub(crate) end: u32,
}

/// A decoded interval.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Timed {
    pub gpu: Option<GpuSpan>,
    pub issue: Option<TimestampIssue>,
}

/// Decodes the spans of one step's passes and dispatches. `passes[i]` holds pass i's
/// queries (when the pass was timed) and the range of its dispatches; a pass starting
/// before the previous valid pass ended is out of order.
pub(crate) fn decode(
    ticks: &[u64],
    clock: TickClock,
    passes: &[(Option<Queries>, std::ops::Range<usize>)],
    dispatches: &[Option<Queries>],
) -> (Vec<Timed>, Vec<Timed>) {
    let tick = |q: u32| ticks.get(q as usize).copied().unwrap_or(0);
    let mut pass_out = Vec::with_capacity(passes.len());
    let mut previous_pass_end: Option<u64> = None;
    for (q, _) in passes {
        let Some(q) = q else {
            pass_out.push(Timed::default());
            continue;
        };
        let (start, end) = (tick(q.start), tick(q.end));
        let (span, mut issue) = clock.span(start, end);
        if issue.is_none() && previous_pass_end.is_some_and(|prev| start < prev) {
            issue = Some(TimestampIssue::OutOfOrder);
        }
        if issue.is_none() {
            previous_pass_end = Some(end);
        }
        pass_out.push(Timed {
            gpu: if issue.is_none() { span } else { None },
            issue,
        });
    }
    let dispatch_out = dispatches
        .iter()
        .map(|q| match q {
            None => Timed::default(),
            Some(q) => {
                let (gpu, issue) = clock.span(tick(q.start), tick(q.end));
                Timed { gpu, issue }
            }
        })
        .collect();
    (pass_out, dispatch_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLOCK: TickClock = TickClock {
        origin: 1000,
        period_ns: 1.0,
    };

    fn q(start: u32, end: u32) -> Option<Queries> {
        Some(Queries { start, end })
    }

    #[test]
    fn dispatch_ticks_give_spans_between_consecutive_timestamps() {
        // Pass 0: 2 dispatches (3 ticks); pass 1: 1 dispatch (2 ticks).
        let ticks = [1000, 1010, 1030, 1040, 1045];
        let (passes, ds) = decode(
            &ticks,
            CLOCK,
            &[(q(0, 2), 0..2), (q(3, 4), 2..3)],
            &[q(0, 1), q(1, 2), q(3, 4)],
        );
        assert_eq!(
            passes[0].gpu,
            Some(GpuSpan {
                start_ns: 0,
                end_ns: 30
            })
        );
        assert_eq!(
            passes[1].gpu,
            Some(GpuSpan {
                start_ns: 40,
                end_ns: 45
            })
        );
        assert_eq!(
            ds[1].gpu,
            Some(GpuSpan {
                start_ns: 10,
                end_ns: 30
            })
        );
        assert!(ds.iter().all(|d| d.issue.is_none()));
    }

    #[test]
    fn zero_negative_and_out_of_order_are_flagged_not_timed() {
        // Dispatch 0 ends at 0 (never written), dispatch 1 runs backwards, and pass 1
        // starts before pass 0 ended.
        let ticks = [1000, 0, 1020, 1010, 1015];
        let (passes, ds) = decode(
            &ticks,
            CLOCK,
            &[(q(0, 2), 0..2), (q(3, 4), 2..3)],
            &[q(0, 1), q(1, 2), q(3, 4)],
        );
        assert_eq!(ds[0].issue, Some(TimestampIssue::Zero));
        assert_eq!(ds[1].issue, Some(TimestampIssue::Zero));
        assert_eq!(ds[0].gpu, None);
        assert_eq!(passes[1].issue, Some(TimestampIssue::OutOfOrder));
        assert_eq!(passes[1].gpu, None);
        let (_, one) = decode(&[1050, 1040], CLOCK, &[], &[q(0, 1)]);
        assert_eq!(one[0].issue, Some(TimestampIssue::Negative));
    }

    #[test]
    fn ticks_before_the_origin_are_out_of_order_and_untimed_intervals_stay_empty() {
        let (passes, ds) = decode(&[500, 900], CLOCK, &[(q(0, 1), 0..1)], &[None]);
        assert_eq!(passes[0].issue, Some(TimestampIssue::OutOfOrder));
        assert_eq!(ds[0], Timed::default());
    }

    #[test]
    fn period_scales_ticks_to_nanoseconds() {
        let clock = TickClock {
            origin: 100,
            period_ns: 2.5,
        };
        assert_eq!(clock.to_ns(140), Some(100));
    }

    fn info(vendor: u32, device_type: wgpu::DeviceType) -> wgpu::AdapterInfo {
        let mut info = wgpu::AdapterInfo::new(device_type, wgpu::Backend::Vulkan);
        info.name = "GPU X".into();
        info.vendor = vendor;
        info
    }

    const ALL_TS: wgpu::Features =
        wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

    #[test]
    fn auto_takes_the_finest_offered_and_samples_where_timestamps_are_expensive() {
        let cpu = info(0x10005, wgpu::DeviceType::Cpu);
        let t = choose_timing(TimingRequest::Auto, ALL_TS, &cpu).unwrap();
        assert_eq!((t.mode, t.sampling), (TimingMode::Dispatch, None));
        let nvidia = info(0x10de, wgpu::DeviceType::DiscreteGpu);
        let t = choose_timing(TimingRequest::Auto, ALL_TS, &nvidia).unwrap();
        assert_eq!(t.mode, TimingMode::Dispatch);
        assert_eq!(t.sampling.map(|s| s.stride), Some(AUTO_SAMPLING_STRIDE));
        let t = choose_timing(TimingRequest::Auto, wgpu::Features::TIMESTAMP_QUERY, &cpu).unwrap();
        assert_eq!(t.mode, TimingMode::Pass);
        let t = choose_timing(TimingRequest::Auto, wgpu::Features::empty(), &cpu).unwrap();
        assert_eq!(t.mode, TimingMode::Off);
        assert!(t.reason.contains("wall-clock"));
    }

    #[test]
    fn a_requested_mode_without_its_feature_names_the_feature_and_the_way_out() {
        let cpu = info(0x10005, wgpu::DeviceType::Cpu);
        let err = choose_timing(
            TimingRequest::Exactly(TimingMode::Dispatch),
            wgpu::Features::TIMESTAMP_QUERY,
            &cpu,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("TIMESTAMP_QUERY_INSIDE_PASSES") && err.contains("timing `pass`"),
            "{err}"
        );
        let err = choose_timing(
            TimingRequest::Exactly(TimingMode::Pass),
            wgpu::Features::empty(),
            &cpu,
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("TIMESTAMP_QUERY") && err.contains("timing `off`"),
            "{err}"
        );
    }

    #[test]
    fn auto_sampling_fits_its_stride_to_the_step_and_requested_sampling_keeps_it() {
        let nvidia = info(0x10de, wgpu::DeviceType::DiscreteGpu);
        assert!(
            choose_timing(TimingRequest::Auto, ALL_TS, &nvidia)
                .unwrap()
                .fit_stride
        );
        let asked = TimingRequest::Sampled { stride: 16 };
        assert!(!choose_timing(asked, ALL_TS, &nvidia).unwrap().fit_stride);
        let cpu = info(0x10005, wgpu::DeviceType::Cpu);
        assert!(
            !choose_timing(TimingRequest::Auto, ALL_TS, &cpu)
                .unwrap()
                .fit_stride
        );
        // SmolLM2's 153 dispatches: 2 samples a step; a small step keeps the floor of 16.
        assert_eq!(fitted_stride(153), 77);
        assert_eq!(fitted_stride(163), 82);
        assert_eq!(fitted_stride(13), AUTO_SAMPLING_STRIDE);
    }
}
