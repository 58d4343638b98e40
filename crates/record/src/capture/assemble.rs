//! A finished capture's commands: the captured graphs turned from registry terms into
//! the capture format's, listing each shader, constant set, layout, pipeline and bind
//! group once, and every buffer the graphs, uploads and readbacks touch.

use std::collections::{BTreeSet, HashMap};

use gpuscope_trace::capture::{
    Access, BindGroupDesc, BindingDesc, BufferDesc, Commands, ConstantSet, DispatchDesc, GraphDesc,
    LayoutDesc, LayoutEntry, PassDesc, PipelineDesc, ShaderDesc,
};

use super::state::{CaptureState, CapturedDispatch, CapturedGraph};
use crate::error::RecorderError;
use crate::reflect::ShaderInterface;
use crate::registry::{BindGroupRecord, BoundBuffer, Registry, ShaderRecord};

/// The commands and graphs of a capture.
pub(crate) struct Assembled {
    pub(crate) commands: Commands,
    /// The WGSL of each of `commands.shaders`.
    pub(crate) sources: Vec<String>,
    /// The captured graphs, in capture indices.
    pub(crate) graphs: Vec<GraphDesc>,
    /// Ids of the buffers the capture uses (those `commands.buffers` lists).
    pub(crate) used_buffers: BTreeSet<u64>,
}

/// Lists what `cap`'s graphs, uploads and readbacks use, in capture terms.
pub(crate) fn assemble_commands(
    reg: &Registry,
    cap: &CaptureState,
) -> Result<Assembled, RecorderError> {
    let mut a = Assembler {
        reg,
        commands: Commands::default(),
        sources: Vec::new(),
        shader_index: HashMap::new(),
        pipeline_index: HashMap::new(),
        group_index: HashMap::new(),
        used_buffers: BTreeSet::new(),
    };
    let graphs = cap
        .graphs
        .iter()
        .map(|g| a.graph(g))
        .collect::<Result<Vec<_>, _>>()?;
    for s in &cap.steps {
        for u in &s.uploads {
            a.used_buffers.insert(u.buffer);
        }
    }
    for r in &cap.readbacks {
        a.used_buffers.insert(r.buffer);
    }
    a.commands.buffers = a.buffer_descs();
    Ok(Assembled {
        commands: a.commands,
        sources: a.sources,
        graphs,
        used_buffers: a.used_buffers,
    })
}

/// Bind groups are the same command when they bind the same ranges for the same
/// pipeline, whichever wgpu object carries them.
#[derive(PartialEq, Eq, Hash)]
struct BindGroupKey {
    /// Capture pipeline index.
    pipeline: usize,
    entries: Vec<BoundBuffer>,
}

/// The commands listed so far, and where each registry object went.
struct Assembler<'a> {
    reg: &'a Registry,
    commands: Commands,
    sources: Vec<String>,
    /// Registry shader -> capture shader.
    shader_index: HashMap<usize, usize>,
    /// Registry pipeline -> capture pipeline.
    pipeline_index: HashMap<u32, usize>,
    group_index: HashMap<BindGroupKey, usize>,
    used_buffers: BTreeSet<u64>,
}

impl Assembler<'_> {
    fn graph(&mut self, g: &CapturedGraph) -> Result<GraphDesc, RecorderError> {
        let mut gd = GraphDesc::default();
        for p in &g.passes {
            let mut pd = PassDesc {
                name: p.name.clone(),
                layer: p.layer,
                dispatches: Vec::new(),
            };
            for d in &p.dispatches {
                pd.dispatches.push(self.dispatch(d)?);
            }
            gd.passes.push(pd);
        }
        Ok(gd)
    }

    /// A dispatch with its pipeline and bind group 0 listed, and the buffers it reads
    /// and writes (as its shader declares them).
    fn dispatch(&mut self, d: &CapturedDispatch) -> Result<DispatchDesc, RecorderError> {
        let reg = self.reg;
        let (cmd, label) = (d.cmd, &d.label);
        let pipeline = self.pipeline(cmd.pipeline)?;
        let bg = reg.bind_groups.get(cmd.group0 as usize).ok_or_else(|| {
            RecorderError::Capture(format!(
                "dispatch `{label}` has no bind group 0 the recorder saw"
            ))
        })?;
        if bg.other_bindings > 0 {
            return Err(RecorderError::Capture(format!(
                "dispatch `{label}` binds textures or samplers: captures hold buffer bindings only"
            )));
        }
        let bind_group = self.bind_group(pipeline, bg);
        let access =
            |binding: u32| reg.pipelines[cmd.pipeline as usize].access(&reg.shaders, 0, binding);
        let mut reads = Vec::new();
        let mut writes = Vec::new();
        for e in &bg.entries {
            self.used_buffers.insert(e.buffer);
            reads.push(e.buffer);
            if access(e.binding) == Access::ReadWrite {
                writes.push(e.buffer);
            }
        }
        reads.dedup();
        writes.dedup();
        Ok(DispatchDesc {
            pipeline,
            bind_group,
            workgroups: cmd.workgroups,
            op: d.op.clone(),
            label: label.clone(),
            layer: d.layer,
            reads,
            writes,
        })
    }

    /// The capture index of registry pipeline `p`, listing it (and its shader, constant
    /// set and layout) on first use.
    fn pipeline(&mut self, p: u32) -> Result<usize, RecorderError> {
        if let Some(&i) = self.pipeline_index.get(&p) {
            return Ok(i);
        }
        let reg = self.reg;
        let pr = reg.pipelines.get(p as usize).ok_or_else(|| {
            RecorderError::Capture("a dispatch used a pipeline the recorder never saw".into())
        })?;
        let s = pr.shader.ok_or_else(|| {
            RecorderError::Capture(format!(
                "pipeline `{}` was registered without its shader module: captures need the WGSL",
                pr.name
            ))
        })?;
        let shader = &reg.shaders[s];
        let (Some(wgsl), Some(iface)) = (&shader.wgsl, &shader.interface) else {
            return Err(RecorderError::Capture(format!(
                "shader `{}` has no WGSL source the recorder could read: captures need it",
                shader.name
            )));
        };
        let si = self.shader(s, shader, wgsl);
        if !self.commands.shaders[si].entry_points.contains(&pr.entry) {
            self.commands.shaders[si]
                .entry_points
                .push(pr.entry.clone());
        }
        let constants = self.constant_set(ConstantSet {
            values: pr.constants.clone(),
        });
        let layout = self.layout(iface);
        self.commands.pipelines.push(PipelineDesc {
            name: pr.name.clone(),
            shader: si,
            entry: pr.entry.clone(),
            constants,
            layout,
        });
        let i = self.commands.pipelines.len() - 1;
        self.pipeline_index.insert(p, i);
        Ok(i)
    }

    /// The capture index of registry shader `s`, listing it with its source.
    fn shader(&mut self, s: usize, shader: &ShaderRecord, wgsl: &str) -> usize {
        if let Some(&i) = self.shader_index.get(&s) {
            return i;
        }
        self.commands.shaders.push(ShaderDesc {
            name: shader.name.clone(),
            source: format!(
                "shaders/{}.wgsl",
                gpuscope_trace::capture::write::file_stem(&shader.name)
            ),
            entry_points: Vec::new(),
        });
        self.sources.push(wgsl.to_string());
        let i = self.commands.shaders.len() - 1;
        self.shader_index.insert(s, i);
        i
    }

    /// The index of an equal constant set (bit for bit), listing `consts` if new.
    fn constant_set(&mut self, consts: ConstantSet) -> usize {
        let sets = &mut self.commands.constant_sets;
        match sets.iter().position(|k| same_consts(k, &consts)) {
            Some(k) => k,
            None => {
                sets.push(consts);
                sets.len() - 1
            }
        }
    }

    /// The index of the layout of `iface`'s group 0, listing it if new.
    fn layout(&mut self, iface: &ShaderInterface) -> usize {
        let layout = LayoutDesc {
            entries: iface
                .bindings
                .iter()
                .map(|(&binding, &access)| LayoutEntry { binding, access })
                .collect(),
        };
        let layouts = &mut self.commands.layouts;
        match layouts.iter().position(|l| *l == layout) {
            Some(l) => l,
            None => {
                layouts.push(layout);
                layouts.len() - 1
            }
        }
    }

    /// The capture index of bind group `bg` used with capture pipeline `pipeline`.
    fn bind_group(&mut self, pipeline: usize, bg: &BindGroupRecord) -> usize {
        let key = BindGroupKey {
            pipeline,
            entries: bg.entries.clone(),
        };
        if let Some(&i) = self.group_index.get(&key) {
            return i;
        }
        let reg = self.reg;
        self.commands.bind_groups.push(BindGroupDesc {
            pipeline,
            entries: bg
                .entries
                .iter()
                .map(|e| BindingDesc {
                    binding: e.binding,
                    buffer: e.buffer,
                    offset: e.offset,
                    size: e.size,
                    label: reg
                        .buffer_by_id(e.buffer)
                        .map(|b| b.label.clone())
                        .unwrap_or_default(),
                })
                .collect(),
        });
        let i = self.commands.bind_groups.len() - 1;
        self.group_index.insert(key, i);
        i
    }

    /// Every used buffer, by id.
    fn buffer_descs(&self) -> Vec<BufferDesc> {
        self.used_buffers
            .iter()
            .filter_map(|&id| self.reg.buffer_by_id(id))
            .map(|b| BufferDesc {
                id: b.id,
                label: b.label.clone(),
                size: b.raw.size(),
                usage: b
                    .raw
                    .usage()
                    .iter_names()
                    .map(|(n, _)| n.to_string())
                    .collect(),
            })
            .collect()
    }
}

fn same_consts(a: &ConstantSet, b: &ConstantSet) -> bool {
    a.values.len() == b.values.len()
        && a.values
            .iter()
            .zip(&b.values)
            .all(|(x, y)| x.0 == y.0 && x.1.to_bits() == y.1.to_bits())
}
