//! Per-token sums over the dispatch events, in one pass.
//!
//! Several analyses need, for each token, its dispatches' declared bytes, FLOPs and
//! CPU encode time. Filtering the events once per token is quadratic (a profile of a
//! million dispatches has thousands of tokens); this walks the events once.

use std::collections::HashMap;

use gpuscope_trace::Profile;

/// Sums over one token's dispatch events.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TokenTotals {
    pub dispatches: u64,
    pub bytes: u64,
    pub flops: u64,
    pub cpu_encode_ns: u64,
}

/// Where each token index sits in `Profile::tokens`.
pub fn token_positions(p: &Profile) -> HashMap<u32, usize> {
    p.tokens
        .iter()
        .enumerate()
        .map(|(i, t)| (t.index, i))
        .collect()
}

/// One [`TokenTotals`] per entry of `Profile::tokens`, in the same order. Events of a
/// token that has no record are ignored.
pub fn token_totals(p: &Profile) -> Vec<TokenTotals> {
    let mut totals = vec![TokenTotals::default(); p.tokens.len()];
    let position = token_positions(p);
    // Events come grouped by token: look the position up only when the token changes.
    let mut last: Option<(u32, Option<usize>)> = None;
    for d in &p.dispatches {
        let pos = match last {
            Some((token, pos)) if token == d.token => pos,
            _ => {
                let pos = position.get(&d.token).copied();
                last = Some((d.token, pos));
                pos
            }
        };
        if let Some(t) = pos.map(|i| &mut totals[i]) {
            t.dispatches += 1;
            t.bytes = t.bytes.saturating_add(d.bytes);
            t.flops = t.flops.saturating_add(d.flops);
            t.cpu_encode_ns = t.cpu_encode_ns.saturating_add(d.cpu_encode_ns);
        }
    }
    totals
}

/// A set of token indices with a constant-time membership test, for filtering
/// millions of events by token.
#[derive(Debug, Clone)]
pub struct TokenSet {
    /// By token index, when indices are small enough to index a vector.
    dense: Vec<bool>,
    /// Otherwise (a hand-made file with huge indices).
    sparse: std::collections::HashSet<u32>,
    len: usize,
}

/// Token indices up to this are looked up in a vector.
const DENSE_LIMIT: u32 = 1 << 24;

impl TokenSet {
    pub fn new(indices: impl IntoIterator<Item = u32>) -> TokenSet {
        let indices: Vec<u32> = indices.into_iter().collect();
        let mut set = TokenSet {
            dense: Vec::new(),
            sparse: Default::default(),
            len: 0,
        };
        if indices.iter().all(|&i| i < DENSE_LIMIT) {
            let size = indices.iter().max().map_or(0, |&m| m as usize + 1);
            set.dense = vec![false; size];
            for i in indices {
                set.len += usize::from(!set.dense[i as usize]);
                set.dense[i as usize] = true;
            }
        } else {
            set.sparse = indices.into_iter().collect();
            set.len = set.sparse.len();
        }
        set
    }

    /// Every token of `p`.
    pub fn all(p: &Profile) -> TokenSet {
        TokenSet::new(p.tokens.iter().map(|t| t.index))
    }

    pub fn contains(&self, token: u32) -> bool {
        if self.sparse.is_empty() {
            self.dense.get(token as usize).copied().unwrap_or(false)
        } else {
            self.sparse.contains(&token)
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
