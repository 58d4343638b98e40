//! Cross-reference checks: every index, buffer id and blob range in a capture points at
//! something that exists, so replay never indexes out of bounds or reads past a blob.
//!
//! The checks run file by file, in the order replay reads them: `commands.json`
//! (shaders, pipelines, bind groups), then `stream.json` (graphs, readbacks, steps),
//! then `data.json`; the first broken reference is the error.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::capture::blob::BlobSlice;
use crate::capture::error::CaptureError;
use crate::capture::files;
use crate::capture::model::{
    BufferContents, CapturedData, Commands, Manifest, StepOutputs, Stream,
};

/// Checks the references of a parsed capture. `blobs` maps blob paths to their lengths.
pub fn check_references(
    _manifest: &Manifest,
    commands: &Commands,
    stream: &Stream,
    data: Option<&CapturedData>,
    blobs: &HashMap<String, u64>,
    root: &Path,
) -> Result<(), CaptureError> {
    let buffers: HashMap<u64, u64> = commands.buffers.iter().map(|b| (b.id, b.size)).collect();
    let refs = References {
        c: commands,
        stream,
        blobs,
        root,
        buffers,
    };
    refs.buffers_and_shaders()?;
    refs.pipelines()?;
    refs.bind_groups()?;
    refs.graphs()?;
    refs.readbacks()?;
    refs.steps()?;
    let Some(data) = data else { return Ok(()) };
    refs.initial_contents(&data.initial)?;
    refs.outputs(&data.outputs)
}

/// What the checks look things up in.
struct References<'a> {
    c: &'a Commands,
    stream: &'a Stream,
    /// Blob path -> length.
    blobs: &'a HashMap<String, u64>,
    /// Where the capture was read from, for messages.
    root: &'a Path,
    /// Buffer id -> size.
    buffers: HashMap<u64, u64>,
}

impl References<'_> {
    fn fail(&self, file: &str, message: String) -> CaptureError {
        CaptureError::Reference {
            path: self.root.join(file),
            message,
        }
    }

    fn in_commands(&self, message: String) -> CaptureError {
        self.fail(files::COMMANDS, message)
    }

    fn in_stream(&self, message: String) -> CaptureError {
        self.fail(files::STREAM, message)
    }

    fn in_data(&self, message: String) -> CaptureError {
        self.fail(files::DATA, message)
    }

    /// Whether `len` bytes at `offset` fit the listed buffer `buffer`.
    fn range_ok(&self, buffer: u64, offset: u64, len: u64) -> bool {
        self.buffers
            .get(&buffer)
            .is_some_and(|&size| offset.checked_add(len).is_some_and(|e| e <= size))
    }

    /// Whether `s` lies inside a listed blob.
    fn slice_ok(&self, s: &BlobSlice) -> bool {
        self.blobs
            .get(&s.blob)
            .is_some_and(|&len| s.start.checked_add(s.len).is_some_and(|e| e <= len))
    }

    fn slice_err(&self, file: &str, what: String, s: &BlobSlice) -> CaptureError {
        self.fail(
            file,
            format!(
                "{what}: bytes {}+{} of blob `{}`, which is not listed or is shorter",
                s.start, s.len, s.blob
            ),
        )
    }

    /// Buffer ids and shader names are unique.
    fn buffers_and_shaders(&self) -> Result<(), CaptureError> {
        if self.buffers.len() != self.c.buffers.len() {
            return Err(self.in_commands("two buffers share an id".into()));
        }
        let mut names = HashSet::new();
        for s in &self.c.shaders {
            if !names.insert(s.name.as_str()) {
                return Err(self.in_commands(format!("shader `{}` is listed twice", s.name)));
            }
        }
        Ok(())
    }

    /// Every pipeline names a shader, a constant set and a layout that exist.
    fn pipelines(&self) -> Result<(), CaptureError> {
        let c = self.c;
        for (i, p) in c.pipelines.iter().enumerate() {
            if p.shader >= c.shaders.len() {
                return Err(self.in_commands(format!(
                    "pipeline {i} ({}) names shader {}, but there are {}",
                    p.name,
                    p.shader,
                    c.shaders.len()
                )));
            }
            if p.constants >= c.constant_sets.len() {
                return Err(self.in_commands(format!(
                    "pipeline {i} ({}) names constant set {}, but there are {}",
                    p.name,
                    p.constants,
                    c.constant_sets.len()
                )));
            }
            if p.layout >= c.layouts.len() {
                return Err(self.in_commands(format!(
                    "pipeline {i} ({}) names layout {}, but there are {}",
                    p.name,
                    p.layout,
                    c.layouts.len()
                )));
            }
        }
        Ok(())
    }

    /// Every bind group names a pipeline, matches its layout's binding count, and binds
    /// ranges of listed buffers.
    fn bind_groups(&self) -> Result<(), CaptureError> {
        let c = self.c;
        for (i, g) in c.bind_groups.iter().enumerate() {
            let Some(p) = c.pipelines.get(g.pipeline) else {
                return Err(self.in_commands(format!(
                    "bind group {i} names pipeline {}, but there are {}",
                    g.pipeline,
                    c.pipelines.len()
                )));
            };
            let layout = &c.layouts[p.layout];
            if layout.entries.len() != g.entries.len() {
                return Err(self.in_commands(format!(
                    "bind group {i} binds {} buffers, the layout of pipeline {} has {} bindings",
                    g.entries.len(),
                    p.name,
                    layout.entries.len()
                )));
            }
            for (j, e) in g.entries.iter().enumerate() {
                if e.binding != j as u32 {
                    return Err(self.in_commands(format!(
                        "bind group {i}: entry {j} is binding {}, expected {j}",
                        e.binding
                    )));
                }
                let Some(&size) = self.buffers.get(&e.buffer) else {
                    return Err(self.in_commands(format!(
                        "bind group {i} binding {j} names buffer {}, which is not listed",
                        e.buffer
                    )));
                };
                if e.offset.checked_add(e.size).is_none_or(|end| end > size) || e.size == 0 {
                    return Err(self.in_commands(format!(
                        "bind group {i} binding {j}: {} bytes at {} do not fit buffer {} ({size} bytes)",
                        e.size, e.offset, e.buffer
                    )));
                }
            }
        }
        Ok(())
    }

    /// Every dispatch of every graph names a bind group and pipeline that exist and
    /// agree, and reads and writes listed buffers.
    fn graphs(&self) -> Result<(), CaptureError> {
        let c = self.c;
        for (gi, g) in self.stream.graphs.iter().enumerate() {
            for (di, d) in g.dispatches().enumerate() {
                let Some(bg) = c.bind_groups.get(d.bind_group) else {
                    return Err(self.in_stream(format!(
                        "graph {gi} dispatch {di} ({}) names bind group {}, but there are {}",
                        d.label,
                        d.bind_group,
                        c.bind_groups.len()
                    )));
                };
                let Some(p) = c.pipelines.get(d.pipeline) else {
                    return Err(self.in_stream(format!(
                        "graph {gi} dispatch {di} ({}) names pipeline {}, but there are {}",
                        d.label,
                        d.pipeline,
                        c.pipelines.len()
                    )));
                };
                if c.pipelines[bg.pipeline].layout != p.layout {
                    return Err(self.in_stream(format!("graph {gi} dispatch {di} ({}): bind group {} was made for another layout than pipeline {}", d.label, d.bind_group, p.name)));
                }
                if let Some(b) = d
                    .reads
                    .iter()
                    .chain(&d.writes)
                    .find(|b| !self.buffers.contains_key(b))
                {
                    return Err(self.in_stream(format!(
                        "graph {gi} dispatch {di} ({}) reads or writes buffer {b}, which is not listed",
                        d.label
                    )));
                }
            }
        }
        Ok(())
    }

    /// Every readback fits its buffer.
    fn readbacks(&self) -> Result<(), CaptureError> {
        for r in &self.stream.readbacks {
            if !self.range_ok(r.buffer, r.offset, r.size) {
                return Err(self.in_stream(format!(
                    "readback of {} bytes at {} of buffer {} does not fit a listed buffer",
                    r.size, r.offset, r.buffer
                )));
            }
        }
        Ok(())
    }

    /// Every step runs a graph that exists, uploads into its buffers from listed blobs,
    /// and measured each of its dispatches.
    fn steps(&self) -> Result<(), CaptureError> {
        let stream = self.stream;
        for (si, s) in stream.steps.iter().enumerate() {
            let Some(g) = stream.graphs.get(s.graph) else {
                return Err(self.in_stream(format!(
                    "step {si} runs graph {}, but there are {}",
                    s.graph,
                    stream.graphs.len()
                )));
            };
            for (ui, u) in s.uploads.iter().enumerate() {
                if !self.range_ok(u.buffer, u.offset, u.data.len) {
                    return Err(self.in_stream(format!(
                        "step {si} upload {ui}: {} bytes at {} do not fit buffer {}",
                        u.data.len, u.offset, u.buffer
                    )));
                }
                if !self.slice_ok(&u.data) {
                    return Err(self.slice_err(
                        files::STREAM,
                        format!("step {si} upload {ui}"),
                        &u.data,
                    ));
                }
            }
            if let Some(m) = &s.measured {
                if m.dispatches.len() != g.dispatch_count() {
                    return Err(self.in_stream(format!(
                        "step {si} has {} dispatch measurements for {} dispatches",
                        m.dispatches.len(),
                        g.dispatch_count()
                    )));
                }
            }
        }
        Ok(())
    }

    /// `data.json`'s initial contents: one per listed buffer, of its size, in a blob.
    fn initial_contents(&self, initial: &[BufferContents]) -> Result<(), CaptureError> {
        for b in initial {
            match self.buffers.get(&b.buffer) {
                None => {
                    return Err(self.in_data(format!(
                        "contents of buffer {}, which is not listed",
                        b.buffer
                    )))
                }
                Some(&size) if size != b.data.len => {
                    return Err(self.in_data(format!(
                        "contents of buffer {} are {} bytes, the buffer has {size}",
                        b.buffer, b.data.len
                    )))
                }
                _ => {}
            }
            if !self.slice_ok(&b.data) {
                return Err(self.slice_err(
                    files::DATA,
                    format!("contents of buffer {}", b.buffer),
                    &b.data,
                ));
            }
        }
        Ok(())
    }

    /// `data.json`'s outputs: of a step that exists, one per dispatch of its graph, each
    /// of a binding its bind group has and of that binding's size, in a blob.
    fn outputs(&self, outputs: &[StepOutputs]) -> Result<(), CaptureError> {
        let stream = self.stream;
        for o in outputs {
            let Some(step) = stream.steps.get(o.step) else {
                return Err(self.in_data(format!(
                    "outputs of step {}, but there are {} steps",
                    o.step,
                    stream.steps.len()
                )));
            };
            let graph = &stream.graphs[step.graph];
            if o.dispatches.len() != graph.dispatch_count() {
                return Err(self.in_data(format!(
                    "step {}: outputs of {} dispatches, the graph has {}",
                    o.step,
                    o.dispatches.len(),
                    graph.dispatch_count()
                )));
            }
            for (di, (outs, d)) in o.dispatches.iter().zip(graph.dispatches()).enumerate() {
                let bg = &self.c.bind_groups[d.bind_group];
                for out in &outs.outputs {
                    let Some(entry) = bg.entries.get(out.binding as usize) else {
                        return Err(self.in_data(format!(
                            "step {} dispatch {di}: output of binding {}, which the bind group lacks",
                            o.step, out.binding
                        )));
                    };
                    if entry.size != out.data.len {
                        return Err(self.in_data(format!(
                            "step {} dispatch {di} binding {}: {} bytes recorded for a {}-byte binding",
                            o.step, out.binding, out.data.len, entry.size
                        )));
                    }
                    if !self.slice_ok(&out.data) {
                        return Err(self.slice_err(
                            files::DATA,
                            format!("step {} dispatch {di} binding {}", o.step, out.binding),
                            &out.data,
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}
