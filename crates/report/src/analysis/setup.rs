//! Where setup time went: the CPU spans outside any step (the decoder's phases, such
//! as `setup: weights (repack and upload)`, and each creation inside them), summed by
//! name. A short run on a slow adapter spends most of its wall time here (lavapipe:
//! seconds of pipeline compilation), which the per-token report never shows.

use std::collections::HashMap;

use gpuscope_trace::Profile;

/// One kind of setup span, summed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetupPart {
    pub name: String,
    pub count: u64,
    pub ns: u64,
}

/// The setup spans by name, longest total first. Phases (`setup: ...`) hold creations,
/// so the parts overlap; each is what its name says.
pub fn setup_parts(p: &Profile) -> Vec<SetupPart> {
    let mut at: HashMap<&str, usize> = HashMap::new();
    let mut parts: Vec<SetupPart> = Vec::new();
    for s in p.cpu_spans.iter().filter(|s| s.token.is_none()) {
        let i = *at.entry(s.name.as_str()).or_insert_with(|| {
            parts.push(SetupPart {
                name: s.name.clone(),
                count: 0,
                ns: 0,
            });
            parts.len() - 1
        });
        parts[i].count += 1;
        parts[i].ns = parts[i]
            .ns
            .saturating_add(s.end_ns.saturating_sub(s.start_ns));
    }
    parts.sort_by(|a, b| b.ns.cmp(&a.ns).then_with(|| a.name.cmp(&b.name)));
    parts
}
