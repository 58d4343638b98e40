//! The diff document as GitHub-flavoured Markdown (a CI job's summary, a PR comment).

use super::{document, Align, Block};
use crate::analysis::diff::Diff;
use crate::analysis::gate::GateResult;

/// The diff (and gate result) as Markdown.
pub fn render_diff_md(d: &Diff, gate: Option<&GateResult>) -> String {
    let mut out = String::new();
    for (i, block) in document(d, gate).iter().enumerate() {
        match block {
            Block::Heading(h) => {
                let level = if i == 0 { "#" } else { "##" };
                out.push_str(&format!("{level} {h}\n\n"));
            }
            Block::Line(l) => out.push_str(&format!("{}\n\n", escape(l))),
            Block::Warning(w) => out.push_str(&format!("> **{}**\n\n", escape(w))),
            Block::Table { columns, rows } => {
                let cells = |v: Vec<&str>| format!("| {} |\n", v.join(" | "));
                out.push_str(&cells(columns.iter().map(|(n, _)| n.as_str()).collect()));
                out.push_str(&cells(
                    columns
                        .iter()
                        .map(|(_, a)| match a {
                            Align::Left => ":---",
                            Align::Right => "---:",
                        })
                        .collect(),
                ));
                for r in rows {
                    let escaped: Vec<String> = r.iter().map(|c| escape(c)).collect();
                    out.push_str(&cells(escaped.iter().map(String::as_str).collect()));
                }
                out.push('\n');
            }
        }
    }
    out
}

/// Keeps table cells and prose literal: `|` would end a cell, `<` may start HTML.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('<', "&lt;")
}
