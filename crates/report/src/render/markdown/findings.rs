//! Findings (the bottleneck and the checklist, with their evidence) and the ranked
//! opportunities.

use std::fmt::Write;

use super::{cell, item_word};
use crate::analysis::{Analysis, ItemStatus};
use crate::render::units::duration;

pub(super) fn findings(out: &mut String, a: &Analysis) {
    md!(out, "## Findings");
    md!(out);
    let b = &a.bottleneck;
    md!(out, "**Bottleneck:** {}", cell(&b.headline));
    md!(out);
    for e in &b.evidence {
        md!(out, "- {}", cell(e));
    }
    if !b.evidence.is_empty() {
        md!(out);
    }
    let items = &a.checklist.items;
    md!(
        out,
        "### Checklist ({} of {} items need attention)",
        a.checklist.warnings().count(),
        items.len()
    );
    md!(out);
    md!(out, "| item | status | finding |");
    md!(out, "|---|---|---|");
    for i in items {
        md!(
            out,
            "| {} | {} | {} |",
            cell(i.title),
            item_word(i.status),
            cell(&i.summary)
        );
    }
    md!(out);
    for i in items.iter().filter(|i| i.status == ItemStatus::Warn) {
        md!(out, "#### {}", cell(i.title));
        md!(out);
        md!(out, "{}", cell(&i.summary));
        md!(out);
        for e in &i.evidence {
            md!(out, "- {}", cell(e));
        }
        if let Some(next) = &i.next {
            md!(out, "- next: `{}`", next.replace('`', "'"));
        }
        md!(out);
    }
}

pub(super) fn opportunities(out: &mut String, a: &Analysis) {
    md!(out, "## Opportunities");
    md!(out);
    if a.opportunities.is_empty() {
        md!(out, "None found.");
        md!(out);
        return;
    }
    md!(out, "Ranked by the estimated time saved per token.");
    md!(out);
    md!(out, "| # | opportunity | saved per token | basis |");
    md!(out, "|--:|---|--:|---|");
    for (n, o) in a.opportunities.iter().enumerate() {
        md!(
            out,
            "| {} | {} | {} | {} |",
            n + 1,
            cell(&o.what),
            o.saved_ns.map_or("unknown".into(), duration),
            cell(&o.basis)
        );
    }
    md!(out);
}
