//! The memory section: GPU buffers by kind, the peak, the device's limits, churn.

use std::fmt::Write;

use super::super::units::bytes;
use crate::analysis::Analysis;
use gpuscope_trace::Profile;

pub(super) fn section(out: &mut String, p: &Profile, a: &Analysis) {
    emit!(out);
    let Some(m) = &a.memory else {
        emit!(
            out,
            "Memory: no buffer records in this profile (recorded from format 1.3 on)"
        );
        return;
    };
    emit!(
        out,
        "Memory: {} in {} buffers; peak {} live{}",
        bytes(m.total.bytes),
        m.total.buffers,
        bytes(m.peak_bytes),
        m.peak_token
            .map_or(" (after setup)".into(), |t| format!(" (token {t})"))
    );
    let kinds: Vec<String> = m
        .by_kind
        .iter()
        .map(|(k, t)| format!("{} {} ({})", k.as_str(), bytes(t.bytes), t.buffers))
        .collect();
    emit!(out, "  by kind: {}", kinds.join(", "));
    if let Some(l) = &m.largest_buffer {
        emit!(
            out,
            "  largest buffer {} {}{}",
            l.label,
            bytes(l.bytes),
            of_limit(l, "max_buffer_size")
        );
    }
    if let Some(l) = &m.largest_binding {
        emit!(
            out,
            "  largest {} {} {}{}",
            if m.binding_from_graph {
                "binding"
            } else {
                "storage buffer (bindings not recorded)"
            },
            l.label,
            bytes(l.bytes),
            of_limit(l, "max_storage_buffer_binding_size")
        );
    }
    let c = &m.churn;
    if c.created == 0 && c.dropped == 0 {
        emit!(
            out,
            "  churn: nothing created or released after setup ({} tokens)",
            p.tokens.len()
        );
    } else {
        emit!(
            out,
            "  churn: {} buffers ({}) created and {} ({}) released after setup, in {} of {} tokens ({:.2} creations per token){}",
            c.created,
            bytes(c.created_bytes),
            c.dropped,
            bytes(c.dropped_bytes),
            c.tokens_with_creation,
            m.tokens,
            c.created_per_token,
            c.first
                .as_ref()
                .map_or(String::new(), |(l, t)| format!("; first: {l} in token {t}"))
        );
    }
}

/// ` = P% of LIMIT N`, or nothing when the device's limit was not recorded.
fn of_limit(l: &crate::analysis::memory::Largest, limit: &str) -> String {
    match l.percent_of_limit() {
        Some(pct) if l.limit > 0 => format!(
            " = {} of {limit} {}",
            super::super::units::percent(Some(pct)),
            bytes(l.limit)
        ),
        _ => format!(" ({limit} not recorded)"),
    }
}
