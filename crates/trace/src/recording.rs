//! What gpuscope's Vulkan layer records inside a program it did not build
//! (`gpuscope attach -- PROGRAM`), and how that becomes a [`Profile`].
//!
//! A recording is a directory:
//!
//! | file | holds |
//! |---|---|
//! | `recording.jsonl` | one JSON [`Record`] per line: the header, then devices, shaders, pipelines, memory and steps as they happen, and `end` when the program closed its devices |
//! | `shaders/<hash>.spv` | every SPIR-V module the program created, named by its FNV-1a hash |
//!
//! The layer appends and flushes a line at every step, so a program killed mid-run
//! leaves every completed step readable; a recording without its `end` line becomes a
//! profile marked incomplete. Lines are read one at a time and each is checked against
//! what came before (a step naming an unknown pipeline is refused, with its line
//! number), so a damaged or hostile file gives an error, never a wrong profile.
//!
//! # Format changelog
//!
//! - 1.0: first version.
//!
//! A reader accepts any recording with the same major version and refuses another.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::counters::Counters;
use crate::name::Name;
use crate::profile::{
    AdapterDesc, BufferRecord, CpuSpan, DispatchEvent, GpuSpan, MemoryKind, PassEvent, Profile,
    TimestampIssue, TimingInfo, TimingMode, TokenRecord, WorkloadDesc, PROFILE_FORMAT,
};
use crate::FormatVersion;

mod tokens;

/// The recording format this build writes.
pub const RECORDING_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 0 };

/// The file of records inside a recording directory.
pub const RECORDS_FILE: &str = "recording.jsonl";
/// Written instead when the layer could not record (what went wrong, one line).
pub const ERROR_FILE: &str = "layer-error.txt";
/// The folder of SPIR-V modules inside a recording directory.
pub const SHADERS_DIR: &str = "shaders";

/// One line of `recording.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    Header(Header),
    Device(DeviceRecord),
    Queue(QueueRecord),
    Shader(ShaderRecord),
    Pipeline(PipelineRecord),
    Allocation(AllocationRecord),
    /// A debug-utils name given to an object after it was recorded.
    Name(NameRecord),
    Step(StepRecord),
    /// Something the layer could not do (a failed query read, a panic it caught): the
    /// program ran on; the profile's notes say what is missing.
    Problem {
        message: String,
    },
    /// The program destroyed its last device or exited normally.
    End {
        reason: String,
    },
}

/// The first line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    pub format: FormatVersion,
    /// The layer's build, e.g. `gpuscope-layer 0.1.0`.
    pub tool: String,
    /// The program's command line, as the layer saw it.
    pub program: Vec<String>,
    pub pid: u32,
    /// The timing mode the layer used (`off`, `pass` = per command buffer, `dispatch`).
    pub timing: TimingMode,
    /// In `dispatch` mode, 1 in `stride` dispatches is timed (1: every one).
    pub stride: u32,
    /// Why this mode (the user's choice, or the driver's cost for `auto`).
    pub timing_reason: String,
    /// `sync` (a step ends at each host wait) or `submit` (each submit is a step).
    pub step: String,
}

/// A device the program created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceRecord {
    pub id: u32,
    pub name: String,
    pub vendor_id: u32,
    pub device_id: u32,
    /// `DiscreteGpu`, `IntegratedGpu`, `Cpu`, ...
    pub device_type: String,
    pub driver_name: String,
    pub driver_info: String,
    pub api_version: String,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f64,
    /// `maxStorageBufferRange`: the largest storage buffer binding (0: not recorded).
    #[serde(default)]
    pub max_storage_buffer_range: u64,
    /// `maxBufferSize` (Vulkan 1.3's maintenance4; 0: not known).
    #[serde(default)]
    pub max_buffer_size: u64,
}

/// A queue the program got, with the device and family it belongs to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueRecord {
    pub id: u32,
    pub device: u32,
    pub family: u32,
    pub index: u32,
    /// The queue's debug-utils name, if the program gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Whether the family writes timestamps (`timestampValidBits` > 0).
    pub timestamps: bool,
}

/// A SPIR-V module.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShaderRecord {
    pub id: u32,
    pub device: u32,
    /// FNV-1a 64 of the SPIR-V words, hex: the file `shaders/<hash>.spv`.
    pub hash: String,
    pub bytes: u64,
    /// Compute entry points with their workgroup size, when the module declares it.
    pub entry_points: Vec<EntryPoint>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EntryPoint {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workgroup_size: Option<[u32; 3]>,
}

/// A compute pipeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineRecord {
    pub id: u32,
    pub device: u32,
    pub shader: u32,
    pub entry_point: String,
    /// Specialization constants: (constant id, value as raw bits).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub constants: Vec<(u32, u64)>,
    /// The workgroup size with the constants applied, when the module gives one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workgroup_size: Option<[u32; 3]>,
    /// The debug-utils name the program gave the pipeline (llama.cpp with
    /// `GGML_VK_DEBUG_MARKERS=1`: `mul_mat_vec_q4_0_f32_f32`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The step in progress when it was created (`None`: before the first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
}

/// A name a program gave an object with `vkSetDebugUtilsObjectNameEXT`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NameRecord {
    /// `pipeline`, `shader` or `queue`.
    pub kind: String,
    pub id: u32,
    pub name: String,
}

/// A memory allocation or free, and buffers created.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AllocationRecord {
    pub device: u32,
    /// The allocation's number on its device (an `alloc`, its `bind`s and its `free`
    /// share it).
    pub id: u64,
    pub bytes: u64,
    /// The memory type's index and its property flags (`device_local`, `host_visible`,
    /// ...).
    pub memory_type: u32,
    pub properties: String,
    /// `alloc` or `free`.
    pub event: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// What the buffers bound to it are for, when known (`storage`, `uniform`,
    /// `staging`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<String>,
}

/// The work between two host syncs on one queue (or one submit, with `--step submit`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StepRecord {
    pub index: u32,
    pub queue: u32,
    /// CPU time of the previous step's end (or the first submit) and of this step's
    /// sync returning, in ns since the layer loaded.
    pub cpu_start_ns: u64,
    pub cpu_end_ns: u64,
    /// What ended the step: `vkWaitForFences`, `vkQueueWaitIdle`, `submit`, ...
    pub ended_by: String,
    /// The command buffers executed, in submission order.
    pub command_buffers: Vec<CommandBufferRecord>,
    /// Every counter of the step by name (the [`Counters`] fields and the layer's own:
    /// `command_buffers`, `memory_barriers`, `buffer_barriers`, `image_barriers`,
    /// `copies`, `copy_bytes`, `fills`, `fill_bytes`, `updates`, `update_bytes`,
    /// `allocations`, `allocated_bytes`, `frees`, `descriptor_updates`).
    pub counters: BTreeMap<String, u64>,
    /// CPU spans of the step on the program's threads: `submit`, `wait`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cpu_spans: Vec<RecordedSpan>,
}

/// One execution of a command buffer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CommandBufferRecord {
    /// The command buffer's debug-utils name, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The submit it went in (index within the step) and the CPU time of that submit.
    pub submit: u32,
    /// GPU ticks at its start and end (`pass` timing), raw.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks: Option<(u64, u64)>,
    pub dispatches: Vec<DispatchRecord>,
}

/// One dispatch as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct DispatchRecord {
    pub pipeline: u32,
    /// The innermost debug-utils label open around it (`vkCmdBeginDebugUtilsLabelEXT`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// The label around that one, if any (llama.cpp opens the node's name, then the
    /// pipeline's name with its workgroups, around each dispatch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// Workgroups; `[0, 0, 0]` for an indirect dispatch (counts on the GPU).
    pub workgroups: [u32; 3],
    /// `direct`, `indirect` or `base`.
    pub kind: String,
    /// GPU ticks before and after it, when timed; `None` when not timed, `Some` with
    /// a zero when the result was unavailable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticks: Option<(u64, u64)>,
}

/// A CPU span on one of the program's threads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedSpan {
    pub name: String,
    /// The OS thread id.
    pub thread: u64,
    pub start_ns: u64,
    pub end_ns: u64,
}

/// A recording read back whole.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recording {
    pub header: Option<Header>,
    pub devices: Vec<DeviceRecord>,
    pub queues: Vec<QueueRecord>,
    pub shaders: Vec<ShaderRecord>,
    pub pipelines: Vec<PipelineRecord>,
    pub allocations: Vec<AllocationRecord>,
    pub steps: Vec<StepRecord>,
    pub problems: Vec<String>,
    /// Why it ended; `None`: the program stopped before closing its devices.
    pub end: Option<String>,
    /// A last line cut off (the program was killed while it was written).
    pub truncated: bool,
}

/// Why a recording cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordingError {
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: no record: the program never created a Vulkan device with the layer loaded", path.display())]
    Empty { path: PathBuf },
    #[error("{}:{line}: {message}", path.display())]
    Bad {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{}: recording format {found} is not readable by this build (it reads {supported})", path.display())]
    Version {
        path: PathBuf,
        found: FormatVersion,
        supported: FormatVersion,
    },
}

/// Whether `dir` holds a recording.
pub fn is_recording(dir: &Path) -> bool {
    dir.join(RECORDS_FILE).is_file()
}

/// Reads `dir/recording.jsonl` (see the module doc).
pub fn read_recording(dir: &Path) -> Result<Recording, RecordingError> {
    let path = dir.join(RECORDS_FILE);
    let file = std::fs::File::open(&path).map_err(|source| RecordingError::Read {
        path: path.clone(),
        source,
    })?;
    read_records(std::io::BufReader::new(file), &path)
}

/// Reads records line by line from `input`; errors name `path` and the line.
pub fn read_records(input: impl BufRead, path: &Path) -> Result<Recording, RecordingError> {
    let mut r = Recording::default();
    let mut lines = input.lines().enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let line = line.map_err(|source| RecordingError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let bad = |message: String| RecordingError::Bad {
            path: path.to_path_buf(),
            line: i + 1,
            message,
        };
        let record: Record = match serde_json::from_str(&line) {
            Ok(rec) => rec,
            // The last line of a killed program's recording may be cut off.
            Err(_) if lines.peek().is_none() && !line.ends_with('}') => {
                r.truncated = true;
                break;
            }
            Err(e) => return Err(bad(e.to_string())),
        };
        r.add(record).map_err(bad)?;
        if let Some(h) = &r.header {
            if h.format.major != RECORDING_FORMAT.major {
                return Err(RecordingError::Version {
                    path: path.to_path_buf(),
                    found: h.format,
                    supported: RECORDING_FORMAT,
                });
            }
        }
    }
    if r.header.is_none() {
        return Err(RecordingError::Empty {
            path: path.to_path_buf(),
        });
    }
    Ok(r)
}

impl Recording {
    /// Adds one record, checking it against those before it.
    pub fn add(&mut self, record: Record) -> Result<(), String> {
        let first = self.header.is_none();
        match record {
            Record::Header(h) if first => self.header = Some(h),
            Record::Header(_) => return Err("a second header".into()),
            _ if first => return Err("the first record is not the header".into()),
            Record::Device(d) => {
                expect_id(d.id, self.devices.len(), "device")?;
                self.devices.push(d);
            }
            Record::Queue(q) => {
                expect_id(q.id, self.queues.len(), "queue")?;
                expect_known(q.device, self.devices.len(), "device")?;
                self.queues.push(q);
            }
            Record::Shader(s) => {
                expect_id(s.id, self.shaders.len(), "shader")?;
                expect_known(s.device, self.devices.len(), "device")?;
                self.shaders.push(s);
            }
            Record::Pipeline(p) => {
                expect_id(p.id, self.pipelines.len(), "pipeline")?;
                expect_known(p.shader, self.shaders.len(), "shader")?;
                expect_known(p.device, self.devices.len(), "device")?;
                self.pipelines.push(p);
            }
            Record::Allocation(a) => {
                expect_known(a.device, self.devices.len(), "device")?;
                self.allocations.push(a);
            }
            Record::Step(s) => {
                expect_id(s.index, self.steps.len(), "step")?;
                expect_known(s.queue, self.queues.len(), "queue")?;
                for d in s.command_buffers.iter().flat_map(|c| &c.dispatches) {
                    expect_known(d.pipeline, self.pipelines.len(), "pipeline")?;
                }
                self.steps.push(s);
            }
            Record::Name(n) => {
                let name = Some(n.name);
                match n.kind.as_str() {
                    "pipeline" => {
                        expect_known(n.id, self.pipelines.len(), "pipeline")?;
                        self.pipelines[n.id as usize].name = name;
                    }
                    "shader" => {
                        expect_known(n.id, self.shaders.len(), "shader")?;
                        self.shaders[n.id as usize].name = name;
                    }
                    "queue" => {
                        expect_known(n.id, self.queues.len(), "queue")?;
                        self.queues[n.id as usize].name = name;
                    }
                    other => return Err(format!("a name for an unknown kind `{other}`")),
                }
            }
            Record::Problem { message } => self.problems.push(message),
            Record::End { reason } => self.end = Some(reason),
        }
        Ok(())
    }
}

fn expect_id(id: u32, next: usize, what: &str) -> Result<(), String> {
    if id as usize != next {
        return Err(format!("{what} {id} out of order (expected {next})"));
    }
    Ok(())
}

fn expect_known(id: u32, known: usize, what: &str) -> Result<(), String> {
    if id as usize >= known {
        return Err(format!("names {what} {id}, but only {known} were recorded"));
    }
    Ok(())
}

/// Op families: the kernel family a name belongs to, so that two engines' profiles can
/// be compared family by family (`diff --by family`). llama.cpp's Vulkan pipeline names
/// (`mul_mat_vec_q4_0_f32_f32`, `rms_norm_f32`, `soft_max_f32`, `rope_norm_f32`,
/// `flash_attn_f32_f16_D128`, ...) and gpuscope's own op names (`gemv_q4_0`,
/// `rms_norm`, `attention`, ...) land on the same families; a name that matches none
/// is its own family.
pub fn op_family(name: &str) -> String {
    // A fused kernel belongs to the family of its heaviest part: gpuscope's
    // `rms_norm+gemv_q4_0+rope` is a gemv, as llama.cpp's fused matmuls are.
    if name.contains('+') {
        let parts: Vec<String> = name.split('+').map(op_family).collect();
        let heavy = ["gemv", "gemm", "attention"];
        return parts
            .iter()
            .find(|f| heavy.iter().any(|h| f.starts_with(h)))
            .or(parts.first())
            .cloned()
            .unwrap_or_default();
    }
    let n = name.to_ascii_lowercase();
    let format = weight_format(&n);
    let with_format = |family: &str| match format {
        Some(f) => format!("{family}_{f}"),
        None => family.to_string(),
    };
    let has = |p: &str| n.contains(p);
    if n.starts_with("mul_mat_vec") || n.starts_with("gemv") || has("matvec") {
        return with_format("gemv");
    }
    if n.starts_with("mul_mat") || n.starts_with("matmul") || n.starts_with("gemm") {
        return with_format("gemm");
    }
    if n.starts_with("get_rows") || n.starts_with("embedding") || has("token_embd") {
        return with_format("embedding");
    }
    const FAMILIES: &[(&str, &str)] = &[
        ("rms_norm", "rms_norm"),
        // gpuscope's q/k norms (Qwen3, Gemma 3): an RMS norm of each head, which
        // llama.cpp runs as rms_norm.
        ("head_norm", "rms_norm"),
        ("soft_max", "softmax"),
        ("softmax", "softmax"),
        ("rope", "rope"),
        ("flash_attn", "attention"),
        ("attention", "attention"),
        ("attn", "attention"),
        ("silu", "silu_mul"),
        ("swiglu", "silu_mul"),
        ("geglu", "gelu_mul"),
        ("gelu", "gelu_mul"),
        ("argmax", "argmax"),
        ("cpy", "copy"),
        ("copy", "copy"),
        ("set_rows", "copy"),
        ("add", "add"),
        ("mul", "mul"),
        ("norm", "norm"),
    ];
    FAMILIES
        .iter()
        .find(|(prefix, _)| n.starts_with(prefix) || n.contains(&format!("_{prefix}")))
        .map_or_else(|| n.clone(), |(_, family)| family.to_string())
}

/// The weight format a kernel name mentions (`q4_0`, `q8_0`, `f16`, ...), quantized
/// formats first: `mul_mat_vec_q4_0_f32_f32` is q4_0 (its f32s are the activations).
fn weight_format(n: &str) -> Option<&'static str> {
    const FORMATS: &[&str] = &[
        "q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k", "q5_k", "q6_k", "iq4_nl",
        "bf16", "f16", "f32",
    ];
    let words: Vec<&str> = n.split('_').collect();
    let mut named: Vec<String> = words.iter().map(|w| w.to_string()).collect();
    named.extend(words.windows(2).map(|p| p.join("_")));
    FORMATS
        .iter()
        .copied()
        .find(|f| named.iter().any(|w| w == f))
}

impl Recording {
    /// The profile of this recording: each step a token, each command buffer a pass,
    /// each dispatch named by its debug label, else its pipeline's name, else its SPIR-V
    /// entry point with the module's short hash and workgroup size.
    pub fn to_profile(&self) -> Profile {
        // Equal names share one allocation (see `Name`).
        crate::name::Interner::scope(|| self.build_profile())
    }

    fn build_profile(&self) -> Profile {
        let header = self
            .header
            .clone()
            .expect("read_recording checks the header");
        let device = self.devices.first();
        let period = device.map_or(1.0, |d| d.timestamp_period_ns);
        let mut p = Profile {
            format: PROFILE_FORMAT,
            tool: header.tool.clone(),
            adapter: device.map(adapter_of).unwrap_or_default(),
            timing: TimingInfo {
                mode: header.timing,
                reason: header.timing_reason.clone(),
                timestamp_period_ns: period,
                sampling: (header.stride > 1).then_some(crate::profile::Sampling {
                    stride: header.stride,
                }),
            },
            workload: WorkloadDesc {
                name: program_name(&header.program),
                architecture: "unknown (attached)".into(),
                weights: "unknown".into(),
                ..Default::default()
            },
            ..Default::default()
        };
        p.workload
            .settings
            .insert("source".into(), crate::profile::SOURCE_VULKAN_LAYER.into());
        p.workload
            .settings
            .insert("command".into(), header.program.join(" "));
        p.workload
            .settings
            .insert("step".into(), header.step.clone());
        let names = self.dispatch_names();
        let origins = self.first_ticks();
        let steps = self.token_steps(&mut p);
        let tracks = gpu_tracks(&steps);
        if tracks.len() > 1 {
            p.gpu_tracks = tracks.iter().map(|&q| self.queue_name_of(q)).collect();
        }
        let mut threads: HashMap<u64, u32> = HashMap::new();
        for step in &steps {
            let device = self.device_of(step.queue);
            let origin = origins.get(&device).copied().unwrap_or(0);
            let track = tracks.iter().position(|&q| q == step.queue).unwrap_or(0) as u32;
            self.add_step(&mut p, step, &names, origin, &mut threads);
            if let Some(t) = p.tokens.last_mut() {
                t.gpu_track = track;
            }
        }
        // Each token's first step: a creation's step (the step in progress) names its token.
        let first_steps: Vec<u32> = steps.iter().map(|s| s.index).collect();
        p.buffers = self.memory_records(|step| tokens::token_of_step(&first_steps, step));
        let mut thread_ids: Vec<(u64, u32)> = threads.into_iter().collect();
        thread_ids.sort_by_key(|&(_, i)| i);
        p.threads = thread_ids
            .iter()
            .map(|(tid, _)| format!("thread {tid}"))
            .collect();
        describe_graph(&mut p);
        p.notes
            .extend(self.problems.iter().map(|m| format!("layer: {m}")));
        if self.devices.len() > 1 || self.queues.len() > 1 {
            p.notes.push(format!(
                "{} device(s), {} queue(s): steps of every queue are tokens in the order their syncs returned; `settings.queues` names them",
                self.devices.len(),
                self.queues.len()
            ));
            let queues: Vec<String> = self.queues.iter().map(|q| self.queue_name(q)).collect();
            p.workload
                .settings
                .insert("queues".into(), queues.join("; "));
        }
        if header.stride > 1 {
            // The sampled dispatches' spans summed are a fraction of a token's GPU time,
            // not its busy time: the report estimates that from every dispatch site.
            for t in &mut p.tokens {
                t.gpu_busy_ns = None;
            }
        }
        if self.end.is_none() {
            p.incomplete = Some(if self.truncated {
                "the program stopped while the layer was writing (its last record is cut off); the steps before it are kept".into()
            } else {
                "the program stopped before closing its Vulkan devices; the steps it completed are kept".into()
            });
        }
        p
    }

    /// Each memory allocation as a buffer record: labelled by its memory type and what
    /// the buffers bound to it are for; host-visible memory counts as staging. `token`
    /// gives the token of a step (a program that syncs twice a token has two steps a
    /// token).
    fn memory_records(&self, token: impl Fn(u32) -> u32) -> Vec<BufferRecord> {
        let mut out: Vec<BufferRecord> = Vec::new();
        let mut index: HashMap<(u32, u64), usize> = HashMap::new();
        for a in &self.allocations {
            let key = (a.device, a.id);
            match a.event.as_str() {
                "alloc" => {
                    index.insert(key, out.len());
                    let host = a.properties.contains("host_visible")
                        && !a.properties.contains("device_local");
                    out.push(BufferRecord {
                        label: format!("memory type {} ({})", a.memory_type, a.properties),
                        kind: if host {
                            MemoryKind::Staging
                        } else {
                            MemoryKind::Other
                        },
                        bytes: a.bytes,
                        created_token: a.step.map(&token).filter(|&t| t > 0),
                        dropped_token: None,
                    });
                }
                "bind" => {
                    if let (Some(&i), Some(usage)) = (index.get(&key), &a.usage) {
                        let b = &mut out[i];
                        if !b.label.contains(" for ") {
                            b.label.push_str(&format!(" for {usage}"));
                        } else if !b.label.contains(usage.as_str()) {
                            b.label.push_str(&format!(", {usage}"));
                        }
                    }
                }
                "free" => {
                    if let Some(&i) = index.get(&key) {
                        out[i].dropped_token = a.step.map(&token);
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn queue_name(&self, q: &QueueRecord) -> String {
        let device = self
            .devices
            .get(q.device as usize)
            .map_or("?", |d| d.name.as_str());
        match &q.name {
            Some(n) => format!("queue {} \"{n}\" of device {} ({device})", q.id, q.device),
            None => format!(
                "queue {} (family {}, index {}) of device {} ({device})",
                q.id, q.family, q.index, q.device
            ),
        }
    }

    /// Each pipeline's name and op: its debug name (the op its stem: gpuscope's
    /// `gemv_q4_0.dp4a.packed` is `gemv_q4_0`, llama.cpp's `mul_mat_vec_q4_0_f32_f32`
    /// itself), else `entry@hash WxHxD` (the op the same).
    fn dispatch_names(&self) -> Vec<(Name, Name)> {
        self.dispatch_name_strings()
            .into_iter()
            .map(|(pipeline, op)| (Name::interned(&pipeline), Name::interned(&op)))
            .collect()
    }

    fn dispatch_name_strings(&self) -> Vec<(String, String)> {
        self.pipelines
            .iter()
            .map(|pl| match &pl.name {
                Some(n) => {
                    let stem = n.split(['.', ':', ' ']).next().unwrap_or(n);
                    (n.clone(), stem.to_string())
                }
                None => {
                    let s = &self.shaders[pl.shader as usize];
                    let short: String = s.hash.chars().take(8).collect();
                    let wg = pl
                        .workgroup_size
                        .or_else(|| {
                            s.entry_points
                                .iter()
                                .find(|e| e.name == pl.entry_point)
                                .and_then(|e| e.workgroup_size)
                        })
                        .map(|[x, y, z]| format!(" {x}x{y}x{z}"))
                        .unwrap_or_default();
                    let consts = if pl.constants.is_empty() {
                        String::new()
                    } else {
                        let c: Vec<String> = pl
                            .constants
                            .iter()
                            .map(|(i, v)| format!("{i}={v}"))
                            .collect();
                        format!(" [{}]", c.join(","))
                    };
                    let name = format!("{}@{short}{wg}{consts}", pl.entry_point);
                    (name.clone(), name)
                }
            })
            .collect()
    }

    /// Each device's earliest timestamp tick (its GPU spans start from it: devices
    /// count ticks on clocks of their own).
    fn first_ticks(&self) -> HashMap<u32, u64> {
        let mut first: HashMap<u32, u64> = HashMap::new();
        for s in &self.steps {
            let device = self.device_of(s.queue);
            let ticks = s.command_buffers.iter().flat_map(|c| {
                c.ticks
                    .into_iter()
                    .chain(c.dispatches.iter().filter_map(|d| d.ticks))
            });
            for (a, _) in ticks.filter(|&(a, _)| a > 0) {
                let e = first.entry(device).or_insert(a);
                *e = (*e).min(a);
            }
        }
        first
    }

    /// The device a queue belongs to (0 for a queue not recorded).
    fn device_of(&self, queue: u32) -> u32 {
        self.queues.get(queue as usize).map_or(0, |q| q.device)
    }

    /// The steps as tokens: merged where the program syncs several times per token (on
    /// one device; with several, each step stays a token on its device's track).
    fn token_steps(&self, p: &mut Profile) -> Vec<std::borrow::Cow<'_, StepRecord>> {
        use std::borrow::Cow;
        let grouping = (self.devices.len() <= 1)
            .then(|| tokens::detect(&self.steps))
            .flatten();
        let Some(g) = grouping else {
            return self.steps.iter().map(Cow::Borrowed).collect();
        };
        p.notes.push(format!(
            "each token is {} of the program's steps: it synced {} times per token (the steps' dispatch counts repeat every {}); a token ends at the longest host gap between them",
            g.period, g.period, g.period
        ));
        p.workload
            .settings
            .insert("steps_per_token".into(), g.period.to_string());
        tokens::group(&self.steps, g)
            .into_iter()
            .map(|t| match t {
                [one] => Cow::Borrowed(one),
                many => Cow::Owned(tokens::merge(many)),
            })
            .collect()
    }

    fn queue_name_of(&self, queue: u32) -> String {
        self.queues
            .get(queue as usize)
            .map_or_else(|| format!("queue {queue}"), |q| self.queue_name(q))
    }

    fn add_step(
        &self,
        p: &mut Profile,
        step: &StepRecord,
        names: &[(Name, Name)],
        origin: u64,
        threads: &mut HashMap<u64, u32>,
    ) {
        let token = p.tokens.len() as u32;
        let period = self
            .queues
            .get(step.queue as usize)
            .and_then(|q| self.devices.get(q.device as usize))
            .map_or(1.0, |d| d.timestamp_period_ns);
        let clock = TickClock { origin, period };
        let busy = add_events(p, token, step, names, clock);
        let passes = p
            .passes
            .iter()
            .rev()
            .take_while(|s| s.token == token)
            .count();
        let dispatches = p
            .dispatches
            .iter()
            .rev()
            .take_while(|d| d.token == token)
            .count();
        let (counters, other_counters) = step_counters(step, dispatches as u64, passes as u64);
        p.tokens.push(TokenRecord {
            index: token,
            position: token,
            token_id: 0,
            wall_ns: step.cpu_end_ns.saturating_sub(step.cpu_start_ns),
            gpu_busy_ns: busy,
            counters,
            other_counters,
            name: Some(format!("step {} ({})", step.index, step.ended_by)),
            ..Default::default()
        });
        for s in &step.cpu_spans {
            let next = threads.len() as u32;
            let thread = *threads.entry(s.thread).or_insert(next);
            p.cpu_spans.push(CpuSpan {
                name: s.name.clone(),
                thread,
                token: Some(token),
                start_ns: s.start_ns,
                end_ns: s.end_ns.max(s.start_ns),
                detail: None,
            });
        }
    }
}

/// GPU ticks to the profile's nanoseconds since the recording's first timestamp.
#[derive(Clone, Copy)]
struct TickClock {
    origin: u64,
    period: f64,
}

impl TickClock {
    fn span(self, ticks: Option<(u64, u64)>) -> (Option<GpuSpan>, Option<TimestampIssue>) {
        let ns = |t: u64| (t.saturating_sub(self.origin) as f64 * self.period) as u64;
        match ticks {
            None => (None, None),
            Some((0, _)) | Some((_, 0)) => (None, Some(TimestampIssue::Zero)),
            Some((a, b)) if b < a => (None, Some(TimestampIssue::Negative)),
            Some((a, b)) => (
                Some(GpuSpan {
                    start_ns: ns(a),
                    end_ns: ns(b),
                }),
                None,
            ),
        }
    }
}

/// The step's command buffers with work as passes (wgpu, for one, submits empty ones of
/// its own around every submit) and their dispatches as events; returns the GPU time
/// they cover (command buffers' spans, else their dispatches').
fn add_events(
    p: &mut Profile,
    token: u32,
    step: &StepRecord,
    names: &[(Name, Name)],
    clock: TickClock,
) -> Option<u64> {
    let mut busy: Option<u64> = None;
    let mut add_busy = |g: Option<GpuSpan>| {
        if let Some(g) = g {
            let b = busy.get_or_insert(0);
            *b = b.saturating_add(g.duration_ns());
        }
    };
    let mut index = 0u32;
    let with_work = step
        .command_buffers
        .iter()
        .filter(|cb| !cb.dispatches.is_empty() || cb.ticks.is_some());
    for (pass, cb) in with_work.enumerate() {
        let (gpu, issue) = clock.span(cb.ticks);
        add_busy(gpu);
        p.passes.push(PassEvent {
            token,
            index: pass as u32,
            // Unnamed command buffers share one name: their number within a step says
            // nothing across steps (a program records as many as it likes).
            name: Name::interned(cb.name.as_deref().unwrap_or("command buffer")),
            layer: None,
            dispatches: cb.dispatches.len() as u32,
            gpu,
            timestamp_issue: issue,
        });
        for d in &cb.dispatches {
            let (pipeline, op) = names[d.pipeline as usize].clone();
            let label = Name::interned(dispatch_label(d, &pipeline));
            let (gpu, issue) = clock.span(d.ticks);
            if cb.ticks.is_none() {
                add_busy(gpu);
            }
            p.dispatches.push(DispatchEvent {
                token,
                index,
                op,
                layer: layer_of(&label),
                label,
                pass: pass as u32,
                pipeline,
                workgroups: d.workgroups,
                bytes: 0,
                flops: 0,
                cpu_encode_ns: 0,
                gpu,
                timestamp_issue: issue,
            });
            index += 1;
        }
    }
    busy
}

/// The step's counters: those [`Counters`] has, and the rest by name.
fn step_counters(
    step: &StepRecord,
    dispatches: u64,
    passes: u64,
) -> (Counters, std::collections::BTreeMap<String, u64>) {
    let c = |k: &str| step.counters.get(k).copied().unwrap_or(0);
    let counters = Counters {
        dispatches,
        passes,
        submits: c("submits"),
        syncs: c("syncs"),
        barriers: c("barriers"),
        buffers_created: c("buffers_created"),
        bind_groups_created: 0,
        pipelines_created: c("pipelines_created"),
        // vkCmdUpdateBuffer carries its bytes from the host; copies and fills stay on
        // the device (in `other_counters`).
        bytes_uploaded: c("update_bytes"),
        bytes_downloaded: 0,
    };
    let known = [
        "submits",
        "syncs",
        "barriers",
        "buffers_created",
        "pipelines_created",
    ];
    let other = step
        .counters
        .iter()
        .filter(|(k, _)| !known.contains(&k.as_str()))
        .map(|(k, &v)| (k.clone(), v))
        .collect();
    (counters, other)
}

/// A dispatch's label: the innermost debug label, unless that only repeats the
/// pipeline's name with its workgroup size (llama.cpp's `mul_mat_vec_q4_0_f32_f32
/// (64,1,1)`), then the one around it (llama.cpp's node, `MUL_MAT Qcur-3`); the
/// pipeline's name without labels. A label equal to the pipeline's name is kept
/// (gpuscope's `argmax` inside wgpu's pass group `step`).
fn dispatch_label<'a>(d: &'a DispatchRecord, pipeline: &'a str) -> &'a str {
    match (&d.label, &d.scope) {
        (Some(l), Some(outer)) if l.len() > pipeline.len() && l.starts_with(pipeline) => outer,
        (Some(l), _) => l,
        (None, _) => pipeline,
    }
}

/// The layer a label names, in the spellings engines use: gpuscope's `L12.ffn_up`,
/// GGUF tensor names `blk.12.ffn_up`, llama.cpp node names `ffn_up-12`.
fn layer_of(label: &str) -> Option<u32> {
    let digits = |s: &str| -> Option<u32> {
        let d: String = s.chars().take_while(char::is_ascii_digit).collect();
        d.parse().ok()
    };
    if let Some(rest) = label.strip_prefix('L') {
        if rest.contains('.') {
            return digits(rest);
        }
    }
    if let Some(i) = label.find("blk.") {
        return digits(&label[i + 4..]);
    }
    let (_, tail) = label.rsplit_once('-')?;
    tail.chars()
        .all(|c| c.is_ascii_digit())
        .then(|| tail.parse().ok())?
}

/// What the steps show of the program's graph: the median step's dispatches and command
/// buffers (over the steps that dispatch at all: a program's first steps load and warm
/// up), and as many layers as its labels name.
fn describe_graph(p: &mut Profile) {
    let median = |mut v: Vec<u64>| -> u32 {
        v.sort_unstable();
        v.get(v.len() / 2).copied().unwrap_or(0) as u32
    };
    let working = p.tokens.iter().filter(|t| t.counters.dispatches > 0);
    p.workload.graph_dispatches_per_token =
        median(working.clone().map(|t| t.counters.dispatches).collect());
    p.workload.graph_passes_per_token = median(working.map(|t| t.counters.passes).collect());
    p.workload.layers = p
        .dispatches
        .iter()
        .filter_map(|d| d.layer)
        .max()
        .map_or(0, |l| l + 1);
}

fn adapter_of(d: &DeviceRecord) -> AdapterDesc {
    AdapterDesc {
        name: d.name.clone(),
        backend: "Vulkan".into(),
        device_type: d.device_type.clone(),
        driver: d.driver_name.clone(),
        driver_info: d.driver_info.clone(),
        features: Vec::new(),
        max_storage_buffer_binding_size: d.max_storage_buffer_range,
        max_buffer_size: d.max_buffer_size,
    }
}

fn program_name(argv: &[String]) -> String {
    argv.first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "program".into())
}

/// The queues the tokens ran on, in order of first use: one GPU track each.
fn gpu_tracks(steps: &[std::borrow::Cow<'_, StepRecord>]) -> Vec<u32> {
    let mut tracks: Vec<u32> = Vec::new();
    for s in steps {
        if !tracks.contains(&s.queue) {
            tracks.push(s.queue);
        }
    }
    tracks
}
