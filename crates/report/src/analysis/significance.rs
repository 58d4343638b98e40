//! Two-sample comparison of timings: is the new run's time different from the base
//! run's, by how much, and how sure are we? Used by [`super::diff`](mod@super::diff); the method and
//! its limits are described in `docs/diff.md`.
//!
//! - **Test:** Mann-Whitney U (Wilcoxon rank-sum), two-sided, with the normal
//!   approximation, a tie correction and a continuity correction. It assumes nothing
//!   about the shape of the distributions, which matters for GPU timings: they are
//!   skewed, often bimodal, with a long tail of preempted or throttled samples.
//! - **Effect:** the Hodges-Lehmann shift, the median of all `new - base` pairwise
//!   differences: the estimator that goes with the rank-sum test. It is robust to
//!   outliers like the median but uses every pair, so it varies less between runs
//!   than a difference of two medians.
//!
//! The shift is found without building the `n·m` differences: a binary search over
//! the shift value, counting the pairs at or below it with one merge-like walk of the
//! two sorted samples, `O((n + m) · 64)`.

use serde::Serialize;

/// The outcome of comparing two samples of durations (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ShiftTest {
    /// Hodges-Lehmann estimate of `new - base`, in ns (the lower median of the pairwise
    /// differences, a difference some pair actually has).
    pub shift_ns: i64,
    /// Two-sided p-value of the Mann-Whitney U test; 1 when every value is equal.
    pub p_value: f64,
}

/// Compares `new` against `base`; `None` when either is empty.
pub fn shift_test(base: &[u64], new: &[u64]) -> Option<ShiftTest> {
    if base.is_empty() || new.is_empty() {
        return None;
    }
    let mut x = base.to_vec();
    let mut y = new.to_vec();
    x.sort_unstable();
    y.sort_unstable();
    Some(ShiftTest {
        shift_ns: hodges_lehmann(&x, &y),
        p_value: mann_whitney_p(&x, &y),
    })
}

/// Two-sided p-value of the Mann-Whitney U test on sorted samples.
fn mann_whitney_p(x: &[u64], y: &[u64]) -> f64 {
    let (n1, n2) = (x.len() as f64, y.len() as f64);
    let n = n1 + n2;
    // Rank sum of y over the merged samples, ties given their average rank; the tie
    // term Σ(t³ - t) shrinks the variance.
    let (mut i, mut j) = (0, 0);
    let mut rank = 1.0;
    let mut rank_sum_y = 0.0;
    let mut tie_term = 0.0;
    while i < x.len() || j < y.len() {
        let v = match (x.get(i), y.get(j)) {
            (Some(&a), Some(&b)) => a.min(b),
            (Some(&a), None) => a,
            (None, Some(&b)) => b,
            (None, None) => unreachable!(),
        };
        let (mut tx, mut ty) = (0.0, 0.0);
        while x.get(i) == Some(&v) {
            tx += 1.0;
            i += 1;
        }
        while y.get(j) == Some(&v) {
            ty += 1.0;
            j += 1;
        }
        let t = tx + ty;
        let average_rank = rank + (t - 1.0) / 2.0;
        rank_sum_y += ty * average_rank;
        tie_term += t * t * t - t;
        rank += t;
    }
    let u = rank_sum_y - n2 * (n2 + 1.0) / 2.0;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)).max(1.0));
    if var <= 0.0 {
        return 1.0;
    }
    let distance = ((u - mean).abs() - 0.5).max(0.0);
    let z = distance / var.sqrt();
    // Two-sided: P(|Z| >= z) = erfc(z / √2).
    libm::erfc(z / std::f64::consts::SQRT_2).min(1.0)
}

/// The lower median of `y[j] - x[i]` over all pairs, for sorted `x` and `y`.
fn hodges_lehmann(x: &[u64], y: &[u64]) -> i64 {
    let pairs = x.len() as u64 * y.len() as u64;
    // Nearest-rank median, as in `stats`: the ceil(pairs / 2)-th smallest difference.
    let k = pairs.div_ceil(2);
    let (mut lo, mut hi) = (
        y[0] as i128 - *x.last().unwrap() as i128,
        *y.last().unwrap() as i128 - x[0] as i128,
    );
    // Smallest d with at least k differences <= d.
    while lo < hi {
        let mid = lo + (hi - lo).div_euclid(2);
        if pairs_at_most(x, y, mid) >= k {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    lo.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// How many pairs have `y[j] - x[i] <= d`: for each `y[j]`, the `x` at or above
/// `y[j] - d`, found by one pointer that only moves forward as `y[j]` grows.
fn pairs_at_most(x: &[u64], y: &[u64], d: i128) -> u64 {
    let mut count = 0u64;
    let mut first = 0usize; // first x >= y[j] - d
    for &yj in y {
        let bound = yj as i128 - d;
        while first < x.len() && (x[first] as i128) < bound {
            first += 1;
        }
        count += (x.len() - first) as u64;
    }
    count
}
