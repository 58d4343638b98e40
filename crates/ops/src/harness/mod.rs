//! The kernel author's harness (`gpuscope ops test | perf`), after llama.cpp's
//! `test-backend-ops`: every op × weight format × a table of shapes.
//!
//! - [`cases`](mod@cases): the table — the model shapes (SmolLM2-135M; Llama-3-8B with
//!   `--shapes all`) and awkward ones: one row, rows that are not a multiple of a
//!   workgroup's rows, widths that are not whole blocks where the format allows it, a
//!   context longer than a workgroup, and (with `--shapes all`) a weight matrix as large as
//!   the device's largest binding.
//! - [`test`](mod@test): each case's dispatch (built by the op's own `dispatch`) runs once on random
//!   inputs and its outputs are compared with the CPU executor ([`crate::exec`]) using the
//!   thresholds of `gpuscope check`; every output is bound as a view inside a larger buffer
//!   with canary words around it ([`guard`]).
//! - [`perf`]: each case timed with GPU timestamps: µs per run (median and spread),
//!   GB/s and GFLOP/s from the op's declared cost, % of a measured copy bandwidth.
//! - [`Fault`]: planted kernel bugs (a rope with the wrong theta, a silu_mul that writes
//!   one element past its output) that `test` must name.

pub mod cases;
pub mod guard;
pub mod perf;
pub mod sweep;
pub mod sweep_plan;
pub mod test;

use gpuscope_runtime::{Dispatch, Gpu, GpuError, ShaderSource};

pub use cases::{cases, Case, CaseFilter, ShapeSet};
pub use perf::{run_perf, time_dispatch, time_group, PerfOptions, PerfRow};
pub use sweep::{SweepMode, SweepPoint, SweepTiming};
pub use test::run_test;

/// The adapter as the results name it (`backend_name`).
pub fn backend_name(gpu: &Gpu) -> String {
    let i = gpu.adapter_info();
    format!("{} ({:?})", i.name, i.backend)
}

/// A planted kernel bug (hidden `--inject-fault` of `ops test`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Every rope kernel turns by the angles of twice the frequency base.
    RopeTheta,
    /// `silu_mul` writes one element past its output (`i <= N` instead of `i < N`).
    OobWrite,
}

impl Fault {
    pub fn parse(s: &str) -> Result<Fault, String> {
        match s {
            "rope-theta" => Ok(Fault::RopeTheta),
            "oob-write" => Ok(Fault::OobWrite),
            _ => Err(format!(
                "--inject-fault {s}: expected rope-theta or oob-write"
            )),
        }
    }

    /// The edited WGSL of `shader` under this fault, or `None` when it does not apply.
    fn edit(self, shader: &str, wgsl: &str) -> Option<String> {
        let (from, to) = match self {
            Fault::RopeTheta if shader.starts_with("rope") => (
                "pow(BASE, -f32(2u * i) / f32(ROPE_DIMS))",
                "pow(BASE * 2.0, -f32(2u * i) / f32(ROPE_DIMS))",
            ),
            Fault::OobWrite if shader == "silu_mul" => ("if i >= N {", "if i > N {"),
            _ => return None,
        };
        assert_eq!(
            wgsl.matches(from).count(),
            1,
            "fault {self:?}: `{from}` not found once in {shader}"
        );
        Some(wgsl.replacen(from, to, 1))
    }

    /// `d` rebuilt with the faulty kernel (same bindings and constants), when it applies.
    pub fn apply(self, gpu: &Gpu, d: &Dispatch) -> Result<Option<Dispatch>, GpuError> {
        let p = &d.pipeline;
        let Some(wgsl) = self.edit(p.shader(), p.wgsl()) else {
            return Ok(None);
        };
        rebuild(gpu, d, Some(("fault", wgsl)), &[], false).map(Some)
    }
}

/// `d` with its kernel edited: `source` = (a suffix for the shader's name, the edited
/// WGSL) and `extra` constants added or replacing the kernel's; same bindings and
/// workgroups. `trusted` builds it
/// without naga's runtime checks, as the gemv kernels are (so an experiment's timings
/// compare with theirs); a planted fault keeps the checks.
pub fn rebuild(
    gpu: &Gpu,
    d: &Dispatch,
    source: Option<(&str, String)>,
    extra: &[(&str, f64)],
    trusted: bool,
) -> Result<Dispatch, GpuError> {
    let p = &d.pipeline;
    // A name of its own per edit: the pipeline cache keeps one source per name. Leaked:
    // pipelines refer to their source for the life of the process, and a run builds a
    // handful of edits (at most one per sweep point).
    let source = match source {
        Some((suffix, wgsl)) => ShaderSource {
            name: Box::leak(format!("{}+{suffix}", p.shader()).into_boxed_str()),
            wgsl: Box::leak(wgsl.into_boxed_str()),
        },
        None => ShaderSource {
            name: p.shader(),
            wgsl: p.wgsl(),
        },
    };
    let mut constants: Vec<(&str, f64)> = p
        .constants()
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .filter(|(k, _)| !extra.iter().any(|(e, _)| e == k))
        .collect();
    constants.extend_from_slice(extra);
    let pipeline = if trusted {
        gpu.pipeline_trusted(&source, p.entry(), &constants)?
    } else {
        gpu.pipeline(&source, p.entry(), &constants)?
    };
    let bindings: Vec<&gpuscope_runtime::GpuBuffer> = d.bind_group.bindings().iter().collect();
    let bind_group = gpu.bind_group(&pipeline, &bindings)?;
    Ok(Dispatch {
        pipeline,
        bind_group,
        ..d.clone()
    })
}
