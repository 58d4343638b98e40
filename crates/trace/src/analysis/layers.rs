//! Per-layer breakdown: GPU time per token of each section of the decoder graph
//! (`embed`, `L0`..`Ln`, `head`; one compute pass each).
//!
//! A section's time in one token comes from its pass span when timed (it includes
//! the gaps between dispatches, which is what the layer costs); otherwise from the
//! sum of its dispatch spans (timing `dispatch` without pass spans). A token counts
//! only when every span of the section is valid in it, since a partial sum would
//! understate the layer. The row reports the median over the tokens that count.

use std::collections::{BTreeMap, HashMap};

use super::stats::{median, percentile};
use crate::Profile;

/// Where a section's time came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerTimeSource {
    PassSpans,
    DispatchSpans,
}

/// One section of the graph.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerRow {
    /// Pass name, e.g. `embed`, `L3`, `head`.
    pub name: String,
    pub layer: Option<u32>,
    /// Median GPU time per token, in ns; `None` when no token of it was timed.
    pub gpu_ns_median: Option<u64>,
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
    /// Nearest-rank median layer (see [`super::stats`]).
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
    *e = e.zip(ns).map(|(a, b)| a + b);
}

/// Groups pass and dispatch spans by section.
pub fn layer_breakdown(p: &Profile) -> LayerBreakdown {
    let mut sections: Vec<Section> = Vec::new();
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut section_of = |name: String, layer: Option<u32>| -> usize {
        *by_name.entry(name.clone()).or_insert_with(|| {
            sections.push(Section {
                name,
                layer,
                ..Default::default()
            });
            sections.len() - 1
        })
    };
    let mut pass_section: HashMap<(u32, u32), usize> = HashMap::new();
    let mut pass_ns = Vec::new();
    for s in &p.passes {
        let i = section_of(s.name.clone(), s.layer);
        pass_section.insert((s.token, s.index), i);
        pass_ns.push((i, s.token, s.valid_gpu_ns()));
    }
    let mut dispatch_ns = Vec::new();
    for d in &p.dispatches {
        // A dispatch whose pass was not recorded is placed by its layer.
        let i = match pass_section.get(&(d.token, d.pass)) {
            Some(&i) => i,
            None => match d.layer {
                Some(l) => section_of(format!("L{l}"), Some(l)),
                None => section_of(format!("pass{}", d.pass), None),
            },
        };
        dispatch_ns.push((i, d.token, d.valid_gpu_ns()));
    }
    for (i, token, ns) in pass_ns {
        add(&mut sections[i].pass_ns, token, ns);
    }
    for (i, token, ns) in dispatch_ns {
        add(&mut sections[i].dispatch_ns, token, ns);
    }
    let rows: Vec<LayerRow> = sections.into_iter().map(row).collect();
    LayerBreakdown {
        extremes: extremes(&rows),
        rows,
    }
}

fn row(s: Section) -> LayerRow {
    let timed = |m: &PerToken| m.values().flatten().copied().collect::<Vec<u64>>();
    let (source, values) = match (timed(&s.pass_ns), timed(&s.dispatch_ns)) {
        (v, _) if !v.is_empty() => (Some(LayerTimeSource::PassSpans), v),
        (_, v) if !v.is_empty() => (Some(LayerTimeSource::DispatchSpans), v),
        _ => (None, Vec::new()),
    };
    LayerRow {
        name: s.name,
        layer: s.layer,
        tokens_timed: values.len() as u32,
        gpu_ns_median: median(values),
        source,
    }
}

fn extremes(rows: &[LayerRow]) -> Option<LayerExtremes> {
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
