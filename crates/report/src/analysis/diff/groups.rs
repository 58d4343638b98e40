//! Dispatches grouped by op and by label in one pass: calls, declared bytes and FLOPs,
//! and the samples a [`TimeDiff`] compares.

use std::collections::HashMap;

use super::{DiffOptions, SampleUnit, TimeDiff};
use gpuscope_trace::Profile;

/// Fewer complete tokens than this on either side, and a row compares dispatch spans
/// instead (a rank test on a handful of samples has no power).
const MIN_TOKEN_SAMPLES: usize = 5;

/// A token's state in one group: no call yet, every call timed, or some call untimed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Slot {
    NoCall,
    Timed(u64),
    Untimed,
}

/// The dispatches of one op or one label.
pub(super) struct Group {
    pub op: String,
    pub calls: u64,
    pub bytes: u64,
    pub flops: u64,
    /// Per token (in the profile's token order): the summed time when every call was
    /// validly timed.
    per_token: Vec<Slot>,
    /// Every valid span of the steady tokens.
    spans: Vec<u64>,
}

impl Group {
    fn new(op: &str, tokens: usize) -> Group {
        Group {
            op: op.to_string(),
            calls: 0,
            bytes: 0,
            flops: 0,
            per_token: vec![Slot::NoCall; tokens],
            spans: Vec::new(),
        }
    }

    /// The time of each steady token in which every call was timed.
    fn token_samples(&self) -> Vec<u64> {
        let skip = usize::from(self.per_token.len() > 1);
        self.per_token[skip..]
            .iter()
            .filter_map(|s| match s {
                Slot::Timed(ns) => Some(*ns),
                _ => None,
            })
            .collect()
    }
}

/// A profile's dispatches by op and by label, each in first-seen order.
pub(super) struct Grouped {
    /// Tokens in the profile (the denominator of per-token figures).
    pub tokens: usize,
    pub ops: Vec<(String, Group)>,
    pub labels: Vec<(String, Group)>,
}

pub(super) fn group_dispatches(p: &Profile) -> Grouped {
    let tokens = p.tokens.len();
    let slot_of: HashMap<u32, usize> = p
        .tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.index, i))
        .collect();
    let mut ops = Index::default();
    let mut labels = Index::default();
    for d in &p.dispatches {
        let slot = slot_of.get(&d.token).copied();
        let ns = d.valid_gpu_ns();
        for g in [
            ops.get(&d.op, &d.op, tokens),
            labels.get(&d.label, &d.op, tokens),
        ] {
            g.calls += 1;
            g.bytes = g.bytes.saturating_add(d.bytes);
            g.flops = g.flops.saturating_add(d.flops);
            let Some(slot) = slot else { continue };
            g.per_token[slot] = match (g.per_token[slot], ns) {
                (Slot::NoCall, Some(ns)) => Slot::Timed(ns),
                (Slot::Timed(sum), Some(ns)) => Slot::Timed(sum.saturating_add(ns)),
                _ => Slot::Untimed,
            };
            if let (Some(ns), true) = (ns, slot > 0 || tokens == 1) {
                g.spans.push(ns);
            }
        }
    }
    Grouped {
        tokens: tokens.max(1),
        ops: ops.into_rows(),
        labels: labels.into_rows(),
    }
}

/// Groups by name, borrowing names from the profile while counting.
#[derive(Default)]
struct Index<'p> {
    position: HashMap<&'p str, usize>,
    rows: Vec<(&'p str, Group)>,
}

impl<'p> Index<'p> {
    fn get(&mut self, name: &'p str, op: &str, tokens: usize) -> &mut Group {
        let rows = &mut self.rows;
        let i = *self.position.entry(name).or_insert_with(|| {
            rows.push((name, Group::new(op, tokens)));
            rows.len() - 1
        });
        &mut self.rows[i].1
    }

    fn into_rows(self) -> Vec<(String, Group)> {
        self.rows
            .into_iter()
            .map(|(name, g)| (name.to_string(), g))
            .collect()
    }
}

fn spans(g: Option<&Group>) -> &[u64] {
    g.map(|g| g.spans.as_slice()).unwrap_or_default()
}

/// Compares one group across the runs: per-token samples when both runs have enough
/// complete tokens, else per-dispatch spans.
pub(super) fn compare(base: Option<&Group>, new: Option<&Group>, o: &DiffOptions) -> TimeDiff {
    let tokens = |g: Option<&Group>| g.map(Group::token_samples).unwrap_or_default();
    let (tb, tn) = (tokens(base), tokens(new));
    let enough = tb.len() >= MIN_TOKEN_SAMPLES && tn.len() >= MIN_TOKEN_SAMPLES;
    let (sb, sn) = (spans(base), spans(new));
    if enough || sb.is_empty() || sn.is_empty() {
        TimeDiff::of(&tb, &tn, SampleUnit::Token, o)
    } else {
        TimeDiff::of(sb, sn, SampleUnit::Dispatch, o)
    }
}
