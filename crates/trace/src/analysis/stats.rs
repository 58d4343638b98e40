//! Order statistics shared by the analyses.
//!
//! Percentiles use the nearest-rank method: the p-th percentile of n sorted values is
//! the value at rank `ceil(p/100 * n)` (1-based, at least 1). It always returns one of
//! the measured values, never an interpolation between two, so a reported median is a
//! time some token actually took. For an even count the median is the lower middle
//! value: the median of `[1, 2, 3, 4]` is 2.

/// The nearest-rank `p`-th percentile (`0 <= p <= 100`) of `sorted` (ascending), or
/// `None` when it is empty.
pub fn percentile(sorted: &[u64], p: f64) -> Option<u64> {
    if sorted.is_empty() {
        return None;
    }
    let n = sorted.len();
    let rank = (p.clamp(0.0, 100.0) / 100.0 * n as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, n) - 1])
}

/// Count, extremes, median and 90th percentile of a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub count: usize,
    pub min: u64,
    pub median: u64,
    pub p90: u64,
    pub max: u64,
}

impl Summary {
    /// `None` when there are no values.
    pub fn of(values: impl IntoIterator<Item = u64>) -> Option<Summary> {
        let mut v: Vec<u64> = values.into_iter().collect();
        v.sort_unstable();
        Some(Summary {
            count: v.len(),
            min: *v.first()?,
            median: percentile(&v, 50.0)?,
            p90: percentile(&v, 90.0)?,
            max: *v.last()?,
        })
    }
}

/// The nearest-rank median of unsorted values.
pub fn median(values: impl IntoIterator<Item = u64>) -> Option<u64> {
    Summary::of(values).map(|s| s.median)
}
