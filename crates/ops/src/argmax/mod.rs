//! `argmax`: `out[0]` (u32) = index of the largest of `n` floats (greedy sampling).
//! Ties go to the smallest index; NaN never wins; [`NONE`] when every value is NaN (a
//! visible failure rather than a plausible token 0). `-inf` is a number and can win.
//!
//! One workgroup of 1024 threads on GPUs that allow them, else 256: each scans a
//! strided slice, then a tree in shared memory. `n` is a vocabulary size (49152 to
//! 128256).

mod cost;
mod cpu;
pub(crate) mod exec;

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

/// The kernel for 256 threads (`argmax`) and for 1024 (`argmax.1024`).
pub fn shaders() -> &'static [ShaderSource; 2] {
    static SHADERS: std::sync::OnceLock<[ShaderSource; 2]> = std::sync::OnceLock::new();
    SHADERS.get_or_init(|| {
        let with = |threads: u32| -> &'static str {
            Box::leak(
                include_str!("kernel.wgsl")
                    .replace("WG_THREADS", &threads.to_string())
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

/// What `argmax` returns when no value is a number.
pub const NONE: u32 = u32::MAX;

/// Index of the largest of `n` floats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Argmax {
    pub n: u32,
}

impl Argmax {
    pub const OP: &'static str = "argmax";

    /// Reads `logits` (`n` f32), writes `out[0]` (one u32).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        logits: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        if self.n == 0 || self.n == u32::MAX {
            return Err(GpuError::Invalid(format!(
                "{self:?}: n must be in 1..{}",
                u32::MAX
            )));
        }
        for (buf, role, bytes) in [(logits, "logits", 4 * self.n as u64), (out, "out", 4)] {
            if buf.size() < bytes {
                return Err(GpuError::Invalid(format!(
                    "{self:?}: buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
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
