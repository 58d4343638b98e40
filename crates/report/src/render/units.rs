//! Number formatting with units, shared by the renderers.
//!
//! Decimal units throughout (kB = 10^3 bytes, GB/s = 10^9 bytes/s), matching the
//! rates the analysis computes.

/// Nanoseconds as milliseconds, 3 decimals (µs resolution).
pub fn ms(ns: u64) -> String {
    format!("{:.3}", ns as f64 / 1e6)
}

/// Nanoseconds as microseconds, 1 decimal.
pub fn us(ns: f64) -> String {
    format!("{:.1}", ns / 1e3)
}

/// An optional value with `decimals`, or `-` when unknown.
pub fn opt(v: Option<f64>, decimals: usize) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.decimals$}"))
}

/// An optional duration in ms, or `-` when unknown.
pub fn opt_ms(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".into(), ms)
}

/// Bytes with a decimal unit: `512 B`, `1.50 kB`, `80.30 MB`, `1.20 GB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [(&str, f64); 3] = [("GB", 1e9), ("MB", 1e6), ("kB", 1e3)];
    for (unit, scale) in UNITS {
        if n as f64 >= scale {
            return format!("{:.2} {unit}", n as f64 / scale);
        }
    }
    format!("{n} B")
}

/// A count with a decimal suffix: `950`, `12.3 k`, `134.5 M`, `7.0 G`.
pub fn count(n: u64) -> String {
    const UNITS: [(&str, f64); 3] = [("G", 1e9), ("M", 1e6), ("k", 1e3)];
    for (unit, scale) in UNITS {
        if n as f64 >= scale {
            return format!("{:.1} {unit}", n as f64 / scale);
        }
    }
    n.to_string()
}

/// A rate with three significant digits (at least one decimal), or `-` when unknown:
/// a software adapter's 0.004 GB/s must not print as 0.0.
pub fn rate(v: Option<f64>) -> String {
    match v {
        None => "-".into(),
        Some(x) if x == 0.0 || !x.is_finite() => format!("{x:.1}"),
        Some(x) => {
            let digits = (2 - x.abs().log10().floor() as i32).clamp(1, 6) as usize;
            format!("{x:.digits$}")
        }
    }
}

/// A duration summary's spread and count: `p10-p90 0.290-0.310 ms, n=15`.
pub fn spread_ms(s: &crate::analysis::Summary) -> String {
    format!("p10-p90 {}-{} ms, n={}", ms(s.p10), ms(s.p90), s.count)
}

/// A percentage with one decimal, or `-`.
pub fn percent(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.1}%"))
}

/// Nanoseconds as the unit that reads best: `850 ns`, `12.4 µs`, `3.210 ms`, `1.20 s`.
pub fn duration(ns: f64) -> String {
    if ns < 1e3 {
        format!("{ns:.0} ns")
    } else if ns < 1e6 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.3} ms", ns / 1e6)
    } else {
        format!("{:.2} s", ns / 1e9)
    }
}

/// Token indices as ranges: `0-9, 12, 14-15`; more than `max` ranges are shortened.
pub fn token_ranges(tokens: &[u32], max: usize) -> String {
    let mut ranges: Vec<(u32, u32)> = Vec::new();
    for &t in tokens {
        match ranges.last_mut() {
            Some((_, end)) if *end + 1 == t => *end = t,
            _ => ranges.push((t, t)),
        }
    }
    let shown: Vec<String> = ranges
        .iter()
        .take(max)
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}-{b}")
            }
        })
        .collect();
    let mut out = shown.join(", ");
    if ranges.len() > max {
        out.push_str(&format!(" and {} more ranges", ranges.len() - max));
    }
    out
}

/// An op's row of the op tables (text and Markdown), after its name: calls, total ms,
/// avg µs, % GPU, GB/s, GFLOP/s, FLOP/B, % of ceiling, bound.
pub fn op_cells(
    r: &crate::analysis::OpRow,
    roof: &crate::analysis::roofline::OpRoofline,
) -> [String; 9] {
    [
        r.calls.to_string(),
        opt_ms(r.total_gpu_ns),
        r.avg_gpu_ns.map_or_else(|| "-".into(), us),
        opt(r.gpu_percent, 1),
        rate(r.gb_per_s),
        rate(r.gflop_per_s),
        opt(roof.intensity, 2),
        opt(roof.percent_of_ceiling, 1),
        roof.bound.map_or("-", |b| b.as_str()).to_string(),
    ]
}
