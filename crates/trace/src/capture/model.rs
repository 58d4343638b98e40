//! The capture's data types: what each JSON file of a capture holds.
//!
//! Ids are indices into their list (shaders, constant sets, layouts, pipelines, bind
//! groups, graphs), except buffers, which keep the id the runtime gave them so a
//! capture's buffer ids match the run's logs and profiles.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::capture::blob::{BlobSlice, FileEntry};
use crate::counters::Counters;
use crate::profile::{AdapterDesc, GpuSpan, TimestampIssue, TimingInfo, WorkloadDesc};
use crate::FormatVersion;

/// `manifest.json`: what the capture is and which files make it up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format: FormatVersion,
    /// The tool and version that wrote it, e.g. `gpuscope 0.1.0`.
    pub tool: String,
    /// The capture's name: the prefix of the four candle-style views.
    pub name: String,
    pub adapter: AdapterDesc,
    /// The device limits the run was opened with, by wgpu name.
    pub limits: BTreeMap<String, u64>,
    pub timing: TimingInfo,
    pub workload: WorkloadDesc,
    /// Every other file of the capture, with its length and hash.
    pub files: Vec<FileEntry>,
    /// Set when the run was stopped early (an interrupt, a GPU fault): why, and how many
    /// steps it holds. The steps it holds are whole and replayable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub incomplete: Option<String>,
}

/// `commands.json`: every resource the recorded commands use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Commands {
    pub shaders: Vec<ShaderDesc>,
    /// Every distinct set of override constants; pipelines refer to them by index.
    pub constant_sets: Vec<ConstantSet>,
    pub layouts: Vec<LayoutDesc>,
    pub pipelines: Vec<PipelineDesc>,
    pub buffers: Vec<BufferDesc>,
    pub bind_groups: Vec<BindGroupDesc>,
}

/// A WGSL module as it was built.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShaderDesc {
    /// Kernel-family name the runtime caches the module by, e.g. `gemv_q8_0`.
    pub name: String,
    /// Path of the WGSL source inside the capture (`shaders/<name>.wgsl`).
    pub source: String,
    /// Entry points the capture's pipelines use.
    pub entry_points: Vec<String>,
}

/// One set of override constants, `(name, value)` in the order they were given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ConstantSet {
    pub values: Vec<(String, f64)>,
}

/// Whether a binding is read-only or read-write, as the shader declares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Access {
    Read,
    ReadWrite,
}

impl Access {
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::ReadWrite => "read_write",
        }
    }
}

/// Bind group layout of group 0: one storage buffer per binding.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LayoutDesc {
    pub entries: Vec<LayoutEntry>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LayoutEntry {
    pub binding: u32,
    pub access: Access,
}

/// A compute pipeline: shader, entry point, constants and layout, all by index.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PipelineDesc {
    /// The runtime's name, `shader:entry{NAME=value,...}`.
    pub name: String,
    pub shader: usize,
    pub entry: String,
    pub constants: usize,
    pub layout: usize,
}

/// A buffer as created: id, size, usage flags (wgpu names) and label.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferDesc {
    pub id: u64,
    pub label: String,
    pub size: u64,
    pub usage: Vec<String>,
}

/// A bind group for group 0 of `pipeline`: binding i holds `entries[i]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BindGroupDesc {
    pub pipeline: usize,
    pub entries: Vec<BindingDesc>,
}

/// A range of a buffer bound to one binding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BindingDesc {
    pub binding: u32,
    pub buffer: u64,
    pub offset: u64,
    pub size: u64,
    /// The view's label (`q` for the q part of `qkv`).
    pub label: String,
}

/// `stream.json`: the ordered command stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stream {
    /// The dispatch graphs steps run; a decoder has one, built once.
    pub graphs: Vec<GraphDesc>,
    /// Buffer ranges read back after every step (the decoder's next token first).
    pub readbacks: Vec<BufferRange>,
    pub steps: Vec<StepDesc>,
}

impl Stream {
    /// How often each unique command (pipeline, bind group, workgroups) ran over the
    /// stream, with the first dispatch that used it, in first-use order.
    pub fn command_counts(&self) -> Vec<(CommandKey, u64, &DispatchDesc)> {
        let mut index: BTreeMap<CommandKey, usize> = BTreeMap::new();
        let mut out: Vec<(CommandKey, u64, &DispatchDesc)> = Vec::new();
        for step in &self.steps {
            let Some(graph) = self.graphs.get(step.graph) else {
                continue;
            };
            for d in graph.dispatches() {
                let key = d.command();
                match index.get(&key) {
                    Some(&i) => out[i].1 += 1,
                    None => {
                        index.insert(key, out.len());
                        out.push((key, 1, d));
                    }
                }
            }
        }
        out
    }

    /// Dispatches over all steps.
    pub fn dispatch_count(&self) -> usize {
        self.steps
            .iter()
            .map(|s| {
                self.graphs
                    .get(s.graph)
                    .map_or(0, GraphDesc::dispatch_count)
            })
            .sum()
    }
}

/// One compute pass per entry of `passes`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GraphDesc {
    pub passes: Vec<PassDesc>,
}

impl GraphDesc {
    pub fn dispatch_count(&self) -> usize {
        self.passes.iter().map(|p| p.dispatches.len()).sum()
    }

    pub fn dispatches(&self) -> impl Iterator<Item = &DispatchDesc> {
        self.passes.iter().flat_map(|p| p.dispatches.iter())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PassDesc {
    pub name: String,
    pub layer: Option<u32>,
    pub dispatches: Vec<DispatchDesc>,
}

/// One dispatch: the command (pipeline, bind group, workgroups) and what it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchDesc {
    pub pipeline: usize,
    pub bind_group: usize,
    pub workgroups: [u32; 3],
    pub op: String,
    pub label: String,
    pub layer: Option<u32>,
    /// Buffer ids read and written, as the op declared them (the runtime counts
    /// barriers from these).
    pub reads: Vec<u64>,
    pub writes: Vec<u64>,
}

/// The key of a unique command.
pub type CommandKey = (usize, usize, [u32; 3]);

impl DispatchDesc {
    pub fn command(&self) -> CommandKey {
        (self.pipeline, self.bind_group, self.workgroups)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BufferRange {
    pub buffer: u64,
    pub offset: u64,
    pub size: u64,
}

/// One step (one decoded token): uploads, then the graph, then the readback.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepDesc {
    pub index: u32,
    /// KV-cache position (decoders) or 0.
    pub position: u32,
    /// The token the step produced, as read back.
    pub token_id: u32,
    pub graph: usize,
    /// Writes queued before the step, in order; `offset` is from the buffer's start.
    pub uploads: Vec<Upload>,
    /// What the live run measured for this step.
    pub measured: Option<StepMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Upload {
    pub buffer: u64,
    pub offset: u64,
    pub data: BlobSlice,
}

/// A step's measurements from the live run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepMeasurement {
    pub wall_ns: u64,
    pub gpu_busy_ns: Option<u64>,
    pub counters: Counters,
    /// One per dispatch of the step's graph, in order.
    pub dispatches: Vec<DispatchMeasurement>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchMeasurement {
    pub gpu: Option<GpuSpan>,
    pub issue: Option<TimestampIssue>,
    pub cpu_encode_ns: u64,
    /// The cost declared at this step (attention's grows with the context).
    pub bytes: u64,
    pub flops: u64,
}

impl DispatchMeasurement {
    pub fn valid_gpu_ns(&self) -> Option<u64> {
        crate::profile::valid_span_ns(self.gpu, self.issue)
    }
}

/// `data.json`: captured bytes (`--capture-data`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CapturedData {
    /// Every buffer's contents before the first step.
    pub initial: Vec<BufferContents>,
    /// Outputs of every dispatch of the chosen steps, by step.
    pub outputs: Vec<StepOutputs>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferContents {
    pub buffer: u64,
    pub data: BlobSlice,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepOutputs {
    /// Index into `stream.steps`.
    pub step: usize,
    /// One per dispatch of the step's graph, in order.
    pub dispatches: Vec<DispatchOutputs>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchOutputs {
    /// The read-write bindings after the dispatch ran.
    pub outputs: Vec<BindingOutput>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BindingOutput {
    pub binding: u32,
    pub data: BlobSlice,
}

/// A capture in memory: the parsed JSON files, shader sources, and a way to read blobs.
pub struct Capture {
    pub manifest: Manifest,
    pub commands: Commands,
    pub stream: Stream,
    pub data: Option<CapturedData>,
    /// WGSL source per shader, in `commands.shaders` order.
    pub shader_sources: Vec<String>,
    pub(crate) source: Box<dyn crate::capture::source::CaptureSource>,
    /// Where the capture was read from, for error messages.
    pub(crate) root: std::path::PathBuf,
    /// Blob files read so far (checked), by path.
    pub(crate) blobs: std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<Vec<u8>>>>,
}

impl std::fmt::Debug for Capture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Capture")
            .field("root", &self.root)
            .field("manifest", &self.manifest)
            .finish_non_exhaustive()
    }
}

impl Capture {
    /// The buffer with id `id`.
    pub fn buffer(&self, id: u64) -> Option<&BufferDesc> {
        self.commands.buffers.iter().find(|b| b.id == id)
    }

    /// How often each unique command ran; see [`Stream::command_counts`].
    pub fn command_counts(&self) -> Vec<(CommandKey, u64, &DispatchDesc)> {
        self.stream.command_counts()
    }
}
