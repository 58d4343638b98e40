//! Where a checked run goes wrong: the first divergent dispatch and how the error grows
//! layer by layer.
//!
//! The first divergent dispatch is the first whose **local** error crosses its op's local
//! limits — that names a wrong kernel even when rounding error accumulates before it. A
//! run with no local crossing can still fail on **chained** error (accumulation, or a
//! reference that cannot run locally); then the first chained crossing is reported.
//! Validation messages fail the run too, at the first dispatch that has one.
//!
//! An argmax (u32 output) that differs only in the chained comparison is not a failure by
//! itself: it is a near tie decided by logits that the chained f32 check already judged.

use serde::{Deserialize, Serialize};

use gpuscope_trace::check::{CheckReport, DispatchCheck};

/// Why the run failed, at which dispatch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Divergence {
    /// Index into [`CheckReport::dispatches`].
    pub dispatch: usize,
    /// Index into that dispatch's outputs (0 for validation failures).
    pub output: usize,
    pub kind: DivergenceKind,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DivergenceKind {
    /// The op itself is wrong on these inputs.
    Local,
    /// The paths drifted apart (accumulated error, or no local comparison).
    Chained,
    /// The device reported a validation error.
    Validation,
}

/// The verdict of a check: the first local, chained and validation failures.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Verdict {
    pub first_local: Option<Divergence>,
    pub first_chained: Option<Divergence>,
    pub first_validation: Option<Divergence>,
    pub dispatches_checked: usize,
    pub outputs_checked: usize,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.first_local.is_none()
            && self.first_chained.is_none()
            && self.first_validation.is_none()
    }

    /// The failure to show first: local, else validation, else chained.
    pub fn first(&self) -> Option<&Divergence> {
        self.first_local
            .as_ref()
            .or(self.first_validation.as_ref())
            .or(self.first_chained.as_ref())
    }
}

pub fn verdict(r: &CheckReport) -> Verdict {
    let mut v = Verdict {
        dispatches_checked: r.dispatches.len(),
        ..Default::default()
    };
    for (i, d) in r.dispatches.iter().enumerate() {
        if v.first_validation.is_none() && !d.validation.is_empty() {
            v.first_validation = Some(Divergence {
                dispatch: i,
                output: 0,
                kind: DivergenceKind::Validation,
                reason: d.validation.join("; "),
            });
        }
        let local_limits = r.thresholds.local_for_dispatch(&d.op, d.int8_activations);
        for (o, out) in d.outputs.iter().enumerate() {
            v.outputs_checked += 1;
            if v.first_local.is_none() {
                if let Some(reason) = out.local.as_ref().and_then(|e| local_limits.exceeded(e)) {
                    v.first_local = Some(Divergence {
                        dispatch: i,
                        output: o,
                        kind: DivergenceKind::Local,
                        reason,
                    });
                }
            }
            if v.first_chained.is_none() && out.chained.dtype != "u32" {
                if let Some(reason) = r.thresholds.chained.exceeded(&out.chained) {
                    v.first_chained = Some(Divergence {
                        dispatch: i,
                        output: o,
                        kind: DivergenceKind::Chained,
                        reason,
                    });
                }
            }
        }
    }
    v
}

/// The error of one section (layer) of the graph, over all checked tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayerGrowth {
    /// `embed`, `L0`, ..., `head`.
    pub section: String,
    pub layer: Option<u32>,
    /// Largest local NMSE of any f32 output in the section.
    pub local_nmse: f64,
    /// Largest chained NMSE of any f32 output in the section.
    pub chained_nmse: f64,
    /// Largest chained `max_err` in the section.
    pub chained_max_err: f64,
}

/// Error growth per section, in graph order.
pub fn growth_by_layer(r: &CheckReport) -> Vec<LayerGrowth> {
    let mut rows: Vec<LayerGrowth> = Vec::new();
    for d in &r.dispatches {
        let at = match rows.iter().position(|g| g.section == d.section) {
            Some(at) => at,
            None => {
                rows.push(LayerGrowth {
                    section: d.section.clone(),
                    layer: d.layer,
                    local_nmse: 0.0,
                    chained_nmse: 0.0,
                    chained_max_err: 0.0,
                });
                rows.len() - 1
            }
        };
        let g = &mut rows[at];
        for out in f32_outputs(d) {
            if let Some(l) = &out.local {
                g.local_nmse = g.local_nmse.max(finite_or_max(l.nmse));
            }
            g.chained_max_err = g.chained_max_err.max(finite_or_max(out.chained.max_err));
            g.chained_nmse = g.chained_nmse.max(finite_or_max(out.chained.nmse));
        }
    }
    rows
}

fn f32_outputs(d: &DispatchCheck) -> impl Iterator<Item = &gpuscope_trace::check::OutputCheck> {
    d.outputs.iter().filter(|o| o.chained.dtype == "f32")
}

fn finite_or_max(v: f64) -> f64 {
    if v.is_nan() {
        f64::MAX
    } else {
        v.min(f64::MAX)
    }
}
