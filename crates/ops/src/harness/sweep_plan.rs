//! What `gpuscope bench --sweep AXIS=LIST ... | --experiment NAME` times: the user's
//! axes crossed at every shape, and the built-in experiments at one shape, as
//! [`SweepPoint`]s the adapter can run ([`SweepPoint::run`] times them).
//!
//! Unset axes take the decoder's choice for each shape (`defaults`). A value the user
//! gave that the adapter cannot run is an error before anything runs; a built-in
//! experiment's point the shape or adapter cannot take is left out and listed.

use gpuscope_runtime::Gpu;

use super::sweep::{SweepMode, SweepPoint};
use crate::gemv::{GemvVariant, WeightLayout};
use crate::WeightFormat;

/// The built-in experiments (`--experiment`, or `all`).
pub const EXPERIMENTS: [&str; 4] = ["memory-vs-compute", "quant-overhead", "workgroup", "tile"];

/// The user's axes; `None` where not given.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Axes {
    pub shape: Option<Vec<(u32, u32)>>,
    pub format: Option<Vec<WeightFormat>>,
    pub layout: Option<Vec<WeightLayout>>,
    pub variant: Option<Vec<GemvVariant>>,
    pub lanes: Option<Vec<u32>>,
    pub rows: Option<Vec<u32>>,
    pub wg: Option<Vec<u32>>,
    pub fuse: Option<Vec<bool>>,
}

/// A weight matrix of the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Matrix {
    pub rows: u32,
    pub cols: u32,
    pub format: WeightFormat,
}

/// What the decoder would run on this adapter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Defaults {
    pub variant: GemvVariant,
    /// The decoder's weight layout (packed on CPU adapters).
    pub layout: WeightLayout,
}

/// A point of an experiment or of the user's sweep, named for the report.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// `sweep` (the user's axes) or the experiment's name.
    pub experiment: &'static str,
    pub point: SweepPoint,
}

fn list<T>(axis: &str, values: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    values
        .split(',')
        .map(|v| {
            let v = v.trim();
            parse(v).ok_or_else(|| format!("--sweep {axis}={v}: not a valid {axis}"))
        })
        .collect()
}

/// `--sweep AXIS=V1,V2` specs (repeatable) as axes.
pub fn parse_axes(specs: &[String]) -> Result<Axes, String> {
    const AXES: &str = "axes: shape, format, layout, variant, lanes, rows, wg, fuse";
    let mut a = Axes::default();
    let number = |v: &str| v.parse::<u32>().ok();
    for spec in specs {
        let (axis, values) = spec
            .split_once('=')
            .ok_or_else(|| format!("--sweep {spec}: expected AXIS=V1,V2 ({AXES})"))?;
        let axis = axis.trim();
        match axis {
            "shape" => {
                a.shape = Some(list(axis, values, |v| {
                    let (r, c) = v.split_once('x')?;
                    Some((r.parse().ok()?, c.parse().ok()?))
                })?)
            }
            "format" => a.format = Some(list(axis, values, |v| v.parse().ok())?),
            "layout" => a.layout = Some(list(axis, values, WeightLayout::parse)?),
            "variant" => a.variant = Some(list(axis, values, GemvVariant::parse)?),
            "lanes" => a.lanes = Some(list(axis, values, number)?),
            "rows" => a.rows = Some(list(axis, values, number)?),
            "wg" => a.wg = Some(list(axis, values, number)?),
            "fuse" => {
                a.fuse = Some(list(axis, values, |v| match v {
                    "on" => Some(true),
                    "off" => Some(false),
                    _ => None,
                })?)
            }
            _ => return Err(format!("--sweep {spec}: unknown axis `{axis}` ({AXES})")),
        }
    }
    Ok(a)
}

/// `--experiment` names (or `all`), each once.
pub fn experiment_names(given: &[String]) -> Result<Vec<&'static str>, String> {
    let mut out: Vec<&'static str> = Vec::new();
    for g in given {
        let names: Vec<&'static str> = if g == "all" {
            EXPERIMENTS.to_vec()
        } else {
            vec![EXPERIMENTS.into_iter().find(|e| e == g).ok_or_else(|| {
                format!(
                    "--experiment {g}: unknown (expected {}, or all)",
                    EXPERIMENTS.join(", ")
                )
            })?]
        };
        for n in names {
            if !out.contains(&n) {
                out.push(n);
            }
        }
    }
    Ok(out)
}

/// Everything to time: the user's axes at every shape, then each experiment at one
/// shape (the first `shape=`, else `ffn_up`); points an experiment cannot run go to
/// `skipped` with why.
pub fn plan(
    axes: &Axes,
    experiments: &[&'static str],
    gpu: &Gpu,
    defaults: Defaults,
    model: &[Matrix],
    ffn_up: (u32, u32),
    skipped: &mut Vec<String>,
) -> Result<Vec<Planned>, String> {
    let mut out = Vec::new();
    if user_axes(axes, experiments) {
        for m in axis_shapes(axes, model) {
            for point in crossed(axes, defaults, m) {
                if out.iter().any(|p: &Planned| p.point == point) {
                    continue;
                }
                point.check(gpu)?;
                out.push(Planned {
                    experiment: "sweep",
                    point,
                });
            }
        }
    }
    let at = experiment_shape(axes, model, ffn_up);
    for &e in experiments {
        for point in experiment_points(e, gpu, defaults, at) {
            match point.check(gpu) {
                Ok(()) => out.push(Planned {
                    experiment: e,
                    point,
                }),
                Err(why) => skipped.push(format!("{e}: {why}")),
            }
        }
    }
    Ok(out)
}

/// Whether the user swept anything (a shape alone counts only without experiments).
fn user_axes(axes: &Axes, experiments: &[&str]) -> bool {
    axes.format.is_some()
        || axes.layout.is_some()
        || axes.variant.is_some()
        || axes.lanes.is_some()
        || axes.rows.is_some()
        || axes.wg.is_some()
        || axes.fuse.is_some()
        || (axes.shape.is_some() && experiments.is_empty())
}

/// The shapes the user's axes run at: those given (in the model's first format), else
/// the model's.
fn axis_shapes(axes: &Axes, model: &[Matrix]) -> Vec<Matrix> {
    let format = model.first().map_or(WeightFormat::Q8_0, |m| m.format);
    match &axes.shape {
        Some(s) => s
            .iter()
            .map(|&(rows, cols)| Matrix { rows, cols, format })
            .collect(),
        None => model.to_vec(),
    }
}

/// The decoder's point for a shape and format.
fn base(defaults: Defaults, rows: u32, cols: u32, format: WeightFormat) -> SweepPoint {
    SweepPoint {
        rows,
        cols,
        format,
        layout: defaults.layout.for_format(format),
        variant: defaults.variant,
        lanes: None,
        rows_per_lane: None,
        workgroup: None,
        fuse: None,
        mode: SweepMode::Full,
    }
}

/// Every combination of the user's axes at one shape.
fn crossed(axes: &Axes, defaults: Defaults, m: Matrix) -> Vec<SweepPoint> {
    let opt = |v: &Option<Vec<u32>>| -> Vec<Option<u32>> {
        v.as_ref()
            .map_or(vec![None], |v| v.iter().copied().map(Some).collect())
    };
    let formats = axes.format.clone().unwrap_or_else(|| vec![m.format]);
    let layouts = axes.layout.clone().unwrap_or_else(|| vec![defaults.layout]);
    let variants = axes
        .variant
        .clone()
        .unwrap_or_else(|| vec![defaults.variant]);
    let fuses: Vec<Option<bool>> = axes
        .fuse
        .as_ref()
        .map_or(vec![None], |v| v.iter().copied().map(Some).collect());
    let mut out = Vec::new();
    for &format in &formats {
        for &layout in &layouts {
            for &variant in &variants {
                // dp4a reads each format in one layout: unless the layout is swept, it
                // gets that one (as in the decoder). A format without a packed form keeps
                // its GGUF bytes.
                let layout = match variant.layout_for(format) {
                    Some(only) if axes.layout.is_none() => only,
                    _ => layout,
                };
                for lanes in opt(&axes.lanes) {
                    for rows_per_lane in opt(&axes.rows) {
                        for workgroup in opt(&axes.wg) {
                            out.extend(fuses.iter().map(|&fuse| SweepPoint {
                                layout: layout.for_format(format),
                                variant,
                                lanes,
                                rows_per_lane,
                                workgroup,
                                fuse,
                                ..base(defaults, m.rows, m.cols, format)
                            }));
                        }
                    }
                }
            }
        }
    }
    out
}

/// The experiments' shape: the first `shape=`, else the FFN up projection; in the
/// model's format for it.
fn experiment_shape(axes: &Axes, model: &[Matrix], ffn_up: (u32, u32)) -> Matrix {
    let (rows, cols) = axes
        .shape
        .as_ref()
        .and_then(|s| s.first().copied())
        .unwrap_or(ffn_up);
    let format = model
        .iter()
        .find(|m| (m.rows, m.cols) == (rows, cols))
        .or(model.first())
        .map_or(WeightFormat::Q8_0, |m| m.format);
    Matrix { rows, cols, format }
}

/// One experiment's points at shape `m`. The workgroup and tile experiments use the
/// adapter's gemv variant, or `shared` where that is `rows` (lavapipe), whose one lane
/// per row and fixed workgroup leave nothing to sweep.
fn experiment_points(e: &str, gpu: &Gpu, defaults: Defaults, m: Matrix) -> Vec<SweepPoint> {
    let at = |format| base(defaults, m.rows, m.cols, format);
    let swept = if defaults.variant == GemvVariant::Rows {
        GemvVariant::Shared
    } else {
        defaults.variant
    };
    match e {
        "memory-vs-compute" => [SweepMode::Full, SweepMode::ReadOnly, SweepMode::ComputeOnly]
            .into_iter()
            .map(|mode| SweepPoint {
                mode,
                ..at(m.format)
            })
            .collect(),
        "quant-overhead" => [
            WeightFormat::F16,
            WeightFormat::Q8_0,
            WeightFormat::Q4_0,
            WeightFormat::Q4_K,
        ]
        .into_iter()
        .map(at)
        .collect(),
        "workgroup" => [64, 128, 256, 512, 1024]
            .into_iter()
            .map(|wg| SweepPoint {
                variant: swept,
                workgroup: Some(wg),
                ..at(m.format)
            })
            .collect(),
        "tile" => {
            let max = swept.max_threads_per_row(gpu);
            (0..=8)
                .map(|i| 1u32 << i)
                .filter(|&l| l <= max)
                .flat_map(|l| {
                    [1, 2, 4].map(|r| SweepPoint {
                        variant: swept,
                        lanes: Some(l),
                        rows_per_lane: Some(r),
                        ..at(m.format)
                    })
                })
                .collect()
        }
        _ => unreachable!("checked by experiment_names"),
    }
}
