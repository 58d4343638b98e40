//! The Markdown results document: snapshots over the fixtures, and its tables well formed.

use gpuscope_report::render::render_markdown;
use gpuscope_trace::Profile;

use gpuscope_trace::fixtures as fixture;

/// Every table row has as many cells as its header, and every table a separator row.
pub fn assert_tables_well_formed(md: &str) {
    let cells = |line: &str| line.replace("\\|", "").matches('|').count();
    let lines: Vec<&str> = md.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].starts_with('|') {
            let n = cells(lines[i]);
            let sep = lines.get(i + 1).copied().unwrap_or("");
            assert!(
                sep.starts_with('|') && sep.chars().all(|c| "|-: ".contains(c)),
                "table at line {} has no separator row: {sep:?}",
                i + 1
            );
            while i < lines.len() && lines[i].starts_with('|') {
                assert_eq!(cells(lines[i]), n, "line {}: {:?}", i + 1, lines[i]);
                i += 1;
            }
            assert!(
                lines.get(i).is_none_or(|l| l.is_empty()),
                "a table ends with a blank line (line {})",
                i + 1
            );
        }
        i += 1;
    }
}

fn check(name: &str, p: &Profile) {
    let md = render_markdown(p);
    assert_tables_well_formed(&md);
    // Outside code spans (which GitHub shows as they are).
    let prose: String = md.split('`').step_by(2).collect();
    let tag = prose
        .match_indices('<')
        .any(|(i, _)| prose[i + 1..].starts_with(|c: char| c.is_ascii_alphabetic() || c == '/'));
    assert!(!tag, "no raw HTML: GitHub renders the tables as they are");
    insta::assert_snapshot!(name, md);
}

#[test]
fn small() {
    check("small", &fixture::small());
}

#[test]
fn small_with_ceilings() {
    let md = render_markdown(&fixture::small_with_ceilings());
    assert!(md.contains("| # | opportunity | saved per token | basis |"));
    check("small_with_ceilings", &fixture::small_with_ceilings());
}

#[test]
fn untimed() {
    let md = render_markdown(&fixture::untimed());
    assert!(md.contains("GPU time per layer unknown"));
    check("untimed", &fixture::untimed());
}

#[test]
fn format_1_0_file() {
    let p = gpuscope_trace::io::load_profile(&fixture::data("v1_0/profile.json")).unwrap();
    check("v1_0", &p);
}

#[test]
fn cells_with_pipes_are_escaped() {
    let mut p = fixture::small();
    p.workload.settings.insert("gemv".into(), "a|b".into());
    let md = render_markdown(&p);
    assert!(md.contains("gemv = a\\|b"));
    assert_tables_well_formed(&md);
}
