//! The profile: everything one `gpuscope profile` run measured, as plain data.
//!
//! # Format changelog
//!
//! - 1.0: first version: adapter, timing mode, workload, setup counters, per-token
//!   records with counters, per-dispatch and per-pass events.
//! - 1.1: `TokenRecord::cpu`, the token's CPU time by phase (absent in 1.0: zeros).
//! - 1.2: `Profile::prompt`, prompt processing before the recorded tokens (optional).
//! - 1.3: optional additions, all absent or empty in older files: `Profile::commit`
//!   (the build's commit), `Profile::incomplete` (why a run stopped early),
//!   `Profile::cpu_spans` and `Profile::threads` (CPU activity on one clock with the
//!   tokens), `Profile::buffers` (GPU memory by kind), `Profile::instrumentation`
//!   (what a recorder saw and did not see), `Profile::notes`, `TokenRecord::name` (a
//!   step's label in programs that are not token decoders), `TimingInfo::sampling`
//!   (timestamps on a subset of dispatches) and `WorkloadDesc::settings` (kernel
//!   variants, fusions and other choices that change what runs).
//!   Also in 1.3: `Profile::ceilings` (the measured ceilings the run was held against,
//!   see [`crate::ceilings`]), `Profile::graph` (each dispatch's buffer bindings, once
//!   per token graph, see [`crate::graph`]) and `Profile::warmup_tokens` (tokens decoded
//!   and discarded before the recorded ones). A CPU span named `cpu_fallback` marks
//!   work done on the CPU on the GPU path (its detail names the op).
//! - 1.4: `Overhead::off_wall_ns` (every token of the run with timing off);
//!   `TokenRecord::other_counters` (counters beyond [`Counters`], e.g. the Vulkan
//!   layer's barriers by kind, copies and allocations); profiles made by the Vulkan layer
//!   (`gpuscope attach`) name their source in `workload.settings.source`.
//! - 1.5: `Profile::gpu_tracks` and `TokenRecord::gpu_track`: a program that works on
//!   several GPUs or queues (llama.cpp split over two devices under `attach`) has one
//!   GPU track per queue; each step is on one of them.
//! - 1.6: `PromptRecord::ops`: the prompt's GPU time per op (prompt processing's kernels,
//!   from the same timestamps as the tokens').
//! - 1.7: `PromptOp::label`: the prompt's ops by place in the layer too (one kernel's
//!   q/k/v, output, gate/up and down products apart).
//!
//! A reader accepts any file with the same major version (newer minors may add fields,
//! which older readers ignore) and refuses another major with a message naming both.

use crate::name::Name;
use serde::{Deserialize, Serialize};

use crate::counters::Counters;
use crate::FormatVersion;

/// The profile format this build writes.
pub const PROFILE_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 7 };

/// One profiling run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Profile {
    /// Always [`PROFILE_FORMAT`] when written by this build.
    pub format: FormatVersion,
    /// The tool and version that wrote the profile, e.g. `gpuscope 0.1.0`.
    pub tool: String,
    pub adapter: AdapterDesc,
    pub timing: TimingInfo,
    pub workload: WorkloadDesc,
    /// Counters of everything before the first token: weight upload, pipelines, buffers.
    pub setup: Counters,
    /// Setup wall time (weights made or loaded and uploaded, graph built).
    pub setup_wall_ns: u64,
    /// One record per decoded token, in order.
    pub tokens: Vec<TokenRecord>,
    /// One event per dispatch of every token, in submission order.
    pub dispatches: Vec<DispatchEvent>,
    /// One event per compute pass of every token.
    pub passes: Vec<PassEvent>,
    /// The measured cost of the timing mode (filled by `--overhead`).
    pub overhead: Option<Overhead>,
    /// Prompt processing done before the recorded tokens, which continue from its KV
    /// cache (format 1.2; absent in older files and when no prompt was given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<PromptRecord>,
    /// The commit gpuscope was built from (`git describe`), when known (format 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Set when the run stopped before doing all it was asked to (an interrupt, a
    /// device loss, an error): why, in one line. Everything recorded before is kept
    /// (format 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
    /// Names of the CPU threads that [`CpuSpan::thread`] indexes (format 1.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<String>,
    /// Names of the GPU queues [`TokenRecord::gpu_track`] indexes, e.g. `device 1
    /// (NVIDIA H100 80GB HBM3) queue 0`; empty for one queue (format 1.5). Each GPU
    /// track has its own timestamp clock.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_tracks: Vec<String>,
    /// CPU activity of the run (setup creations, per-token upload, encode, submit,
    /// wait, readback), on the run's CPU clock (format 1.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_spans: Vec<CpuSpan>,
    /// Every GPU buffer the run created, with its kind, size and when (format 1.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub buffers: Vec<BufferRecord>,
    /// What the recorder saw of the program's GPU work (format 1.3; absent: all of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instrumentation: Option<Instrumentation>,
    /// Remarks about how the run was measured, e.g. a feature the device lacked and
    /// what that cost (format 1.3).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The measured ceilings (`gpuscope peak`) of the device the run used, when cached
    /// there at the time (format 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings: Option<crate::ceilings::Ceilings>,
    /// The buffers each dispatch of the token graph binds, in dispatch order (format
    /// 1.3): what fusion analysis needs, stored once rather than per event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<crate::graph::GraphDesc>,
    /// Tokens decoded and discarded before the recorded ones (format 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_tokens: Option<u32>,
}

/// A span of CPU time on one thread. Times are nanoseconds since the run's CPU origin
/// (the recorder's creation), the clock that [`CpuSpan`]s of every thread share.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuSpan {
    /// What the thread did: `step` (a token's whole bracket), `upload`, `encode`,
    /// `submit`, `wait`, `readback`, `create_buffer`, `create_bind_group`,
    /// `create_pipeline`, `create_shader_module`, ...; `cpu_fallback` for an op done
    /// on the CPU on the GPU path (detail: the op's label and why), which the
    /// checklist reports.
    pub name: String,
    /// Index into [`Profile::threads`].
    pub thread: u32,
    /// The token (step) the span belongs to; `None` for setup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<u32>,
    pub start_ns: u64,
    pub end_ns: u64,
    /// A detail such as the buffer's label, when there is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a GPU buffer holds, for the memory view.
/// `workload.settings.source` of a profile the Vulkan layer made.
pub const SOURCE_VULKAN_LAYER: &str = "vulkan layer (gpuscope attach)";

impl Profile {
    /// Whether the Vulkan layer made this profile inside a program gpuscope did not build
    /// (whose steps follow that program's rules, not gpuscope's engine's).
    pub fn is_attached(&self) -> bool {
        self.workload.settings.get("source").map(String::as_str) == Some(SOURCE_VULKAN_LAYER)
    }
}

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum MemoryKind {
    Weights,
    KvCache,
    Activations,
    /// Host-readable buffers the results come back through.
    Staging,
    /// Query resolve buffers and the like: what profiling itself holds.
    Timestamps,
    /// Uniforms, step parameters, anything else.
    #[default]
    Other,
}

impl MemoryKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MemoryKind::Weights => "weights",
            MemoryKind::KvCache => "kv_cache",
            MemoryKind::Activations => "activations",
            MemoryKind::Staging => "staging",
            MemoryKind::Timestamps => "timestamps",
            MemoryKind::Other => "other",
        }
    }
}

/// One GPU buffer the run created.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferRecord {
    pub label: String,
    pub kind: MemoryKind,
    pub bytes: u64,
    /// The token during which it was created; `None` during setup.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_token: Option<u32>,
    /// The token during which it was destroyed; `None` if it lived to the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dropped_token: Option<u32>,
}

/// What the recorder saw of a program's GPU work, and what it did not.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instrumentation {
    /// Compute passes recorded through the instrumented pass.
    pub instrumented_passes: u64,
    /// Compute passes the program opened without the wrapper (seen, not timed).
    pub uninstrumented_passes: u64,
    /// Command buffers submitted through the recorder that it did not encode.
    pub uninstrumented_command_buffers: u64,
    /// Dispatches encoded while no step was open (counted, not attributed).
    pub dispatches_outside_steps: u64,
}

impl Instrumentation {
    /// Whether some GPU work went past the recorder.
    pub fn is_partial(&self) -> bool {
        self.uninstrumented_passes > 0
            || self.uninstrumented_command_buffers > 0
            || self.dispatches_outside_steps > 0
    }
}

/// The prompt fed before the recorded (generated) tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptRecord {
    pub tokens: u32,
    /// CPU wall time from the first prompt token's upload to the last one's readback.
    pub wall_ns: u64,
    /// How it was processed, e.g. "one token per step".
    pub method: String,
    /// Batched prefill's dispatches by op, over every submit of the prompt, largest GPU
    /// time first; empty where the prompt went through decode steps (or before 1.6).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ops: Vec<PromptOp>,
}

/// One op of the prompt's batched prefill at one place in the layers: its dispatches
/// over every submit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PromptOp {
    /// Kernel family, as dispatch events name it (e.g. `gemm_coopmat_q4_0`).
    pub op: String,
    /// What the dispatches compute: their graph label less the layer (`attn_qkv` for
    /// `L3.attn_qkv`), so that one kernel's matrices are told apart; empty for dispatches
    /// outside the layers and in profiles from before 1.7.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub label: String,
    pub calls: u32,
    /// Calls with a valid GPU span (all with dispatch timing; some or none sampled or
    /// off).
    pub timed_calls: u32,
    /// Sum of the timed calls' GPU spans (each span includes what its timestamps cost).
    pub gpu_ns: u64,
}

impl PromptOp {
    /// The op and its label, as the reports name the row.
    pub fn name(&self) -> String {
        match self.label.as_str() {
            "" => self.op.clone(),
            label => format!("{} {label}", self.op),
        }
    }

    /// The mean span of a timed call, in ns.
    pub fn mean_ns(&self) -> Option<f64> {
        (self.timed_calls > 0).then(|| self.gpu_ns as f64 / f64::from(self.timed_calls))
    }
}

/// The GPU adapter the run used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AdapterDesc {
    pub name: String,
    /// wgpu backend: `Vulkan`, `Metal`, `Dx12`, `Gl`.
    pub backend: String,
    /// `DiscreteGpu`, `IntegratedGpu`, `Cpu`, ...
    pub device_type: String,
    pub driver: String,
    pub driver_info: String,
    /// Features the run relied on, by wgpu name.
    pub features: Vec<String>,
    pub max_storage_buffer_binding_size: u64,
    pub max_buffer_size: u64,
}

/// How GPU time was measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum TimingMode {
    /// No GPU timing: wall-clock per token only.
    #[default]
    Off,
    /// GPU timestamps at the start and end of each compute pass (one pass per layer).
    Pass,
    /// GPU timestamps between dispatches inside passes: per-op times.
    Dispatch,
}

impl TimingMode {
    pub fn as_str(self) -> &'static str {
        match self {
            TimingMode::Off => "off",
            TimingMode::Pass => "pass",
            TimingMode::Dispatch => "dispatch",
        }
    }
}

impl std::fmt::Display for TimingMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The timing mode in use, and why it was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TimingInfo {
    pub mode: TimingMode,
    /// Human-readable reason, e.g. "TIMESTAMP_QUERY_INSIDE_PASSES offered".
    pub reason: String,
    /// Nanoseconds per timestamp tick as the queue reports it.
    pub timestamp_period_ns: f64,
    /// In `dispatch` mode: when only some dispatches were timed, which (format 1.3).
    /// A dispatch that was not sampled has no span and no timestamp issue.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
}

/// Per-dispatch timestamps on a subset of dispatches: dispatch `i` of token `t` is
/// timed when `(i + t + t / stride) % stride == 0`, so every dispatch is timed once in
/// each block of `stride` tokens and per-op shares converge over the run. The block's
/// shift (`t / stride`) moves each dispatch to a token of the other parity in the next
/// block: with an even stride, `(i + t) % stride` timed a dispatch on tokens of one
/// parity only, and with two tokens in flight odd and even tokens run differently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sampling {
    pub stride: u32,
}

impl Sampling {
    /// Whether dispatch `index` of token `token` carries timestamps.
    pub fn is_timed(&self, token: u32, index: u32) -> bool {
        let stride = self.stride as u64;
        stride <= 1 || (index as u64 + token as u64 + token as u64 / stride).is_multiple_of(stride)
    }
}

/// What was run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct WorkloadDesc {
    /// Model or preset name, e.g. `smollm2-135m (synthetic)`.
    pub name: String,
    pub architecture: String,
    /// Weight format of the matrices, e.g. `q4_1`.
    pub weights: String,
    pub params: u64,
    pub weight_bytes: u64,
    pub layers: u32,
    /// Dispatches per token as the decoder graph declares them.
    pub graph_dispatches_per_token: u32,
    /// Passes per token as the decoder graph declares them.
    pub graph_passes_per_token: u32,
    /// Choices that change what runs, by name: kernel variants, fusions, workgroup
    /// sizes, e.g. `fuse = "all"`, `gemv = "subgroup, 4 rows per workgroup"`. Reports
    /// print them and `diff` compares them (format 1.3).
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub settings: std::collections::BTreeMap<String, String>,
}

/// One decoded token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct TokenRecord {
    /// 0-based index of the token in the run.
    pub index: u32,
    /// KV-cache position the token was decoded at.
    pub position: u32,
    /// Token id the step produced (greedy argmax).
    pub token_id: u32,
    /// CPU wall time from the start of encoding to the readback's arrival.
    pub wall_ns: u64,
    /// GPU time covered by timestamps (sum of pass spans); `None` with timing off or
    /// when every span of the token was invalid.
    pub gpu_busy_ns: Option<u64>,
    pub counters: Counters,
    /// Where the token's CPU wall time went (format 1.1; zero in 1.0 files).
    #[serde(default)]
    pub cpu: CpuTimes,
    /// The step's label in programs whose steps are not tokens, e.g. `frame 12`
    /// (format 1.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Counters a source records beyond [`Counters`], by name (format 1.4): the Vulkan
    /// layer's `command_buffers`, `memory_barriers`, `buffer_barriers`,
    /// `image_barriers`, `copies`, `copy_bytes`, `fills`, `fill_bytes`, `updates`,
    /// `update_bytes`, `allocations`, `allocated_bytes`, `frees`, `descriptor_updates`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub other_counters: std::collections::BTreeMap<String, u64>,
    /// The GPU queue the step ran on, an index into [`Profile::gpu_tracks`] (format 1.5).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gpu_track: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// A token's CPU wall time by phase, in nanoseconds. `wait_ns` is the time blocked on
/// the GPU (the one sync); the rest is launch overhead.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuTimes {
    /// Queueing buffer writes (`queue.write_buffer`).
    pub upload_ns: u64,
    /// Recording the passes and finishing the command buffer (wgpu validates here).
    pub encode_ns: u64,
    /// `queue.submit`.
    pub submit_ns: u64,
    /// Waiting for the GPU and mapping the readback.
    pub wait_ns: u64,
}

impl CpuTimes {
    /// CPU time spent launching work (everything but waiting).
    pub fn launch_ns(&self) -> u64 {
        self.upload_ns + self.encode_ns + self.submit_ns
    }
}

/// A GPU time span in nanoseconds since the run's first timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuSpan {
    pub start_ns: u64,
    pub end_ns: u64,
}

impl GpuSpan {
    pub fn duration_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    /// The duration, or `None` when the end is before the start. Profiles read from
    /// files may hold such spans unflagged; analysis uses this so bad input never panics.
    pub fn checked_duration_ns(&self) -> Option<u64> {
        self.end_ns.checked_sub(self.start_ns)
    }
}

/// The duration of a span that analysis may use: present, not flagged with an issue,
/// and not ending before it starts.
pub fn valid_span_ns(gpu: Option<GpuSpan>, issue: Option<TimestampIssue>) -> Option<u64> {
    match (gpu, issue) {
        (Some(span), None) => span.checked_duration_ns(),
        _ => None,
    }
}

/// Why a GPU interval was left out of the statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TimestampIssue {
    /// A timestamp read back as zero (never written, or unsupported).
    Zero,
    /// The end is before the start.
    Negative,
    /// The start is before the end of the previous interval in the same pass.
    OutOfOrder,
}

/// One dispatch of one token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchEvent {
    pub token: u32,
    /// Index of the dispatch within its token.
    pub index: u32,
    /// Kernel family, e.g. `gemv_q4_1`.
    pub op: Name,
    /// Op plus place, e.g. `L12.ffn_up`.
    pub label: Name,
    pub layer: Option<u32>,
    /// Index of the pass within its token.
    pub pass: u32,
    /// Pipeline name: shader, entry point and override constants.
    pub pipeline: Name,
    pub workgroups: [u32; 3],
    /// Bytes the dispatch must read and write (declared by the op).
    pub bytes: u64,
    /// Floating-point operations the dispatch must do (declared by the op).
    pub flops: u64,
    /// CPU time spent encoding the dispatch.
    pub cpu_encode_ns: u64,
    /// GPU span, when timing is `dispatch` and the timestamps were sane.
    pub gpu: Option<GpuSpan>,
    pub timestamp_issue: Option<TimestampIssue>,
}

impl DispatchEvent {
    /// GPU time of the dispatch when its span is valid (see [`valid_span_ns`]).
    pub fn valid_gpu_ns(&self) -> Option<u64> {
        valid_span_ns(self.gpu, self.timestamp_issue)
    }
}

/// One compute pass of one token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassEvent {
    pub token: u32,
    pub index: u32,
    /// Section name, e.g. `embed`, `L3`, `head`.
    pub name: Name,
    pub layer: Option<u32>,
    pub dispatches: u32,
    pub gpu: Option<GpuSpan>,
    pub timestamp_issue: Option<TimestampIssue>,
}

impl PassEvent {
    /// GPU time of the pass when its span is valid (see [`valid_span_ns`]).
    pub fn valid_gpu_ns(&self) -> Option<u64> {
        valid_span_ns(self.gpu, self.timestamp_issue)
    }
}

/// Tokens per second in the profiled mode and with timing off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Overhead {
    pub mode: TimingMode,
    pub tok_per_s_profiled: f64,
    pub tok_per_s_off: f64,
    /// The wall time of each token of the run with timing off (format 1.4), so the
    /// report compares steady tokens with steady tokens, naming both counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_wall_ns: Vec<u64>,
}

impl Overhead {
    /// Throughput lost to profiling, in percent of the unprofiled rate.
    pub fn cost_percent(&self) -> f64 {
        if self.tok_per_s_off <= 0.0 {
            return 0.0;
        }
        (1.0 - self.tok_per_s_profiled / self.tok_per_s_off) * 100.0
    }
}
