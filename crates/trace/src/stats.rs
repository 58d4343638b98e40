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

/// Count, extremes, median and the 10th and 90th percentiles of a set of values: a
/// median is never shown without its spread (p10–p90) and its count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    pub count: usize,
    pub min: u64,
    pub p10: u64,
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
            p10: percentile(&v, 10.0)?,
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

/// The median absolute deviation of `values` around `center` (nearest-rank median),
/// or `None` when there are none. Robust z-scores divide by `1.4826 * MAD`, which
/// equals the standard deviation for normally distributed values.
pub fn mad(values: impl IntoIterator<Item = u64>, center: u64) -> Option<u64> {
    median(values.into_iter().map(|v| v.abs_diff(center)))
}

/// The nearest-rank `p`-th percentile of unsorted `f64` values that are all finite,
/// or `None` when there are none.
pub fn percentile_f64(values: &mut [f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let rank = (p.clamp(0.0, 100.0) / 100.0 * n as f64).ceil() as usize;
    Some(values[rank.clamp(1, n) - 1])
}

/// The sum of `values`, saturating at `u64::MAX`: times and byte counts come from files
/// a hostile user may write, and their sum must not overflow (fuzzing found one that
/// did).
pub fn saturating_sum(values: impl IntoIterator<Item = u64>) -> u64 {
    values.into_iter().fold(0, u64::saturating_add)
}
