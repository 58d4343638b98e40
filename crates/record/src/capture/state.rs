//! A capture in progress: what the recorder keeps of each captured step as it closes
//! (its graph, deduplicated; its uploads, appended to one blob; its measurements).
//! The recorder holds this state; nothing here knows the recorder.

use std::collections::BTreeMap;

use gpuscope_trace::capture::{
    BlobSlice, BufferRange, DispatchMeasurement, StepDesc, StepMeasurement, Upload,
};

use crate::names::Names;
use crate::step::DoneStep;

/// The blob every captured upload is appended to.
pub(crate) const UPLOADS_BLOB: &str = "blobs/uploads.bin";

/// What to capture.
#[derive(Debug, Clone, Default)]
pub struct CaptureOptions {
    /// The capture's name (prefix of its candle-style views).
    pub name: String,
    /// Record every buffer's contents at `begin_capture` (needed to replay outputs and
    /// to capture dispatch outputs).
    pub with_data: bool,
    /// [`crate::Recorder::finish_into`] also records the outputs of every dispatch of
    /// this many last steps (a replay then compares its outputs with them).
    pub outputs_of_last_steps: u32,
}

/// One captured dispatch in registry terms (remapped to capture indices at the end).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cmd {
    pub(crate) pipeline: u32,
    pub(crate) group0: u32,
    pub(crate) other_groups: bool,
    pub(crate) workgroups: [u32; 3],
}

/// A dispatch of a captured graph: its command and names.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CapturedDispatch {
    pub(crate) cmd: Cmd,
    pub(crate) op: String,
    pub(crate) label: String,
    pub(crate) layer: Option<u32>,
}

/// A pass of a captured graph.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CapturedPass {
    pub(crate) name: String,
    pub(crate) layer: Option<u32>,
    pub(crate) dispatches: Vec<CapturedDispatch>,
}

/// A step's work in registry terms; steps that encode the same work share one.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CapturedGraph {
    pub(crate) passes: Vec<CapturedPass>,
}

impl CapturedGraph {
    /// Every dispatch's command, in order.
    pub(crate) fn commands(&self) -> impl Iterator<Item = Cmd> + '_ {
        self.passes
            .iter()
            .flat_map(|p| p.dispatches.iter().map(|d| d.cmd))
    }
}

/// A capture in progress.
pub(crate) struct CaptureState {
    pub(crate) options: CaptureOptions,
    /// Steps before this one are not captured.
    pub(crate) first_step: u32,
    /// Buffer id -> contents at `begin_capture` (a capture with data).
    pub(crate) initial: Option<BTreeMap<u64, Vec<u8>>>,
    /// Distinct graphs; each step names one.
    pub(crate) graphs: Vec<CapturedGraph>,
    pub(crate) steps: Vec<StepDesc>,
    /// Each step's dispatches, for running steps again.
    pub(crate) step_commands: Vec<Vec<Cmd>>,
    pub(crate) uploads_blob: Vec<u8>,
    /// The first captured step's readbacks (steps read back the same ranges).
    pub(crate) readbacks: Vec<BufferRange>,
    /// Work a capture cannot hold; the first one fails `end_capture`.
    pub(crate) problems: Vec<String>,
}

impl CaptureState {
    pub(crate) fn new(
        options: CaptureOptions,
        first_step: u32,
        initial: Option<BTreeMap<u64, Vec<u8>>>,
    ) -> CaptureState {
        CaptureState {
            options,
            first_step,
            initial,
            graphs: Vec::new(),
            steps: Vec::new(),
            step_commands: Vec::new(),
            uploads_blob: Vec::new(),
            readbacks: Vec::new(),
            problems: Vec::new(),
        }
    }

    /// Called when a step closes: a captured step's graph, uploads and measurements.
    pub(crate) fn record_step(&mut self, names: &Names, done: &DoneStep) {
        let rec = &done.rec;
        if !rec.recorded || rec.id < self.first_step {
            return;
        }
        let graph = self.graph_of(names, done);
        let cmds = graph.commands().collect();
        let graph = match self.graphs.iter().position(|g| *g == graph) {
            Some(i) => i,
            None => {
                self.graphs.push(graph);
                self.graphs.len() - 1
            }
        };
        let mut uploads = Vec::new();
        for u in &rec.uploads {
            uploads.push(Upload {
                buffer: u.buffer,
                offset: u.offset,
                data: BlobSlice {
                    blob: UPLOADS_BLOB.into(),
                    start: self.uploads_blob.len() as u64,
                    len: u.data.len() as u64,
                },
            });
            self.uploads_blob.extend_from_slice(&u.data);
        }
        if self.readbacks.is_empty() {
            self.readbacks = rec.readbacks.clone();
        }
        let (position, token_id) = match rec.token {
            Some(t) => (t.position, t.token_id),
            None => (self.steps.len() as u32, 0),
        };
        self.steps.push(StepDesc {
            index: self.steps.len() as u32,
            position,
            token_id,
            graph,
            uploads,
            measured: Some(StepMeasurement {
                wall_ns: done.wall_ns,
                gpu_busy_ns: done.gpu_busy_ns,
                counters: rec.counters,
                dispatches: rec
                    .dispatches
                    .iter()
                    .zip(&done.dispatch_times)
                    .map(|(d, t)| DispatchMeasurement {
                        gpu: t.gpu,
                        issue: t.issue,
                        cpu_encode_ns: d.cpu_encode_ns,
                        bytes: d.cost.bytes,
                        flops: d.cost.flops,
                    })
                    .collect(),
            }),
        });
        self.step_commands.push(cmds);
    }

    /// The step's graph, noting (once) work a capture cannot hold: bind groups other
    /// than 0, indirect dispatches.
    fn graph_of(&mut self, names: &Names, done: &DoneStep) -> CapturedGraph {
        let rec = &done.rec;
        let mut passes = Vec::new();
        for p in &rec.passes {
            let mut dispatches = Vec::new();
            let range = p.first_dispatch as usize..(p.first_dispatch + p.dispatches) as usize;
            for d in &rec.dispatches[range] {
                let cmd = Cmd {
                    pipeline: d.pipeline,
                    group0: d.groups[0],
                    other_groups: d.groups[1..].iter().any(|&g| g != u32::MAX),
                    workgroups: d.workgroups,
                };
                if cmd.other_groups && self.problems.is_empty() {
                    self.problems.push(format!(
                        "dispatch `{}` sets a bind group other than 0: captures hold bind group 0 only",
                        names.get(d.label)
                    ));
                }
                if d.indirect && self.problems.is_empty() {
                    self.problems.push(format!(
                        "dispatch `{}` is indirect: captures hold direct dispatches only",
                        names.get(d.label)
                    ));
                }
                dispatches.push(CapturedDispatch {
                    cmd,
                    op: names.get(d.op).to_string(),
                    label: names.get(d.label).to_string(),
                    layer: d.layer,
                });
            }
            passes.push(CapturedPass {
                name: names.get(p.name).to_string(),
                layer: p.layer,
                dispatches,
            });
        }
        CapturedGraph { passes }
    }
}
