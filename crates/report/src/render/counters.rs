//! The counters table, as cells: the text and Markdown reports lay out the same rows.

use crate::analysis::CounterReport;
use gpuscope_trace::Counters;

/// One row: a counter in the first token and over the tokens after it; `-` where
/// unknown.
pub struct CounterCells {
    pub name: &'static str,
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
            name,
            first: value(c.first, i),
            median: value(c.steady_median, i),
            spread: match (c.steady_p10, c.steady_p90) {
                (Some(lo), Some(hi)) => format!("{}{dash}{}", lo.fields()[i].1, hi.fields()[i].1),
                _ => "-".into(),
            },
            max: value(c.steady_max, i),
        })
        .collect()
}
