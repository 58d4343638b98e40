//! Steps: the program's own grouping of GPU work (a decoded token, a frame, a batch).
//!
//! A step is a CPU bracket, [`crate::Recorder::begin_step`] to
//! [`crate::Recorder::end_step`]; the passes, dispatches, submits and uploads inside it
//! belong to it. Its timestamps are resolved with its last submit and read back
//! asynchronously: nothing waits for them until the program (or the profile) asks.
//!
//! Wall time of a step is the time it added to the run: from the later of its begin and
//! the previous step's completion to its own completion. For a step begun with
//! [`crate::Recorder::begin_step`], completion is the end of its bracket (a program that
//! waits for each step inside its bracket); the step is closed once its timestamps are
//! in. A pipelined program, whose step N+1 begins before it has N's results, begins its
//! steps with [`crate::Recorder::begin_step_with`] and calls
//! [`crate::Recorder::step_finished`] after its readback: completion is then that call,
//! and [`crate::Recorder::step_result`] hands the step's measurements back.

use std::time::Instant;

use gpuscope_trace::capture::BufferRange;
use gpuscope_trace::{Counters, CpuTimes, GpuSpan, TimestampIssue};

use crate::names::Name;
use crate::timing::{Queries, Timed};

/// The bytes a dispatch must move and the FLOPs it must do, as the program declares
/// them (they feed achieved GB/s, GFLOP/s and the roofline).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    pub bytes: u64,
    pub flops: u64,
}

impl Cost {
    /// A matrix product `[m, k] x [k, n]` of `elem_bytes`-wide elements: each input read
    /// once and the output written once; 2·m·k·n FLOPs.
    pub fn matmul(m: u32, k: u32, n: u32, elem_bytes: u32) -> Cost {
        let (m, k, n) = (m as u64, k as u64, n as u64);
        Cost {
            bytes: elem_bytes as u64 * (m * k + k * n + m * n),
            flops: 2 * m * k * n,
        }
    }

    /// This cost `n` times over (a batched kernel's, one row's cost per row).
    pub fn times(self, n: u64) -> Cost {
        Cost {
            bytes: self.bytes * n,
            flops: self.flops * n,
        }
    }
}

/// Identifies a step of one recorder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StepId(pub u32);

/// What one dispatch of one step measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct DispatchSample {
    /// The cost the dispatch declared.
    pub cost: Cost,
    pub cpu_encode_ns: u64,
    pub gpu: Option<GpuSpan>,
    pub issue: Option<TimestampIssue>,
}

/// What one pass of one step measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct PassSample {
    pub gpu: Option<GpuSpan>,
    pub issue: Option<TimestampIssue>,
}

/// A finished step's measurements, for programs that want them as they come (the
/// profile has them too).
#[derive(Debug, Clone, Default)]
pub struct StepResult {
    pub wall_ns: u64,
    /// Sum of the valid pass spans; `None` with timing off, sampled, or no valid span.
    pub gpu_busy_ns: Option<u64>,
    pub cpu: CpuTimes,
    pub counters: Counters,
    pub dispatches: Vec<DispatchSample>,
    pub passes: Vec<PassSample>,
}

/// One recorded dispatch; ids only, so recording it allocates nothing.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DispatchRec {
    pub(crate) pass: u32,
    /// Registry index; `u32::MAX` for a pipeline the recorder never saw.
    pub(crate) pipeline: u32,
    /// Bind group registry index per group index; `u32::MAX` when unset or unknown.
    pub(crate) groups: [u32; crate::MAX_BIND_GROUPS],
    pub(crate) workgroups: [u32; 3],
    pub(crate) indirect: bool,
    pub(crate) op: Name,
    pub(crate) label: Name,
    pub(crate) layer: Option<u32>,
    pub(crate) cost: Cost,
    pub(crate) cpu_encode_ns: u64,
    pub(crate) queries: Option<Queries>,
}

#[derive(Debug, Clone)]
pub(crate) struct PassRec {
    pub(crate) name: Name,
    pub(crate) layer: Option<u32>,
    pub(crate) first_dispatch: u32,
    pub(crate) dispatches: u32,
    pub(crate) queries: Option<Queries>,
}

/// One upload (`write_buffer`) of a step, kept only while a capture is recording.
#[derive(Debug, Clone)]
pub(crate) struct UploadRec {
    pub(crate) buffer: u64,
    pub(crate) offset: u64,
    pub(crate) data: Vec<u8>,
}

/// What a token decoder's step decoded ([`crate::Recorder::set_step_token`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StepToken {
    pub(crate) position: u32,
    pub(crate) token_id: u32,
}

/// A step from its begin until its results are taken.
pub(crate) struct StepRec {
    pub(crate) id: u32,
    pub(crate) name: Option<String>,
    /// For token decoders: the position decoded and the token produced.
    pub(crate) token: Option<StepToken>,
    pub(crate) recorded: bool,
    /// The program will take the result with `step_result` (kept until then).
    pub(crate) keep_result: bool,
    pub(crate) begin: Instant,
    pub(crate) first_submit: Option<Instant>,
    pub(crate) ended: Option<Instant>,
    pub(crate) finished: Option<Instant>,
    pub(crate) cpu: CpuTimes,
    pub(crate) counters: Counters,
    pub(crate) dispatches: Vec<DispatchRec>,
    pub(crate) passes: Vec<PassRec>,
    /// Timestamp slot and queries used in it; `resolved` queries are already resolved.
    pub(crate) slot: Option<usize>,
    pub(crate) queries: u32,
    pub(crate) resolved: u32,
    pub(crate) mapped: Option<std::sync::mpsc::Receiver<Result<(), wgpu::BufferAsyncError>>>,
    /// The step's timestamp ticks once read back.
    pub(crate) readback_ticks: Option<Vec<u64>>,
    pub(crate) uploads: Vec<UploadRec>,
    /// Ranges copied into mappable buffers (the program's readbacks).
    pub(crate) readbacks: Vec<BufferRange>,
}

impl StepRec {
    pub(crate) fn new(id: u32, name: Option<String>, recorded: bool) -> StepRec {
        StepRec {
            id,
            name,
            token: None,
            recorded,
            keep_result: false,
            begin: Instant::now(),
            first_submit: None,
            ended: None,
            finished: None,
            cpu: CpuTimes::default(),
            counters: Counters::default(),
            dispatches: Vec::new(),
            passes: Vec::new(),
            slot: None,
            queries: 0,
            resolved: 0,
            mapped: None,
            readback_ticks: None,
            uploads: Vec::new(),
            readbacks: Vec::new(),
        }
    }
}

/// A step whose timestamps are decoded and wall time known.
pub(crate) struct DoneStep {
    pub(crate) rec: StepRec,
    pub(crate) wall_ns: u64,
    pub(crate) gpu_busy_ns: Option<u64>,
    pub(crate) pass_times: Vec<Timed>,
    pub(crate) dispatch_times: Vec<Timed>,
}

impl DoneStep {
    pub(crate) fn result(&self) -> StepResult {
        StepResult {
            wall_ns: self.wall_ns,
            gpu_busy_ns: self.gpu_busy_ns,
            cpu: self.rec.cpu,
            counters: self.rec.counters,
            dispatches: self
                .rec
                .dispatches
                .iter()
                .zip(&self.dispatch_times)
                .map(|(d, t)| DispatchSample {
                    cost: d.cost,
                    cpu_encode_ns: d.cpu_encode_ns,
                    gpu: t.gpu,
                    issue: t.issue,
                })
                .collect(),
            passes: self
                .pass_times
                .iter()
                .map(|t| PassSample {
                    gpu: t.gpu,
                    issue: t.issue,
                })
                .collect(),
        }
    }
}
