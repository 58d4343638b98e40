//! A capture's resources created again on a device: buffers (with their captured
//! contents when there are some), pipelines, bind groups and graphs.
//!
//! Shader sources from a capture live as long as the process: the pipeline cache keys
//! modules by `&'static str` names, so each distinct (name, source) is leaked once and
//! reused by later rebuilds (a few hundred kB for a whole model's kernels).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, OnceLock};
use std::time::Instant;

use gpuscope_trace::capture::{Access, Capture, GraphDesc};
use gpuscope_trace::Counters;

use crate::capture::error::ReplayError;
use crate::capture::substitute::{check_substitution, Substitution};
use crate::device::Gpu;
use crate::dispatch::{Cost, Dispatch, Graph, Section};
use crate::resources::{BindGroup, BufferId, GpuBuffer, Pipeline, ShaderSource};

pub struct Rebuilt {
    /// By index in `commands.pipelines`.
    pub pipelines: Vec<Pipeline>,
    /// By index in `commands.bind_groups`.
    pub bind_groups: Vec<BindGroup>,
    /// By index in `stream.graphs`.
    pub graphs: Vec<Graph>,
    /// By the id the capture gives them.
    pub buffers: BTreeMap<u64, GpuBuffer>,
    /// The ranges read back after every step.
    pub readbacks: Vec<GpuBuffer>,
    /// Per graph, per dispatch: the read-write binding indices.
    pub written: Vec<Vec<Vec<u32>>>,
    /// Shaders replaced by `--substitute`.
    pub substituted: Vec<String>,
    /// What rebuilding created and uploaded.
    pub setup: Counters,
    pub setup_wall_ns: u64,
}

/// A `'static` shader source for (name, wgsl), leaked once per distinct pair.
fn intern(name: &str, wgsl: &str) -> &'static ShaderSource {
    static TABLE: OnceLock<Mutex<HashMap<(String, String), &'static ShaderSource>>> =
        OnceLock::new();
    let mut table = TABLE.get_or_init(Default::default).lock().unwrap();
    table
        .entry((name.to_string(), wgsl.to_string()))
        .or_insert_with(|| {
            Box::leak(Box::new(ShaderSource {
                name: Box::leak(name.to_string().into_boxed_str()),
                wgsl: Box::leak(wgsl.to_string().into_boxed_str()),
            }))
        })
}

/// Creates the capture's resources on `gpu`. Substitutions are checked first: a
/// mismatch is refused before anything is created. With `with_data`, buffers start
/// with their captured contents (when the capture has them), else zeroed.
pub fn rebuild(
    gpu: &Gpu,
    capture: &Capture,
    subs: &[Substitution],
    with_data: bool,
) -> Result<Rebuilt, ReplayError> {
    for s in subs {
        check_substitution(capture, s)?;
    }
    let start = Instant::now();
    let before = gpu.counters();
    let pipelines = pipelines(gpu, capture, subs)?;
    let buffers = buffers(gpu, capture, with_data)?;
    let view =
        |buffer: u64, offset: u64, size: u64, label: &str| -> Result<GpuBuffer, ReplayError> {
            let b = buffers.get(&buffer).ok_or_else(|| {
                ReplayError::Invalid(format!("buffer {buffer} is not in the capture"))
            })?;
            Ok(b.view(label, offset, size)?)
        };
    let mut bind_groups = Vec::with_capacity(capture.commands.bind_groups.len());
    for g in &capture.commands.bind_groups {
        let views = g
            .entries
            .iter()
            .map(|e| view(e.buffer, e.offset, e.size, &e.label))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&GpuBuffer> = views.iter().collect();
        bind_groups.push(gpu.bind_group(&pipelines[g.pipeline], &refs)?);
    }
    let mut graphs = Vec::new();
    let mut written = Vec::new();
    for g in &capture.stream.graphs {
        let (graph, w) = graph(capture, g, &pipelines, &bind_groups, &buffers);
        graphs.push(graph);
        written.push(w);
    }
    let readbacks = capture
        .stream
        .readbacks
        .iter()
        .map(|r| view(r.buffer, r.offset, r.size, "readback"))
        .collect::<Result<Vec<_>, _>>()?;
    gpu.wait_idle()?;
    Ok(Rebuilt {
        pipelines,
        bind_groups,
        graphs,
        buffers,
        readbacks,
        written,
        substituted: subs
            .iter()
            .map(|s| format!("{}={}", s.shader, s.file.display()))
            .collect(),
        setup: gpu.counters().since(&before),
        setup_wall_ns: start.elapsed().as_nanos() as u64,
    })
}

/// Every pipeline of the capture, built from its shader's source or its substitute.
fn pipelines(
    gpu: &Gpu,
    capture: &Capture,
    subs: &[Substitution],
) -> Result<Vec<Pipeline>, ReplayError> {
    let c = &capture.commands;
    let shaders: Vec<&'static ShaderSource> = c
        .shaders
        .iter()
        .zip(&capture.shader_sources)
        .map(|(s, src)| match subs.iter().find(|x| x.shader == s.name) {
            // Another name: the cache must not mix the edited module with the original.
            Some(sub) => intern(&format!("{}@{}", s.name, sub.file.display()), &sub.wgsl),
            None => intern(&s.name, src),
        })
        .collect();
    let mut pipelines = Vec::with_capacity(c.pipelines.len());
    for p in &c.pipelines {
        let consts: Vec<(&str, f64)> = c.constant_sets[p.constants]
            .values
            .iter()
            .map(|(k, v)| (k.as_str(), *v))
            .collect();
        pipelines.push(gpu.pipeline(shaders[p.shader], &p.entry, &consts)?);
    }
    Ok(pipelines)
}

/// Every buffer of the capture, by its id, holding its captured contents when
/// `with_data` and the capture has them.
fn buffers(
    gpu: &Gpu,
    capture: &Capture,
    with_data: bool,
) -> Result<BTreeMap<u64, GpuBuffer>, ReplayError> {
    let contents: HashMap<u64, &gpuscope_trace::capture::BlobSlice> =
        match (&capture.data, with_data) {
            (Some(d), true) => d.initial.iter().map(|b| (b.buffer, &b.data)).collect(),
            _ => HashMap::new(),
        };
    let mut buffers = BTreeMap::new();
    for b in &capture.commands.buffers {
        let buf = gpu.create_buffer(&b.label, b.size)?;
        if let Some(slice) = contents.get(&b.id) {
            gpu.write_buffer(&buf, 0, &capture.blob(slice)?);
            capture.forget_blobs();
        }
        buffers.insert(b.id, buf);
    }
    Ok(buffers)
}

/// A captured graph as a runnable [`Graph`], and per dispatch the read-write bindings
/// its layout declares.
fn graph(
    capture: &Capture,
    g: &GraphDesc,
    pipelines: &[Pipeline],
    bind_groups: &[BindGroup],
    buffers: &BTreeMap<u64, GpuBuffer>,
) -> (Graph, Vec<Vec<u32>>) {
    let c = &capture.commands;
    let id = |b: &u64| buffers.get(b).map(|x| x.id()).unwrap_or(BufferId(u64::MAX));
    let mut sections = Vec::new();
    let mut written = Vec::new();
    for p in &g.passes {
        let dispatches = p
            .dispatches
            .iter()
            .map(|d| {
                let layout = &c.layouts[c.pipelines[d.pipeline].layout];
                written.push(
                    layout
                        .entries
                        .iter()
                        .filter(|e| e.access == Access::ReadWrite)
                        .map(|e| e.binding)
                        .collect(),
                );
                Dispatch {
                    op: d.op.clone(),
                    label: d.label.clone(),
                    layer: d.layer,
                    pipeline: pipelines[d.pipeline].clone(),
                    bind_group: bind_groups[d.bind_group].clone(),
                    workgroups: d.workgroups,
                    cost: Cost::default(),
                    reads: d.reads.iter().map(id).collect(),
                    writes: d.writes.iter().map(id).collect(),
                }
            })
            .collect();
        sections.push(Section::new(p.name.clone(), p.layer, dispatches));
    }
    (Graph { sections }, written)
}
