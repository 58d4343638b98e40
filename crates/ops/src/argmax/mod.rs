//! `argmax`: `out[0]` (u32) = index of the largest of `n` floats (greedy sampling).
//! Ties go to the smallest index; NaN never wins; [`NONE`] when every value is NaN (a
//! visible failure rather than a plausible token 0). `-inf` is a number and can win.
//!
//! Below [`SPLIT_FROM`] logits, one workgroup of 1024 threads on GPUs that allow them,
//! else 256: each scans a strided slice, then a tree in shared memory. From it (real
//! vocabularies: 49,152 to 262,144), two dispatches: `argmax_partial` over
//! [`Argmax::partials`] workgroups of [`CHUNK`] logits each, then `argmax_merge` in one
//! workgroup ([`Argmax::dispatches`]; `split_*.wgsl`).

mod cost;
mod cpu;
pub(crate) mod exec;

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::need;

/// The kernel for 256 threads (`argmax`) and for 1024 (`argmax.1024`).
pub fn shaders() -> &'static [ShaderSource; 2] {
    static SHADERS: std::sync::OnceLock<[ShaderSource; 2]> = std::sync::OnceLock::new();
    SHADERS.get_or_init(|| {
        let with = |threads: u32| -> &'static str {
            let wgsl = [
                include_str!("kernel.wgsl"),
                include_str!("best.wgsl"),
                include_str!("scan.wgsl"),
            ]
            .join("\n");
            Box::leak(
                wgsl.replace("WG_THREADS", &threads.to_string())
                    .into_boxed_str(),
            )
        };
        [
            ShaderSource {
                name: "argmax",
                wgsl: with(256),
            },
            ShaderSource {
                name: "argmax.1024",
                wgsl: with(1024),
            },
        ]
    })
}

/// The 1024-thread kernel on GPUs whose limits allow it (its threads and their 8 bytes
/// of workgroup memory each), else 256: on lavapipe, which runs a workgroup's threads as
/// loops, 1024 took 490 µs a call against 393 (SmolLM2's 49152 logits).
fn shader_for(gpu: &Gpu) -> &'static ShaderSource {
    let l = gpu.limits();
    let [small, large] = shaders();
    let cpu = gpu.adapter_info().device_type == gpuscope_runtime::wgpu::DeviceType::Cpu;
    if !cpu
        && l.max_compute_invocations_per_workgroup >= 1024
        && l.max_compute_workgroup_size_x >= 1024
        && l.max_compute_workgroup_storage_size >= 8 * 1024
    {
        large
    } else {
        small
    }
}

/// Logits per `argmax_partial` workgroup (256 threads, 8 each).
pub const CHUNK: u32 = 2048;

/// From this many logits the argmax is split over workgroups. One workgroup of 1024
/// threads scanned Gemma 3's 262,144 logits in 28.4 µs on an H100 (BENCHMARKS.md, run
/// 31), a dispatch's fixed cost being about 2 µs.
pub const SPLIT_FROM: u32 = 16384;

/// The split kernels: `argmax_partial`, `argmax_merge`.
pub fn split_shaders() -> &'static [ShaderSource; 2] {
    static SHADERS: std::sync::OnceLock<[ShaderSource; 2]> = std::sync::OnceLock::new();
    SHADERS.get_or_init(|| {
        let with = |parts: &[&str]| -> &'static str {
            let common = [include_str!("split_common.wgsl"), include_str!("best.wgsl")];
            Box::leak(
                common
                    .iter()
                    .chain(parts)
                    .copied()
                    .collect::<Vec<_>>()
                    .join("\n")
                    .into_boxed_str(),
            )
        };
        [
            ShaderSource {
                name: "argmax_partial",
                wgsl: with(&[
                    include_str!("split_partial.wgsl"),
                    include_str!("scan.wgsl"),
                ]),
            },
            ShaderSource {
                name: "argmax_merge",
                wgsl: with(&[include_str!("split_merge.wgsl")]),
            },
        ]
    })
}

/// The buffers between the split form's two dispatches: each chunk's best value (f32)
/// and index (u32), [`Argmax::partials`] words each.
#[derive(Debug, Clone, Copy)]
pub struct Partials<'b> {
    pub values: &'b GpuBuffer,
    pub indices: &'b GpuBuffer,
}

/// What `argmax` returns when no value is a number.
pub const NONE: u32 = u32::MAX;

/// Index of the largest of `n` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Argmax {
    pub n: u32,
}

impl Argmax {
    pub const OP: &'static str = "argmax";

    /// Whether the argmax runs split ([`SPLIT_FROM`]), through [`Partials`].
    pub fn splits(&self) -> bool {
        self.n >= SPLIT_FROM
    }

    /// Workgroups of `argmax_partial`, words of each [`Partials`] buffer.
    pub fn partials(&self) -> u32 {
        self.n.div_ceil(CHUNK)
    }

    /// The argmax of `logits` into `out[0]`: one dispatch, or with [`Self::splits`] the
    /// partial and the merge through `parts` (which the split form needs).
    pub fn dispatches(
        &self,
        gpu: &Gpu,
        logits: &GpuBuffer,
        parts: Option<Partials>,
        out: &GpuBuffer,
    ) -> Result<Vec<Dispatch>, GpuError> {
        if !self.splits() {
            return Ok(vec![self.dispatch(gpu, logits, out)?]);
        }
        let parts = parts.ok_or_else(|| {
            GpuError::Invalid(format!("{self:?}: the split argmax needs its partials"))
        })?;
        Ok(vec![
            self.dispatch_partial(gpu, logits, parts)?,
            self.dispatch_merge(gpu, parts, out)?,
        ])
    }

    /// `argmax_partial`: each chunk's best of `logits` into `parts`.
    pub fn dispatch_partial(
        &self,
        gpu: &Gpu,
        logits: &GpuBuffer,
        parts: Partials,
    ) -> Result<Dispatch, GpuError> {
        self.valid()?;
        let g = 4 * self.partials() as u64;
        need(logits, 4 * self.n as u64, "logits", self)?;
        need(parts.values, g, "partial values", self)?;
        need(parts.indices, g, "partial indices", self)?;
        let [partial, _] = split_shaders();
        let pipeline = gpu.pipeline(partial, "main", &[("N", self.n as f64)])?;
        let bind_group = gpu.bind_group(&pipeline, &[logits, parts.values, parts.indices])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [self.partials(), 1, 1],
            self.cost_partial(),
            &[logits],
            &[parts.values, parts.indices],
        ))
    }

    /// `argmax_merge`: the best of the partials into `out[0]`.
    pub fn dispatch_merge(
        &self,
        gpu: &Gpu,
        parts: Partials,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.valid()?;
        let g = 4 * self.partials() as u64;
        need(parts.values, g, "partial values", self)?;
        need(parts.indices, g, "partial indices", self)?;
        need(out, 4, "out", self)?;
        let [_, merge] = split_shaders();
        let pipeline = gpu.pipeline(merge, "main", &[("G", self.partials() as f64)])?;
        let bind_group = gpu.bind_group(&pipeline, &[parts.values, parts.indices, out])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [1, 1, 1],
            self.cost_merge(),
            &[parts.values, parts.indices],
            &[out],
        ))
    }

    fn valid(&self) -> Result<(), GpuError> {
        if self.n == 0 || self.n == u32::MAX {
            return Err(GpuError::Invalid(format!(
                "{self:?}: n must be in 1..{}",
                u32::MAX
            )));
        }
        Ok(())
    }

    /// Reads `logits` (`n` f32), writes `out[0]` (one u32): the one-workgroup form.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        logits: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.valid()?;
        need(logits, 4 * self.n as u64, "logits", self)?;
        need(out, 4, "out", self)?;
        let pipeline = gpu.pipeline(shader_for(gpu), "main", &[("N", self.n as f64)])?;
        let bind_group = gpu.bind_group(&pipeline, &[logits, out])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [1, 1, 1],
            self.cost(),
            &[logits],
            &[out],
        ))
    }
}
