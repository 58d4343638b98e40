//! The counters table, as cells: the text and Markdown reports lay out the same rows.

use crate::analysis::counters::OtherCounter;
use crate::analysis::CounterReport;
use gpuscope_trace::Counters;

/// One row: a counter in the first token and over the tokens after it; `-` where
/// unknown.
pub struct CounterCells {
    pub name: String,
    pub first: String,
    pub median: String,
    /// `p10{dash}p90`.
    pub spread: String,
    pub max: String,
}

/// One row per counter, in [`Counters::fields`] order; `dash` joins p10 and p90.
pub fn counter_cells(c: &CounterReport, dash: &str) -> Vec<CounterCells> {
    let value = |x: Option<Counters>, i: usize| {
        x.map_or_else(|| "-".to_string(), |x| x.fields()[i].1.to_string())
    };
    Counters::default()
        .fields()
        .iter()
        .enumerate()
        .map(|(i, (name, _))| CounterCells {
            name: name.to_string(),
            first: value(c.first, i),
            median: value(c.steady_median, i),
            spread: match (c.steady_p10, c.steady_p90) {
                (Some(lo), Some(hi)) => format!("{}{dash}{}", lo.fields()[i].1, hi.fields()[i].1),
                _ => "-".into(),
            },
            max: value(c.steady_max, i),
        })
        .chain(c.other.iter().map(|o| other_cells(o, dash)))
        .collect()
}

fn other_cells(o: &OtherCounter, dash: &str) -> CounterCells {
    let value = |x: Option<u64>| x.map_or_else(|| "-".to_string(), |x| x.to_string());
    CounterCells {
        name: o.name.clone(),
        first: o.first.to_string(),
        median: value(o.median),
        spread: match (o.p10, o.p90) {
            (Some(lo), Some(hi)) => format!("{lo}{dash}{hi}"),
            _ => "-".into(),
        },
        max: value(o.max),
    }
}
