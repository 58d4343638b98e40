//! Cross-reference checks: every index, buffer id and blob range in a capture points at
//! something that exists, so replay never indexes out of bounds or reads past a blob.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use crate::capture::blob::BlobSlice;
use crate::capture::error::CaptureError;
use crate::capture::files;
use crate::capture::model::{CapturedData, Commands, Manifest, Stream};

/// Checks the references of a parsed capture. `blobs` maps blob paths to their lengths.
pub fn check_references(
    _manifest: &Manifest,
    c: &Commands,
    stream: &Stream,
    data: Option<&CapturedData>,
    blobs: &HashMap<String, u64>,
    root: &Path,
) -> Result<(), CaptureError> {
    let fail = |file: &str, message: String| CaptureError::Reference {
        path: root.join(file),
        message,
    };
    let cmd = |m: String| fail(files::COMMANDS, m);
    let buffers: HashMap<u64, u64> = c.buffers.iter().map(|b| (b.id, b.size)).collect();
    if buffers.len() != c.buffers.len() {
        return Err(cmd("two buffers share an id".into()));
    }
    let mut names = HashSet::new();
    for s in &c.shaders {
        if !names.insert(s.name.as_str()) {
            return Err(cmd(format!("shader `{}` is listed twice", s.name)));
        }
    }
    for (i, p) in c.pipelines.iter().enumerate() {
        if p.shader >= c.shaders.len() {
            return Err(cmd(format!(
                "pipeline {i} ({}) names shader {}, but there are {}",
                p.name,
                p.shader,
                c.shaders.len()
            )));
        }
        if p.constants >= c.constant_sets.len() {
            return Err(cmd(format!(
                "pipeline {i} ({}) names constant set {}, but there are {}",
                p.name,
                p.constants,
                c.constant_sets.len()
            )));
        }
        if p.layout >= c.layouts.len() {
            return Err(cmd(format!(
                "pipeline {i} ({}) names layout {}, but there are {}",
                p.name,
                p.layout,
                c.layouts.len()
            )));
        }
    }
    for (i, g) in c.bind_groups.iter().enumerate() {
        let Some(p) = c.pipelines.get(g.pipeline) else {
            return Err(cmd(format!(
                "bind group {i} names pipeline {}, but there are {}",
                g.pipeline,
                c.pipelines.len()
            )));
        };
        let layout = &c.layouts[p.layout];
        if layout.entries.len() != g.entries.len() {
            return Err(cmd(format!(
                "bind group {i} binds {} buffers, the layout of pipeline {} has {} bindings",
                g.entries.len(),
                p.name,
                layout.entries.len()
            )));
        }
        for (j, e) in g.entries.iter().enumerate() {
            if e.binding != j as u32 {
                return Err(cmd(format!(
                    "bind group {i}: entry {j} is binding {}, expected {j}",
                    e.binding
                )));
            }
            let Some(&size) = buffers.get(&e.buffer) else {
                return Err(cmd(format!(
                    "bind group {i} binding {j} names buffer {}, which is not listed",
                    e.buffer
                )));
            };
            if e.offset.checked_add(e.size).is_none_or(|end| end > size) || e.size == 0 {
                return Err(cmd(format!(
                    "bind group {i} binding {j}: {} bytes at {} do not fit buffer {} ({size} bytes)",
                    e.size, e.offset, e.buffer
                )));
            }
        }
    }
    let st = |m: String| fail(files::STREAM, m);
    for (gi, g) in stream.graphs.iter().enumerate() {
        for (di, d) in g.dispatches().enumerate() {
            let Some(bg) = c.bind_groups.get(d.bind_group) else {
                return Err(st(format!(
                    "graph {gi} dispatch {di} ({}) names bind group {}, but there are {}",
                    d.label,
                    d.bind_group,
                    c.bind_groups.len()
                )));
            };
            let Some(p) = c.pipelines.get(d.pipeline) else {
                return Err(st(format!(
                    "graph {gi} dispatch {di} ({}) names pipeline {}, but there are {}",
                    d.label,
                    d.pipeline,
                    c.pipelines.len()
                )));
            };
            if c.pipelines[bg.pipeline].layout != p.layout {
                return Err(st(format!("graph {gi} dispatch {di} ({}): bind group {} was made for another layout than pipeline {}", d.label, d.bind_group, p.name)));
            }
            if let Some(b) = d
                .reads
                .iter()
                .chain(&d.writes)
                .find(|b| !buffers.contains_key(b))
            {
                return Err(st(format!(
                    "graph {gi} dispatch {di} ({}) reads or writes buffer {b}, which is not listed",
                    d.label
                )));
            }
        }
    }
    let range_ok = |buffer: u64, offset: u64, len: u64| {
        buffers
            .get(&buffer)
            .is_some_and(|&size| offset.checked_add(len).is_some_and(|e| e <= size))
    };
    for r in &stream.readbacks {
        if !range_ok(r.buffer, r.offset, r.size) {
            return Err(st(format!(
                "readback of {} bytes at {} of buffer {} does not fit a listed buffer",
                r.size, r.offset, r.buffer
            )));
        }
    }
    let slice_ok = |s: &BlobSlice| {
        blobs
            .get(&s.blob)
            .is_some_and(|&len| s.start.checked_add(s.len).is_some_and(|e| e <= len))
    };
    let slice_err = |file: &str, what: String, s: &BlobSlice| {
        fail(
            file,
            format!(
                "{what}: bytes {}+{} of blob `{}`, which is not listed or is shorter",
                s.start, s.len, s.blob
            ),
        )
    };
    for (si, s) in stream.steps.iter().enumerate() {
        let Some(g) = stream.graphs.get(s.graph) else {
            return Err(st(format!(
                "step {si} runs graph {}, but there are {}",
                s.graph,
                stream.graphs.len()
            )));
        };
        for (ui, u) in s.uploads.iter().enumerate() {
            if !range_ok(u.buffer, u.offset, u.data.len) {
                return Err(st(format!(
                    "step {si} upload {ui}: {} bytes at {} do not fit buffer {}",
                    u.data.len, u.offset, u.buffer
                )));
            }
            if !slice_ok(&u.data) {
                return Err(slice_err(
                    files::STREAM,
                    format!("step {si} upload {ui}"),
                    &u.data,
                ));
            }
        }
        if let Some(m) = &s.measured {
            if m.dispatches.len() != g.dispatch_count() {
                return Err(st(format!(
                    "step {si} has {} dispatch measurements for {} dispatches",
                    m.dispatches.len(),
                    g.dispatch_count()
                )));
            }
        }
    }
    let Some(data) = data else { return Ok(()) };
    let dt = |m: String| fail(files::DATA, m);
    for b in &data.initial {
        match buffers.get(&b.buffer) {
            None => {
                return Err(dt(format!(
                    "contents of buffer {}, which is not listed",
                    b.buffer
                )))
            }
            Some(&size) if size != b.data.len => {
                return Err(dt(format!(
                    "contents of buffer {} are {} bytes, the buffer has {size}",
                    b.buffer, b.data.len
                )))
            }
            _ => {}
        }
        if !slice_ok(&b.data) {
            return Err(slice_err(
                files::DATA,
                format!("contents of buffer {}", b.buffer),
                &b.data,
            ));
        }
    }
    for o in &data.outputs {
        let Some(step) = stream.steps.get(o.step) else {
            return Err(dt(format!(
                "outputs of step {}, but there are {} steps",
                o.step,
                stream.steps.len()
            )));
        };
        let graph = &stream.graphs[step.graph];
        if o.dispatches.len() != graph.dispatch_count() {
            return Err(dt(format!(
                "step {}: outputs of {} dispatches, the graph has {}",
                o.step,
                o.dispatches.len(),
                graph.dispatch_count()
            )));
        }
        for (di, (outs, d)) in o.dispatches.iter().zip(graph.dispatches()).enumerate() {
            let bg = &c.bind_groups[d.bind_group];
            for out in &outs.outputs {
                let Some(entry) = bg.entries.get(out.binding as usize) else {
                    return Err(dt(format!(
                        "step {} dispatch {di}: output of binding {}, which the bind group lacks",
                        o.step, out.binding
                    )));
                };
                if entry.size != out.data.len {
                    return Err(dt(format!(
                        "step {} dispatch {di} binding {}: {} bytes recorded for a {}-byte binding",
                        o.step, out.binding, out.data.len, entry.size
                    )));
                }
                if !slice_ok(&out.data) {
                    return Err(slice_err(
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
