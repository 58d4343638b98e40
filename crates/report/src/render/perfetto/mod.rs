//! A profile as a Perfetto trace (protobuf `TrackEvent`s), for ui.perfetto.dev.
//!
//! Tracks, under one process named after the workload:
//!
//! - one per CPU thread of [`Profile::threads`], with its [`gpuscope_trace::CpuSpan`]s as
//!   slices; spans that overlap without nesting (two tokens in flight) go to extra
//!   lanes under the thread;
//! - the GPU queue: per token a slice, inside it one per compute pass, inside those one
//!   per timed dispatch (name = op; args: label, layer, workgroups, bytes, FLOPs,
//!   GB/s, GFLOP/s, % of ceiling when ceilings are known). With timing `pass` the
//!   track has tokens and passes; with timing `off` it is empty; its name says which.
//!   Dispatches that overlap (run concurrently) go to extra lanes beside it;
//! - counters: tok/s per token, GB/s per dispatch, dispatches and syncs per token.
//!
//! A flow arrow goes from each token's first CPU `submit` span to its first GPU slice.
//! GPU timestamps are put on the CPU clock with [`crate::analysis::align_clocks`]
//! (causality bounds; docs/viewers.md); when that fails the GPU track keeps the GPU
//! clock and its name says why. Everything is shifted by one constant so that no
//! timestamp is negative.
//!
//! The format was chosen over Chrome's JSON trace events for size and speed (a slice
//! is ~60 bytes instead of ~200, and names are interned); see docs/viewers.md.

mod cpu;
mod gpu;
mod lanes;
pub mod proto;
mod writer;

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::path::Path;

use crate::analysis::{align_clocks, ClockAlignment, RooflineCeilings};
use gpuscope_trace::{Profile, TimingMode};
use proto::{CounterDescriptor, ProcessDescriptor, TrackDescriptor, UNIT_COUNT};
use writer::{Value, Writer};

/// Track ids (`TrackDescriptor.uuid`).
pub const PROCESS_TRACK: u64 = 1;
pub const GPU_TRACK: u64 = 2;
/// Thread `i` of [`Profile::threads`] is track `THREAD_TRACK_BASE + i`.
pub const THREAD_TRACK_BASE: u64 = 0x1000;
/// Lane `k` of thread `i` (spans that overlap without nesting) is track
/// `OVERLAP_TRACK_BASE + (i << 8) + k`; lane `k` of the GPU queue is
/// `GPU_OVERLAP_TRACK_BASE + k`.
pub const OVERLAP_TRACK_BASE: u64 = 0x10_0000;
pub const GPU_OVERLAP_TRACK_BASE: u64 = 0x20_0000;
/// GPU queue `i ≥ 1` of [`Profile::gpu_tracks`] is track `GPU_QUEUE_TRACK_BASE + i`; its
/// overlap lanes start at `GPU_OVERLAP_TRACK_BASE + (i << 8)`.
pub const GPU_QUEUE_TRACK_BASE: u64 = 0x30_0000;

/// The track ids of one GPU queue.
#[derive(Debug, Clone, Copy)]
pub struct GpuTrackIds {
    /// Its index in [`Profile::gpu_tracks`] (0 with one queue).
    pub index: u32,
    pub uuid: u64,
    pub overlap_base: u64,
}

impl GpuTrackIds {
    fn of(index: u32) -> GpuTrackIds {
        GpuTrackIds {
            index,
            uuid: if index == 0 {
                GPU_TRACK
            } else {
                GPU_QUEUE_TRACK_BASE + u64::from(index)
            },
            overlap_base: GPU_OVERLAP_TRACK_BASE + (u64::from(index) << 8),
        }
    }
}
pub const COUNTER_TOK_PER_S: u64 = 0x2000;
pub const COUNTER_DISPATCH_GBPS: u64 = 0x2001;
pub const COUNTER_DISPATCHES: u64 = 0x2002;
pub const COUNTER_SYNCS: u64 = 0x2003;
/// The process id the trace gives gpuscope's run.
const PID: i32 = 1;

/// Where the GPU track's timestamps come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GpuClock {
    /// Mapped onto the CPU clock.
    Aligned(ClockAlignment),
    /// The GPU's own clock (the CPU tracks may not line up): why.
    Unaligned(String),
    /// No GPU timestamps (timing off, or none valid).
    None,
}

/// What a written trace holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PerfettoSummary {
    pub packets: u64,
    pub bytes: u64,
    pub cpu_slices: u64,
    pub gpu_slices: u64,
    pub flows: u64,
    pub counter_samples: u64,
    pub clock: GpuClock,
}

/// The constant that maps both clocks onto the trace's (non-negative) timestamps.
#[derive(Debug, Clone, Copy)]
struct Clock {
    gpu_offset_ns: i64,
    cpu_shift_ns: u64,
}

impl Clock {
    fn cpu(&self, ns: u64) -> u64 {
        ns + self.cpu_shift_ns
    }

    fn gpu(&self, ns: u64) -> u64 {
        (ns as i64 + self.gpu_offset_ns).max(0) as u64
    }
}

/// Writes `p` as a Perfetto trace to `out`. `ceilings` (the analysis's
/// [`crate::analysis::Roofline::ceilings`]) give each dispatch its % of ceiling.
pub fn write_perfetto<W: Write>(
    p: &Profile,
    ceilings: Option<&RooflineCeilings>,
    out: W,
) -> std::io::Result<PerfettoSummary> {
    let mut w = Writer::new(out);
    // Each GPU queue's clock is aligned to the CPU's on its own: devices count time on
    // clocks of their own.
    let queues = p.gpu_tracks.len().max(1) as u32;
    let clocks: Vec<GpuClock> = if queues == 1 {
        vec![gpu_clock(p)]
    } else {
        (0..queues)
            .map(|q| gpu_clock(&queue_profile(p, q)))
            .collect()
    };
    let offsets: Vec<i64> = clocks
        .iter()
        .map(|c| match c {
            GpuClock::Aligned(a) => a.offset_ns,
            _ => 0,
        })
        .collect();
    // GPU times count from 0; CPU times too: only a negative offset needs a shift.
    let shift = offsets.iter().map(|o| (-o).max(0)).max().unwrap_or(0);
    let clock_of = |q: usize| Clock {
        gpu_offset_ns: offsets[q] + shift,
        cpu_shift_ns: shift as u64,
    };
    declare_tracks(&mut w, p, &clocks)?;
    let submitted: HashSet<u32> = cpu::submitted_tokens(p);
    let mut gpu = gpu::write(
        &mut w,
        p,
        ceilings,
        clock_of(0),
        &submitted,
        GpuTrackIds::of(0),
    )?;
    for q in 1..queues {
        let more = gpu::write(
            &mut w,
            p,
            ceilings,
            clock_of(q as usize),
            &submitted,
            GpuTrackIds::of(q),
        )?;
        gpu.slices += more.slices;
        gpu.flows += more.flows;
        gpu.counter_samples += more.counter_samples;
        gpu.tokens_with_slices.extend(more.tokens_with_slices);
        gpu.token_start.extend(more.token_start);
    }
    let clock = clock_of(0);
    let cpu = cpu::write(&mut w, p, clock, &gpu.tokens_with_slices)?;
    let token_samples = token_counters(&mut w, p, clock, &cpu.token_start, &gpu.token_start)?;
    let summary = PerfettoSummary {
        packets: w.packets,
        bytes: w.bytes,
        cpu_slices: cpu.slices,
        gpu_slices: gpu.slices,
        flows: gpu.flows,
        counter_samples: gpu.counter_samples + token_samples,
        clock: clocks.into_iter().next().unwrap_or(GpuClock::None),
    };
    w.into_inner().flush()?;
    Ok(summary)
}

/// Writes the trace to `path` atomically (a temporary file renamed over it), streaming.
pub fn save_perfetto(
    path: &Path,
    p: &Profile,
    ceilings: Option<&RooflineCeilings>,
) -> std::io::Result<PerfettoSummary> {
    gpuscope_trace::atomic::write_atomic_with(path, |f| {
        write_perfetto(p, ceilings, std::io::BufWriter::with_capacity(1 << 20, f))
    })
    .map_err(std::io::Error::from)
}

fn gpu_clock(p: &Profile) -> GpuClock {
    let any_gpu = p.dispatches.iter().any(|d| d.valid_gpu_ns().is_some())
        || p.passes.iter().any(|s| s.valid_gpu_ns().is_some());
    if !any_gpu {
        return GpuClock::None;
    }
    if p.cpu_spans.is_empty() {
        return GpuClock::Unaligned("the profile has no CPU spans".into());
    }
    match align_clocks(p) {
        Ok(a) => GpuClock::Aligned(a),
        Err(e) => GpuClock::Unaligned(e.to_string()),
    }
}

/// The steps of GPU queue `q` alone, with their events and CPU spans (for its clock).
fn queue_profile(p: &Profile, q: u32) -> Profile {
    let tokens: HashSet<u32> = p
        .tokens
        .iter()
        .filter(|t| t.gpu_track == q)
        .map(|t| t.index)
        .collect();
    Profile {
        tokens: p
            .tokens
            .iter()
            .filter(|t| t.gpu_track == q)
            .cloned()
            .collect(),
        dispatches: p
            .dispatches
            .iter()
            .filter(|d| tokens.contains(&d.token))
            .cloned()
            .collect(),
        passes: p
            .passes
            .iter()
            .filter(|s| tokens.contains(&s.token))
            .cloned()
            .collect(),
        cpu_spans: p
            .cpu_spans
            .iter()
            .filter(|s| s.token.is_some_and(|t| tokens.contains(&t)))
            .cloned()
            .collect(),
        ..Profile {
            format: p.format,
            timing: p.timing.clone(),
            ..Default::default()
        }
    }
}

fn declare_tracks<W: Write>(
    w: &mut Writer<W>,
    p: &Profile,
    clocks: &[GpuClock],
) -> std::io::Result<()> {
    w.track(TrackDescriptor {
        uuid: Some(PROCESS_TRACK),
        process: Some(ProcessDescriptor {
            pid: Some(PID),
            process_name: Some(format!(
                "gpuscope: {} on {}",
                p.workload.name, p.adapter.name
            )),
        }),
        child_ordering: Some(proto::CHILD_ORDERING_EXPLICIT),
        ..Default::default()
    })?;
    for (q, clock) in clocks.iter().enumerate() {
        let mut name = gpu_track_name(p, clock);
        if let Some(queue) = p.gpu_tracks.get(q) {
            // The queue's label names its own device: not the profile's adapter (the
            // first device), which every queue's name would otherwise carry.
            let generic = format!("GPU queue ({})", p.adapter.name);
            name = name.replacen(&generic, &format!("GPU {queue}"), 1);
        }
        w.track(TrackDescriptor {
            uuid: Some(GpuTrackIds::of(q as u32).uuid),
            parent_uuid: Some(PROCESS_TRACK),
            name: Some(name),
            sibling_order_rank: Some(q as i32 * 16),
            ..Default::default()
        })?;
    }
    let counters = [
        (COUNTER_TOK_PER_S, "tok/s (per token)", "tok/s"),
        (COUNTER_DISPATCH_GBPS, "GB/s (per dispatch)", "GB/s"),
        (COUNTER_DISPATCHES, "dispatches per token", ""),
        (COUNTER_SYNCS, "syncs per token", ""),
    ];
    for (rank, (uuid, name, unit)) in counters.into_iter().enumerate() {
        w.track(TrackDescriptor {
            uuid: Some(uuid),
            parent_uuid: Some(PROCESS_TRACK),
            name: Some(name.into()),
            counter: Some(CounterDescriptor {
                unit: unit.is_empty().then_some(UNIT_COUNT),
                unit_name: (!unit.is_empty()).then(|| unit.into()),
            }),
            sibling_order_rank: Some(100 + rank as i32),
            ..Default::default()
        })?;
    }
    for (i, name) in cpu::thread_names(p).into_iter().enumerate() {
        w.track(TrackDescriptor {
            uuid: Some(THREAD_TRACK_BASE + i as u64),
            // Grouped under the process by `pid` (Perfetto ignores a thread track's
            // parent).
            thread: Some(proto::ThreadDescriptor {
                pid: Some(PID),
                tid: Some(i as i32 + 2),
                thread_name: Some(name),
            }),
            sibling_order_rank: Some(200 + i as i32),
            ..Default::default()
        })?;
    }
    Ok(())
}

/// The GPU track's name says what it cannot show.
pub fn gpu_track_name(p: &Profile, clock: &GpuClock) -> String {
    let mut name = format!("GPU queue ({})", p.adapter.name);
    match p.timing.mode {
        TimingMode::Off => name.push_str(": timing off, no GPU timestamps"),
        TimingMode::Pass => name.push_str(": timing pass, passes timed, dispatches not"),
        TimingMode::Dispatch => {
            if let Some(s) = p.timing.sampling.as_ref().filter(|s| s.stride > 1) {
                name.push_str(&format!(": 1 in {} dispatches timed", s.stride));
            }
        }
    }
    match clock {
        GpuClock::Unaligned(why) => {
            name.push_str(&format!(" [GPU clock, not aligned to the CPU: {why}]"))
        }
        GpuClock::None if p.timing.mode != TimingMode::Off => {
            name.push_str(" [no valid GPU timestamps]")
        }
        _ => {}
    }
    name
}

/// tok/s, dispatches and syncs per token, each at the token's start: its CPU `step`
/// (else first CPU span), else its first GPU slice, else the wall times summed.
fn token_counters<W: Write>(
    w: &mut Writer<W>,
    p: &Profile,
    clock: Clock,
    cpu_start: &HashMap<u32, u64>,
    gpu_start: &HashMap<u32, u64>,
) -> std::io::Result<u64> {
    let mut back_to_back = clock.cpu(0);
    let mut samples = 0;
    for t in &p.tokens {
        let ts = cpu_start
            .get(&t.index)
            .or_else(|| gpu_start.get(&t.index))
            .copied()
            .unwrap_or(back_to_back);
        back_to_back = ts.saturating_add(t.wall_ns);
        if let Some(r) = crate::analysis::tokens::rate_per_s(t.wall_ns) {
            w.counter(ts, COUNTER_TOK_PER_S, Value::Double(r))?;
            samples += 1;
        }
        w.counter(
            ts,
            COUNTER_DISPATCHES,
            Value::Int(t.counters.dispatches as i64),
        )?;
        w.counter(ts, COUNTER_SYNCS, Value::Int(t.counters.syncs as i64))?;
        samples += 2;
    }
    Ok(samples)
}

/// The flow from token `t`'s submit to its first GPU slice.
fn flow_id(token: u32) -> u64 {
    token as u64 + 1
}
