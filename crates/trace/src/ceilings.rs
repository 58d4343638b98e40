//! Measured ceilings: what `gpuscope peak` measured on one device, as plain data.
//!
//! Rooflines, floors and the checklist hold a run against these figures, never against
//! datasheets. Each figure is the median of repeated GPU-timed runs with its p10–p90
//! spread and count; a figure that could not be measured is `None` and is never
//! replaced by a guess. The [`CeilingsIdentity`] says on which adapter, driver and
//! gpuscope version they were measured, and when: a report made from someone else's
//! profile says whose ceilings it used.
//!
//! `gpuscope_report::cache` keeps them per (adapter, driver, gpuscope version) in the user's cache
//! directory.
//!
//! # Format changelog
//!
//! - 1.0: first version (copy, read-only and write-only bandwidth, f32 and f16 FMA
//!   rates, dependent dispatch cost, CPU encode + submit cost per dispatch, workgroups
//!   that fill the device).
//! - 1.1: `timestamp_ns`, what a dispatch gains from the timestamps written around it
//!   (per-dispatch timing), so reports can correct dispatch spans for the instrument.

use serde::{Deserialize, Serialize};

use crate::{AdapterDesc, FormatVersion};

/// The ceilings format this build writes (cache files and `Profile::ceilings`).
pub const CEILINGS_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 1 };

/// One measured figure: the median over `n` timed repetitions and its spread.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    pub median: f64,
    pub p10: f64,
    pub p90: f64,
    pub n: u32,
}

impl Measured {
    /// Median and nearest-rank p10 / p90 of `values`; `None` when there is no finite,
    /// positive value among them (a figure that was not measured stays unmeasured).
    pub fn of(values: &[f64]) -> Option<Measured> {
        let mut v: Vec<f64> = values
            .iter()
            .copied()
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        let pick = |v: &mut [f64], p| crate::stats::percentile_f64(v, p);
        Some(Measured {
            median: pick(&mut v, 50.0)?,
            p10: pick(&mut v, 10.0)?,
            p90: pick(&mut v, 90.0)?,
            n: v.len() as u32,
        })
    }

    /// Whether the figure can be used: ordered, counted, and each value within
    /// [`PLAUSIBLE`] — a subnormal or astronomic figure measured nothing, and dividing
    /// by one prints `inf`.
    fn is_sane(&self) -> bool {
        let finite = [self.median, self.p10, self.p90]
            .iter()
            .all(|x| PLAUSIBLE.contains(x));
        finite && self.p10 <= self.median && self.median <= self.p90 && self.n > 0
    }
}

/// The values a measured figure may take, in its unit (GB/s, GFLOP/s, ns): from a
/// millionth to a trillion, far outside what any device measures (lavapipe's slowest
/// figures are ~1 GB/s; an H100's fastest ~10^6 GFLOP/s and a dispatch ~10^3 ns).
pub const PLAUSIBLE: std::ops::RangeInclusive<f64> = 1e-6..=1e12;

/// Where and when ceilings were measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CeilingsIdentity {
    pub adapter: String,
    pub backend: String,
    pub driver: String,
    pub driver_info: String,
    /// The tool that measured them, e.g. `gpuscope 0.1.0`.
    pub tool: String,
    /// When, as RFC 3339 UTC (`2026-11-23T14:05:00Z`).
    pub measured_at: String,
}

impl CeilingsIdentity {
    /// The identity of ceilings measured now on the adapter `a` describes, by `tool`.
    pub fn now(a: &AdapterDesc, tool: &str) -> CeilingsIdentity {
        CeilingsIdentity {
            adapter: a.name.clone(),
            backend: a.backend.clone(),
            driver: a.driver.clone(),
            driver_info: a.driver_info.clone(),
            tool: tool.to_string(),
            measured_at: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string(),
        }
    }

    /// Whether these ceilings were measured on the adapter and driver `a` describes
    /// (name, backend, driver and driver info all equal).
    pub fn same_device(&self, a: &AdapterDesc) -> bool {
        self.adapter == a.name
            && self.backend == a.backend
            && self.driver == a.driver
            && self.driver_info == a.driver_info
    }

    /// `adapter (backend, driver driver_info)`, for reports.
    pub fn device(&self) -> String {
        format!(
            "{} ({}, {} {})",
            self.adapter, self.backend, self.driver, self.driver_info
        )
        .replace("  ", " ")
        .replace(" )", ")")
    }
}

/// The workgroup count from which the device stops gaining throughput.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FillWorkgroups {
    /// The smallest workgroup count that reached 90% of the best throughput measured
    /// (see `docs/analysis.md`).
    pub workgroups: u32,
    /// Invocations per workgroup of the kernel it was measured with.
    pub workgroup_size: u32,
}

/// Everything `gpuscope peak` measured on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Always [`CEILINGS_FORMAT`] when written by this build.
    pub format: FormatVersion,
    pub identity: CeilingsIdentity,
    /// How the GPU figures were timed, e.g. `GPU timestamps around each pass`.
    pub method: String,
    /// Copy kernel: read + write bytes per second, GB/s (10^9).
    pub copy_gbps: Option<Measured>,
    /// Read-only kernel: bytes read per second, GB/s.
    pub read_gbps: Option<Measured>,
    /// Write-only kernel: bytes written per second, GB/s.
    pub write_gbps: Option<Measured>,
    /// f32 fused multiply-adds, GFLOP/s (an FMA counts 2 FLOPs).
    pub f32_gflops: Option<Measured>,
    /// f16 FMAs, GFLOP/s; `None` where the adapter offers no SHADER_F16.
    pub f16_gflops: Option<Measured>,
    /// GPU time of one tiny dispatch that depends on the previous one, ns.
    pub dispatch_ns: Option<Measured>,
    /// CPU time to encode and submit one dispatch, ns.
    pub cpu_dispatch_ns: Option<Measured>,
    /// GPU time one dispatch gains when timestamps are written just before and after it
    /// (the dependent chain timed per dispatch, less the same chain timed per pass), ns:
    /// what per-dispatch timing adds to every span it measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp_ns: Option<Measured>,
    /// Workgroups one dispatch needs to keep the whole device busy.
    pub fill: Option<FillWorkgroups>,
    /// Sizes the figures were measured with, e.g. `copy_bytes = "1073741824"`.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub settings: std::collections::BTreeMap<String, String>,
}

/// Why a set of ceilings cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CeilingsError {
    #[error("ceilings format {found} cannot be read by this build (reads {supported})")]
    Version {
        found: FormatVersion,
        supported: FormatVersion,
    },
    #[error("`{field}` is not a usable measurement (not finite, not positive, p10 > median > p90, or n = 0)")]
    BadFigure { field: &'static str },
    #[error("`identity.{field}` is empty")]
    MissingIdentity { field: &'static str },
    #[error("no figure was measured")]
    Empty,
}

impl Ceilings {
    /// Checks what a reader must not trust blindly: the version, the identity and every
    /// figure. Used on cache files and on ceilings embedded in profiles.
    pub fn validate(&self) -> Result<(), CeilingsError> {
        if self.format.major != CEILINGS_FORMAT.major {
            return Err(CeilingsError::Version {
                found: self.format,
                supported: CEILINGS_FORMAT,
            });
        }
        let id = &self.identity;
        for (field, value) in [
            ("adapter", &id.adapter),
            ("backend", &id.backend),
            ("tool", &id.tool),
            ("measured_at", &id.measured_at),
        ] {
            if value.is_empty() {
                return Err(CeilingsError::MissingIdentity { field });
            }
        }
        let mut any = false;
        for (field, m) in self.figures() {
            if let Some(m) = m {
                if !m.is_sane() {
                    return Err(CeilingsError::BadFigure { field });
                }
                any = true;
            }
        }
        if let Some(f) = self.fill {
            if f.workgroups == 0 || f.workgroup_size == 0 {
                return Err(CeilingsError::BadFigure { field: "fill" });
            }
        }
        if !any {
            return Err(CeilingsError::Empty);
        }
        Ok(())
    }

    /// Every measured figure by field name, in a fixed order.
    pub fn figures(&self) -> [(&'static str, Option<Measured>); 8] {
        [
            ("copy_gbps", self.copy_gbps),
            ("read_gbps", self.read_gbps),
            ("write_gbps", self.write_gbps),
            ("f32_gflops", self.f32_gflops),
            ("f16_gflops", self.f16_gflops),
            ("dispatch_ns", self.dispatch_ns),
            ("cpu_dispatch_ns", self.cpu_dispatch_ns),
            ("timestamp_ns", self.timestamp_ns),
        ]
    }

    /// The bandwidth rooflines use: the copy kernel's (read + write), GB/s = bytes/ns.
    pub fn bandwidth_bytes_per_ns(&self) -> Option<f64> {
        self.copy_gbps.map(|m| m.median)
    }

    /// The FLOP rate rooflines use: the f32 FMA rate (gpuscope's kernels accumulate in
    /// f32), FLOP/ns.
    pub fn flops_per_ns(&self) -> Option<f64> {
        self.f32_gflops.map(|m| m.median)
    }

    /// The dependent-dispatch floor, ns.
    pub fn dispatch_floor_ns(&self) -> Option<f64> {
        self.dispatch_ns.map(|m| m.median)
    }

    /// The CPU encode + submit cost of one dispatch, ns.
    pub fn cpu_dispatch_floor_ns(&self) -> Option<f64> {
        self.cpu_dispatch_ns.map(|m| m.median)
    }
}
