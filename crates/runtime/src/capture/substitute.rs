//! `--substitute SHADER=FILE.wgsl`: an edited kernel in place of a recorded one, checked
//! against every pipeline that uses it before anything runs.

use std::path::{Path, PathBuf};

use gpuscope_record::reflect::reflect;
use gpuscope_trace::capture::{Access, Capture};

use crate::capture::error::ReplayError;

/// `--substitute SHADER=FILE.wgsl`: replay with an edited kernel.
#[derive(Debug, Clone)]
pub struct Substitution {
    pub shader: String,
    pub file: PathBuf,
    pub wgsl: String,
}

impl Substitution {
    /// Parses `SHADER=FILE` and reads the file.
    pub fn from_arg(arg: &str) -> Result<Substitution, ReplayError> {
        let Some((shader, file)) = arg.split_once('=') else {
            return Err(ReplayError::Invalid(format!(
                "--substitute {arg}: expected SHADER=FILE.wgsl"
            )));
        };
        Substitution::from_file(shader, Path::new(file))
    }

    pub fn from_file(shader: &str, file: &Path) -> Result<Substitution, ReplayError> {
        let wgsl = std::fs::read_to_string(file).map_err(|e| ReplayError::Substitute {
            shader: shader.to_string(),
            file: file.to_path_buf(),
            message: format!("cannot read the file: {e}"),
        })?;
        Ok(Substitution {
            shader: shader.to_string(),
            file: file.to_path_buf(),
            wgsl,
        })
    }
}

/// Checks that `sub` can stand in for its shader in every recorded pipeline: it parses,
/// declares each entry point used as a compute entry, each override constant set, and
/// exactly the recorded shader's group-0 bindings with the same access.
pub fn check_substitution(capture: &Capture, sub: &Substitution) -> Result<(), ReplayError> {
    let fail = |message: String| ReplayError::Substitute {
        shader: sub.shader.clone(),
        file: sub.file.clone(),
        message,
    };
    let c = &capture.commands;
    let Some(index) = c.shaders.iter().position(|s| s.name == sub.shader) else {
        let names: Vec<&str> = c.shaders.iter().map(|s| s.name.as_str()).collect();
        return Err(fail(format!(
            "the capture has no shader `{}` (it has: {})",
            sub.shader,
            names.join(", ")
        )));
    };
    let new = reflect(&sub.wgsl).map_err(|e| fail(format!("does not parse:\n{e}")))?;
    let old = reflect(&capture.shader_sources[index])
        .map_err(|e| fail(format!("the recorded source does not parse: {e}")))?;
    let mut problems = Vec::new();
    for (&binding, &access) in &old.bindings {
        match new.bindings.get(&binding) {
            None => problems.push(format!(
                "binding {binding} ({}) is not declared",
                access.as_str()
            )),
            Some(&a) if a != access => problems.push(format!(
                "binding {binding} is {}, the recorded shader's is {}",
                a.as_str(),
                access.as_str()
            )),
            _ => {}
        }
    }
    for (&binding, &access) in &new.bindings {
        if !old.bindings.contains_key(&binding) {
            problems.push(format!(
                "binding {binding} ({}) is not in the recorded shader",
                access.as_str()
            ));
        }
    }
    for p in c.pipelines.iter().filter(|p| p.shader == index) {
        if !new.compute_entries.contains(&p.entry) {
            problems.push(format!(
                "no compute entry point `{}` (pipeline {})",
                p.entry, p.name
            ));
        }
        for (name, _) in &c.constant_sets[p.constants].values {
            if !new.overrides.contains(name) {
                problems.push(format!(
                    "no `override {name}` (pipeline {} sets it)",
                    p.name
                ));
            }
        }
        let layout = &c.layouts[p.layout];
        for e in &layout.entries {
            if new.bindings.get(&e.binding).is_some_and(|&a| a != e.access)
                && e.access == Access::ReadWrite
            {
                problems.push(format!("pipeline {} writes binding {}", p.name, e.binding));
            }
        }
    }
    problems.dedup();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(fail(format!(
            "bindings or entry points do not match the recorded kernel: {}",
            problems.join("; ")
        )))
    }
}
