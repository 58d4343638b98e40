//! Consistency of a profile read from a file: fields that parse but contradict each
//! other (a dispatch of a token that was never recorded, a CPU span on a thread that
//! does not exist). The analyses never panic on such input, but their numbers would
//! be wrong without saying so; readers refuse the file instead, naming the field.
//!
//! Spans that end before they start are not inconsistencies: they are flagged
//! timestamps, counted and left out by the analyses.
//!
//! Indices that size a table downstream (a dispatch's pass, a CPU span's thread) are
//! bounded by what the file holds, so no reader or renderer allocates for more than the
//! input paid for: a pass index is below the token's count of pass and dispatch events,
//! a thread index below the named threads (or, with none named, the spans).

use std::collections::{HashMap, HashSet};

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

/// Every pass index (of a pass or a dispatch) below its token's count of pass and
/// dispatch events: a pass holds at least one of them, so a larger index names a pass the
/// file does not describe (and would size a per-pass table by the index alone).
fn check_pass_indices(p: &Profile) -> Result<(), Inconsistency> {
    let mut events: HashMap<u32, usize> = HashMap::new();
    let tokens = p.passes.iter().map(|s| s.token);
    for t in tokens.chain(p.dispatches.iter().map(|d| d.token)) {
        *events.entry(t).or_default() += 1;
    }
    let over = |token: u32, pass: u32| pass as usize >= events.get(&token).copied().unwrap_or(0);
    for (i, s) in p.passes.iter().enumerate() {
        if over(s.token, s.index) {
            return bad(
                format!("passes[{i}].index"),
                format!(
                    "pass {} of token {}, which has {} pass and dispatch events",
                    s.index, s.token, events[&s.token]
                ),
            );
        }
    }
    for (i, d) in p.dispatches.iter().enumerate() {
        if over(d.token, d.pass) {
            return bad(
                format!("dispatches[{i}].pass"),
                format!(
                    "pass {} of token {}, which has {} pass and dispatch events",
                    d.pass, d.token, events[&d.token]
                ),
            );
        }
    }
    Ok(())
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
    check_pass_indices(p)?;
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
        let (limit, what) = if p.threads.is_empty() {
            (p.cpu_spans.len(), "the profile names no thread and has")
        } else {
            (p.threads.len(), "`threads` names")
        };
        if s.thread as usize >= limit {
            let unit = if p.threads.is_empty() { "spans" } else { "" };
            return bad(
                format!("cpu_spans[{i}].thread"),
                format!("thread {} but {what} {limit} {unit}", s.thread)
                    .trim_end()
                    .to_string(),
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
