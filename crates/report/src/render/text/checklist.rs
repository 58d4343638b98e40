//! The checklist: one line per item, evidence and the next command under warnings.

use std::fmt::Write;

use crate::analysis::{Analysis, ItemStatus};

pub(super) fn section(out: &mut String, a: &Analysis) {
    emit!(out);
    let warnings = a.checklist.warnings().count();
    emit!(
        out,
        "Checklist ({} of {} items need attention)",
        warnings,
        a.checklist.items.len()
    );
    for item in &a.checklist.items {
        let status = match item.status {
            ItemStatus::Ok => "ok",
            ItemStatus::Warn => "WARN",
            ItemStatus::Unknown => "?",
        };
        emit!(out, "  {status:<4}  {}: {}", item.title, item.summary);
        for e in &item.evidence {
            emit!(out, "          - {e}");
        }
        if let Some(next) = &item.next {
            emit!(out, "          next: {next}");
        }
    }
}
