//! Per-layer breakdown: GPU time per token of each section of the decoder graph
//! (`embed`, `L0`..`Ln`, `head`: one compute pass each when passes are timed; with
//! dispatch spans, a layer's dispatches by their layer number, the rest by their pass).
//!
//! A section's time in one token comes from its pass span when timed (it includes
//! the gaps between dispatches, which is what the layer costs); otherwise from the
//! sum of its dispatch spans (timing `dispatch` without pass spans). A token counts
//! only when every span of the section is valid in it, since a partial sum would
//! understate the layer. The row reports the median over the tokens that count.

use std::collections::{BTreeMap, HashMap};

use super::per_token::TokenSet;
use gpuscope_trace::stats::{percentile, Summary};
use gpuscope_trace::Profile;

/// Where a section's time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LayerTimeSource {
    PassSpans,
    DispatchSpans,
    /// Sampled timing's estimate (see [`super::sampled`]).
    Estimated,
}

/// One section of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerRow {
    /// Pass name, e.g. `embed`, `L3`, `head`.
    pub name: String,
    pub layer: Option<u32>,
    /// Median GPU time per token, in ns; `None` when no token of it was timed.
    pub gpu_ns_median: Option<u64>,
    /// The distribution the median comes from (p10–p90 and count).
    pub gpu_ns: Option<Summary>,
    pub source: Option<LayerTimeSource>,
    /// Tokens whose time was valid and entered the median.
    pub tokens_timed: u32,
}

/// A section and its median time, for the extremes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamedTime {
    pub name: String,
    pub gpu_ns: u64,
}

/// The fastest, median and slowest transformer layer (rows with a `layer`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LayerExtremes {
    pub min: NamedTime,
    /// Nearest-rank median layer (see [`gpuscope_trace::stats`]).
    pub median: NamedTime,
    pub max: NamedTime,
}

/// Sections in graph order.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerBreakdown {
    pub rows: Vec<LayerRow>,
    /// `None` when no transformer layer was timed.
    pub extremes: Option<LayerExtremes>,
}

impl LayerBreakdown {
    /// Rows that are transformer layers (have a layer number).
    pub fn layer_rows(&self) -> impl Iterator<Item = &LayerRow> {
        self.rows.iter().filter(|r| r.layer.is_some())
    }
}

/// Per token: the summed time, or `None` once any span of the section was invalid.
type PerToken = BTreeMap<u32, Option<u64>>;

#[derive(Default)]
struct Section {
    name: String,
    layer: Option<u32>,
    pass_ns: PerToken,
    dispatch_ns: PerToken,
}

fn add(per_token: &mut PerToken, token: u32, ns: Option<u64>) {
    let e = per_token.entry(token).or_insert(Some(0));
    // Saturating: a hostile file's spans can sum past u64 (fuzzing found it).
    *e = e.zip(ns).map(|(a, b)| a.saturating_add(b));
}

/// One section's valid times, token by token, as [`layer_breakdown`] takes its median
/// of them (and `diff` compares them between runs).
#[derive(Debug, Clone, PartialEq)]
pub struct SectionSamples {
    pub name: String,
    pub layer: Option<u32>,
    pub source: Option<LayerTimeSource>,
    /// `(token, ns)` for every token whose time in the section was valid, in token order.
    pub per_token: Vec<(u32, u64)>,
}

/// Groups pass and dispatch spans of every token by section.
pub fn layer_breakdown(p: &Profile) -> LayerBreakdown {
    layer_breakdown_of(p, &TokenSet::all(p))
}

/// Groups pass and dispatch spans of the tokens in `tokens` by section (sections are
/// named from every token, so the rows are the same whichever tokens are used).
pub fn layer_breakdown_of(p: &Profile, tokens: &TokenSet) -> LayerBreakdown {
    let rows: Vec<LayerRow> = section_samples_of(p, tokens).into_iter().map(row).collect();
    LayerBreakdown {
        extremes: extremes(&rows),
        rows,
    }
}

/// Every section of the graph, in graph order, with its valid per-token times.
pub fn section_samples(p: &Profile) -> Vec<SectionSamples> {
    section_samples_of(p, &TokenSet::all(p))
}

/// [`section_samples`] over the tokens in `tokens` only.
pub fn section_samples_of(p: &Profile, tokens: &TokenSet) -> Vec<SectionSamples> {
    let mut sections: Vec<Section> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut section_of = |sections: &mut Vec<Section>, name: &str, layer: Option<u32>| {
        if let Some(&i) = by_name.get(name) {
            return i;
        }
        sections.push(Section {
            name: name.to_string(),
            layer,
            ..Default::default()
        });
        by_name.insert(name.to_string(), sections.len() - 1);
        sections.len() - 1
    };
    // A pass holding several layers (a step encoded as one pass) says nothing per layer:
    // then its span is left out and the layers come from dispatch spans.
    let mixed = passes_hold_several_layers(p);
    let mut pass_sections = Vec::with_capacity(p.passes.len());
    let mut dispatches_in_passes = 0u64;
    for s in &p.passes {
        dispatches_in_passes += s.dispatches as u64;
        if mixed {
            continue;
        }
        let i = section_of(&mut sections, &s.name, s.layer);
        pass_sections.push(i);
        if tokens.contains(s.token) {
            add(&mut sections[i].pass_ns, s.token, s.valid_gpu_ns());
        }
    }
    // Dispatch spans are needed only for sections without a timed pass, or for
    // dispatches outside the recorded passes: with every pass timed (the usual case)
    // the walk over every dispatch event is skipped.
    let covered = !mixed
        && dispatches_in_passes == p.dispatches.len() as u64
        && !sections.is_empty()
        && sections
            .iter()
            .all(|s| s.pass_ns.values().any(|v| v.is_some()));
    if !covered {
        let pass_section: HashMap<(u32, u32), usize> = p
            .passes
            .iter()
            .zip(&pass_sections)
            .map(|(s, &i)| ((s.token, s.index), i))
            .collect();
        let mut dispatch_ns = Vec::new();
        let mut place = OutsideLayers::default();
        for d in &p.dispatches {
            // A dispatch of a layer goes to that layer's section (a pass may hold several
            // layers: gpuscope encodes a step as one pass unless it times passes); one
            // without goes to its pass's, to `embed` or `head` when its pass holds the
            // whole step, or to `passN` when the pass was not recorded.
            let outside = place.name(d.token, d.layer);
            let i = match (d.layer, pass_section.get(&(d.token, d.pass))) {
                (Some(l), _) => section_of(&mut sections, &format!("L{l}"), Some(l)),
                (None, _) if mixed => section_of(&mut sections, outside, None),
                (None, Some(&i)) => i,
                (None, None) => section_of(&mut sections, &format!("pass{}", d.pass), None),
            };
            if tokens.contains(d.token) {
                dispatch_ns.push((i, d.token, d.valid_gpu_ns()));
            }
        }
        for (i, token, ns) in dispatch_ns {
            add(&mut sections[i].dispatch_ns, token, ns);
        }
    }
    sections.into_iter().map(samples).collect()
}

/// Where a dispatch outside the layers runs, named as `check` names the sections:
/// `embed` before the token's first layer, `head` after it. Fed the dispatches in
/// order.
#[derive(Default)]
pub(crate) struct OutsideLayers {
    token: Option<u32>,
    seen_layer: bool,
}

impl OutsideLayers {
    pub(crate) fn name(&mut self, token: u32, layer: Option<u32>) -> &'static str {
        if self.token != Some(token) {
            *self = OutsideLayers {
                token: Some(token),
                seen_layer: false,
            };
        }
        self.seen_layer |= layer.is_some();
        if self.seen_layer {
            "head"
        } else {
            "embed"
        }
    }
}

/// Whether a pass of the first token with layers holds dispatches of two layers (the
/// graph is the same every token, so one tells; looking no further keeps this cheap on
/// a profile of a million dispatches; an attached program's first steps may load
/// weights without any layer).
pub(crate) fn passes_hold_several_layers(p: &Profile) -> bool {
    let Some(first) = p
        .dispatches
        .iter()
        .find(|d| d.layer.is_some())
        .map(|d| d.token)
    else {
        return false;
    };
    let mut layer_of: HashMap<u32, u32> = HashMap::new();
    let of_first = p.dispatches.iter().skip_while(|d| d.token != first);
    for d in of_first.take_while(|d| d.token == first) {
        if let Some(l) = d.layer {
            if *layer_of.entry(d.pass).or_insert(l) != l {
                return true;
            }
        }
    }
    false
}

fn samples(s: Section) -> SectionSamples {
    let timed = |m: &PerToken| -> Vec<(u32, u64)> {
        m.iter()
            .filter_map(|(&token, ns)| ns.map(|ns| (token, ns)))
            .collect()
    };
    let (source, per_token) = match (timed(&s.pass_ns), timed(&s.dispatch_ns)) {
        (v, _) if !v.is_empty() => (Some(LayerTimeSource::PassSpans), v),
        (_, v) if !v.is_empty() => (Some(LayerTimeSource::DispatchSpans), v),
        _ => (None, Vec::new()),
    };
    SectionSamples {
        name: s.name,
        layer: s.layer,
        source,
        per_token,
    }
}

fn row(s: SectionSamples) -> LayerRow {
    let gpu_ns = Summary::of(s.per_token.iter().map(|&(_, ns)| ns));
    LayerRow {
        name: s.name,
        layer: s.layer,
        tokens_timed: gpu_ns.map_or(0, |g| g.count as u32),
        gpu_ns_median: gpu_ns.map(|g| g.median),
        gpu_ns,
        source: s.source,
    }
}

pub(super) fn extremes(rows: &[LayerRow]) -> Option<LayerExtremes> {
    let mut timed: Vec<NamedTime> = rows
        .iter()
        .filter(|r| r.layer.is_some())
        .filter_map(|r| {
            r.gpu_ns_median.map(|gpu_ns| NamedTime {
                name: r.name.clone(),
                gpu_ns,
            })
        })
        .collect();
    // Stable: equal times keep graph order.
    timed.sort_by_key(|t| t.gpu_ns);
    let ranks: Vec<u64> = (0..timed.len() as u64).collect();
    let mid = percentile(&ranks, 50.0)? as usize;
    Some(LayerExtremes {
        min: timed.first()?.clone(),
        median: timed[mid].clone(),
        max: timed.last()?.clone(),
    })
}
