//! The diff document as plain text: headings underlined by a blank line, tables with
//! padded columns.

use super::{document, Align, Block};
use crate::analysis::diff::Diff;
use crate::analysis::gate::GateResult;

/// The diff (and gate result) as text for a terminal.
pub fn render_diff_text(d: &Diff, gate: Option<&GateResult>) -> String {
    let mut out = String::new();
    for (i, block) in document(d, gate).iter().enumerate() {
        match block {
            Block::Heading(h) => {
                if i > 0 {
                    out.push('\n');
                }
                out.push_str(h);
                out.push('\n');
            }
            Block::Line(l) => {
                out.push_str("  ");
                out.push_str(l);
                out.push('\n');
            }
            Block::Warning(w) => {
                out.push_str(w);
                out.push('\n');
            }
            Block::Table { columns, rows } => table(&mut out, columns, rows),
        }
    }
    out
}

fn table(out: &mut String, columns: &[(String, Align)], rows: &[Vec<String>]) {
    let width = |i: usize| {
        rows.iter()
            .map(|r| r[i].chars().count())
            .chain([columns[i].0.chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns.len()).map(width).collect();
    let line = |cells: Vec<&str>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(columns)
            .zip(&widths)
            .map(|((c, (_, align)), &w)| match align {
                Align::Left => format!("{c:<w$}"),
                Align::Right => format!("{c:>w$}"),
            })
            .collect();
        format!("  {}", padded.join("  ").trim_end())
    };
    out.push_str(&line(columns.iter().map(|(n, _)| n.as_str()).collect()));
    out.push('\n');
    for r in rows {
        out.push_str(&line(r.iter().map(String::as_str).collect()));
        out.push('\n');
    }
}
