//! Per-adapter kernel tuning: the gemv variants a sweep measured fastest on one adapter
//! (`gpuscope bench --sweep variant=... --save-tuning`), cached beside the ceilings as
//! `tuning/<adapter key>.json` (same key and root as [`crate::cache`]). The
//! decoder's default plan reads it (`KernelPlan::for_adapter`); `--kernel` still
//! overrides it, and the profile's settings say where the choice came from.
//!
//! The choice per size class (matrices below / from `large_weights` weights) is the
//! variant with the least summed time over the class's shapes, each variant at its best
//! spread (lanes, rows per lane), among the variants measured on every shape of the
//! class: a variant that was not tried on some shape is not chosen for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::cache::CacheKey;
use crate::sweep::SweepReport;
use gpuscope_trace::ceilings::CeilingsIdentity;

/// What a sweep chose for one adapter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tuning {
    /// The adapter, driver and gpuscope build that measured it (another build re-sweeps),
    /// and when; keyed as the ceilings are.
    #[serde(flatten)]
    pub identity: CeilingsIdentity,
    /// The variant of matrices below `large_weights` weights, if the sweep had some.
    pub gemv: Option<String>,
    /// The variant of matrices from `large_weights` weights, if the sweep had some.
    pub gemv_large: Option<String>,
    pub large_weights: u64,
    /// One line: the shapes and variants the choice rests on, with their summed times.
    pub evidence: String,
}

/// The tuning file of `key` under the cache `root`.
pub fn path(root: &Path, key: &CacheKey) -> PathBuf {
    root.join("tuning").join(key.file_name())
}

/// The cached tuning of `key`: `Ok(None)` when there is none; `Err` (one line) when a file
/// exists but cannot be used (unreadable, corrupt, another device's or build's).
pub fn load(root: &Path, key: &CacheKey) -> Result<Option<(Tuning, PathBuf)>, String> {
    let path = path(root, key);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: cannot read it: {e}", path.display())),
    };
    let t: Tuning =
        serde_json::from_str(&text).map_err(|e| format!("{}: corrupt: {e}", path.display()))?;
    if !key.matches(&t.identity) {
        return Err(format!(
            "{}: it holds the tuning of {} by {}, not of this device and build",
            path.display(),
            t.identity.device(),
            t.identity.tool
        ));
    }
    Ok(Some((t, path)))
}

/// Writes `t` under `root` for its own adapter, atomically (temporary file, rename).
pub fn store(root: &Path, t: &Tuning) -> std::io::Result<PathBuf> {
    let path = path(root, &CacheKey::of(&t.identity));
    std::fs::create_dir_all(path.parent().unwrap_or(root))?;
    let mut json = serde_json::to_vec_pretty(t).map_err(std::io::Error::other)?;
    json.push(b'\n');
    gpuscope_trace::atomic::write_atomic(&path, &json)?;
    Ok(path)
}

/// The variants a sweep measured fastest, per size class: `(gemv, gemv_large, evidence)`.
/// Only full-kernel rows of the user's axes (experiment `sweep`) count.
pub fn choose(
    report: &SweepReport,
    large_weights: u64,
) -> (Option<String>, Option<String>, String) {
    let weights = |shape: &str| -> Option<u64> {
        let (r, c) = shape.split_once('x')?;
        Some(r.parse::<u64>().ok()? * c.parse::<u64>().ok()?)
    };
    // class (false: small, true: large) -> shape -> variant -> best time, µs.
    let mut best: BTreeMap<bool, BTreeMap<&str, BTreeMap<&str, f64>>> = BTreeMap::new();
    for r in &report.rows {
        let c = &r.config;
        if c.experiment != "sweep" || c.mode != "full" || !r.time_us.is_finite() {
            continue;
        }
        let Some(w) = weights(&c.shape) else { continue };
        let t = best
            .entry(w >= large_weights)
            .or_default()
            .entry(c.shape.as_str())
            .or_default()
            .entry(c.variant.as_str())
            .or_insert(f64::INFINITY);
        *t = t.min(r.time_us);
    }
    let mut evidence = Vec::new();
    let mut pick = |large: bool| -> Option<String> {
        let shapes = best.get(&large)?;
        let mut sums: BTreeMap<&str, f64> = BTreeMap::new();
        for variants in shapes.values() {
            for (v, t) in variants {
                *sums.entry(v).or_insert(0.0) += t;
            }
        }
        sums.retain(|v, _| shapes.values().all(|vs| vs.contains_key(v)));
        let (v, _) = sums.iter().min_by(|a, b| a.1.total_cmp(b.1))?;
        let v = v.to_string();
        let shape_list: Vec<&str> = shapes.keys().copied().collect();
        let times: Vec<String> = sums.iter().map(|(v, t)| format!("{v} {t:.1} µs")).collect();
        evidence.push(format!(
            "{} ({}): {} summed over {}",
            if large { "large" } else { "small" },
            v,
            times.join(", "),
            shape_list.join(" ")
        ));
        Some(v)
    };
    let small = pick(false);
    let large = pick(true);
    (small, large, evidence.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::{SweepConfig, SweepRow};

    fn row(shape: &str, variant: &str, lanes: u32, time_us: f64) -> SweepRow {
        SweepRow {
            config: SweepConfig {
                experiment: "sweep".into(),
                shape: shape.into(),
                format: "q4_0".into(),
                layout: "packed".into(),
                variant: variant.into(),
                lanes,
                rows_per_lane: 1,
                workgroup: 256,
                fuse: "-".into(),
                mode: "full".into(),
                dispatches: 1,
            },
            time_us,
            time_us_p10: time_us,
            time_us_p90: time_us,
            runs: 10,
            bytes: 1,
            flops: 1,
            gb_s: 1.0,
            gflop_s: 1.0,
            intensity: 1.0,
            attainable_us: None,
            pct_of_ceiling: None,
            bound: None,
            best: false,
        }
    }

    fn report(rows: Vec<SweepRow>) -> SweepReport {
        SweepReport {
            tool: "gpuscope 0.1.0".into(),
            adapter: "a".into(),
            backend: "Vulkan".into(),
            driver: "d".into(),
            timing: "dispatch".into(),
            ceilings: "none".into(),
            rows,
            skipped: vec![],
        }
    }

    #[test]
    fn each_class_takes_the_least_summed_time_among_variants_tried_on_every_shape() {
        let r = report(vec![
            // Small: subgroup wins on the sum (3 + 3 < 2 + 5) though dp4a wins one shape.
            row("576x576", "subgroup", 32, 3.0),
            row("576x576", "dp4a", 8, 2.0),
            row("1536x576", "subgroup", 32, 3.0),
            row("1536x576", "dp4a", 8, 9.0),
            row("1536x576", "dp4a", 16, 5.0),
            // Large: `shared` is fastest on one shape but was not tried on the other.
            row("14336x4096", "subgroup", 32, 30.0),
            row("14336x4096", "dp4a", 8, 12.0),
            row("4096x4096", "dp4a", 8, 6.0),
            row("4096x4096", "subgroup", 32, 9.0),
            row("4096x4096", "shared", 64, 1.0),
        ]);
        let (small, large, evidence) = choose(&r, 1 << 22);
        assert_eq!(small.as_deref(), Some("subgroup"));
        assert_eq!(large.as_deref(), Some("dp4a"));
        assert!(evidence.contains("dp4a 18.0 µs"), "{evidence}");
        // Rows of other experiments or modes do not count.
        let mut other = row("576x576", "rows", 1, 0.1);
        other.config.mode = "read-only".into();
        let (small, large, _) = choose(&report(vec![other]), 1 << 22);
        assert_eq!((small, large), (None, None));
    }

    #[test]
    fn a_stored_tuning_loads_for_its_own_key_only() {
        let dir = std::env::temp_dir().join(format!("gpuscope-tuning-{}", std::process::id()));
        let t = Tuning {
            identity: CeilingsIdentity {
                adapter: "A".into(),
                backend: "Vulkan".into(),
                driver: "d".into(),
                driver_info: "i".into(),
                tool: "gpuscope 0.1.0".into(),
                measured_at: "2026-11-25T00:00:00Z".into(),
            },
            gemv: Some("subgroup".into()),
            gemv_large: Some("dp4a".into()),
            large_weights: 1 << 22,
            evidence: "e".into(),
        };
        let key = CacheKey::of(&t.identity);
        let written = store(&dir, &t).unwrap();
        let (got, path) = load(&dir, &key).unwrap().unwrap();
        assert_eq!((got, path), (t.clone(), written.clone()));
        let other = CacheKey {
            adapter: "B".into(),
            ..key.clone()
        };
        assert!(load(&dir, &other).unwrap().is_none());
        // A file under this key holding another build's tuning is refused by name.
        let mut newer = t.clone();
        newer.identity.tool = "gpuscope 9.9.9".into();
        std::fs::write(&written, serde_json::to_string(&newer).unwrap()).unwrap();
        let err = load(&dir, &key).unwrap_err();
        assert!(err.contains("gpuscope 9.9.9"), "{err}");
        std::fs::write(&written, "{").unwrap();
        assert!(load(&dir, &key).unwrap_err().contains("corrupt"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
