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
