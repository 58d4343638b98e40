//! Consistency of a profile read from a file: fields that parse but contradict each
//! other (a dispatch of a token that was never recorded, a CPU span on a thread that
//! does not exist). The analyses never panic on such input, but their numbers would
//! be wrong without saying so; readers refuse the file instead, naming the field.
//!
//! Spans that end before they start are not inconsistencies: they are flagged
//! timestamps, counted and left out by the analyses.

use std::collections::HashSet;

use crate::Profile;

/// The first inconsistent field found: its path (`dispatches[17].token`) and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{field}`: {message}")]
pub struct Inconsistency {
    pub field: String,
    pub message: String,
}

fn bad(field: String, message: String) -> Result<(), Inconsistency> {
    Err(Inconsistency { field, message })
}

/// Checks `p` (see the module docs).
pub fn check(p: &Profile) -> Result<(), Inconsistency> {
    let mut tokens = HashSet::with_capacity(p.tokens.len());
    for (i, t) in p.tokens.iter().enumerate() {
        if !tokens.insert(t.index) {
            return bad(
                format!("tokens[{i}].index"),
                format!("token {} is recorded twice", t.index),
            );
        }
    }
    // Events come grouped by token: check membership only when the token changes.
    let mut last = None;
    for (i, d) in p.dispatches.iter().enumerate() {
        if last != Some(d.token) {
            if !tokens.contains(&d.token) {
                return bad(
                    format!("dispatches[{i}].token"),
                    format!("token {} has no entry in `tokens`", d.token),
                );
            }
            last = Some(d.token);
        }
    }
    let mut last = None;
    for (i, s) in p.passes.iter().enumerate() {
        if last != Some(s.token) {
            if !tokens.contains(&s.token) {
                return bad(
                    format!("passes[{i}].token"),
                    format!("token {} has no entry in `tokens`", s.token),
                );
            }
            last = Some(s.token);
        }
    }
    for (i, s) in p.cpu_spans.iter().enumerate() {
        if !p.threads.is_empty() && s.thread as usize >= p.threads.len() {
            return bad(
                format!("cpu_spans[{i}].thread"),
                format!(
                    "thread {} but `threads` names {}",
                    s.thread,
                    p.threads.len()
                ),
            );
        }
        if s.end_ns < s.start_ns {
            return bad(
                format!("cpu_spans[{i}].end_ns"),
                format!(
                    "ends at {} ns, before it starts ({} ns)",
                    s.end_ns, s.start_ns
                ),
            );
        }
    }
    for (i, b) in p.buffers.iter().enumerate() {
        if let (Some(c), Some(d)) = (b.created_token, b.dropped_token) {
            if d < c {
                return bad(
                    format!("buffers[{i}].dropped_token"),
                    format!("dropped in token {d}, before it was created (token {c})"),
                );
            }
        }
    }
    if let Some((i, buffer)) = p.graph.as_ref().and_then(|g| g.dangling_binding()) {
        return bad(
            format!("graph.dispatches[{i}]"),
            format!(
                "binds buffer {buffer}, but `graph.buffers` has {}",
                p.graph.as_ref().map_or(0, |g| g.buffers.len())
            ),
        );
    }
    Ok(())
}
