//! `embedding`: `out[d] = dequant(table[token])[d]`, the token id read on the GPU from
//! element 0 of a `u32` buffer (written by argmax), so no readback sits between tokens.
//!
//! A table larger than one binding is split into row chunks `[row_start, row_start + rows)`,
//! one `Embedding` each; every chunk's dispatch runs and only the one holding the token
//! writes. Bindings: 0 = table chunk (GGUF bytes), 1 = token (`array<u32>`), 2 = out
//! (`dim` f32).

mod batched;
mod cost;
mod cpu;
pub(crate) mod exec;

pub use batched::{batched_shader, EmbeddingBatched};

use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use crate::quant::WeightFormat;

/// Threads per workgroup; must match `@workgroup_size` in `kernel.wgsl`.
const WORKGROUP_SIZE: u32 = 256;

/// A row lookup in a `rows × dim` table chunk whose first row is token `row_start`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Embedding {
    pub rows: u32,
    pub dim: u32,
    pub format: WeightFormat,
    pub row_start: u32,
}

macro_rules! embedding_shader {
    ($name:literal, $file:literal) => {
        ShaderSource {
            name: $name,
            wgsl: concat!(include_str!("kernel.wgsl"), "\n", include_str!($file)),
        }
    };
    ($name:literal, $file:literal, bytes $(, $extra:literal)*) => {
        ShaderSource {
            name: $name,
            wgsl: concat!(
                include_str!("kernel.wgsl"),
                "\n",
                include_str!($file),
                "\n",
                include_str!("common_bytes.wgsl")
                $(, "\n", include_str!($extra))*
            ),
        }
    };
}

const SHADER_F32: ShaderSource = embedding_shader!("embedding_f32", "kernel_f32.wgsl");
const SHADER_F16: ShaderSource = embedding_shader!("embedding_f16", "kernel_f16.wgsl");
const SHADER_Q8_0: ShaderSource = embedding_shader!("embedding_q8_0", "kernel_q8_0.wgsl", bytes);
const SHADER_Q4_0: ShaderSource = embedding_shader!("embedding_q4_0", "kernel_q4_0.wgsl", bytes);
const SHADER_Q4_1: ShaderSource = embedding_shader!("embedding_q4_1", "kernel_q4_1.wgsl", bytes);
const SHADER_BF16: ShaderSource = embedding_shader!("embedding_bf16", "kernel_bf16.wgsl");
const SHADER_Q4_K: ShaderSource =
    embedding_shader!("embedding_q4_k", "kernel_q4_k.wgsl", bytes, "common_k.wgsl");
const SHADER_Q5_K: ShaderSource =
    embedding_shader!("embedding_q5_k", "kernel_q5_k.wgsl", bytes, "common_k.wgsl");
const SHADER_Q6_K: ShaderSource = embedding_shader!("embedding_q6_k", "kernel_q6_k.wgsl", bytes);
const SHADER_Q5_0: ShaderSource = embedding_shader!("embedding_q5_0", "kernel_q5_0.wgsl", bytes);
const SHADER_Q5_1: ShaderSource = embedding_shader!("embedding_q5_1", "kernel_q5_1.wgsl", bytes);

/// The WGSL source of the embedding kernel for `format`.
pub fn shader(format: WeightFormat) -> &'static ShaderSource {
    match format {
        WeightFormat::F32 => &SHADER_F32,
        WeightFormat::F16 => &SHADER_F16,
        WeightFormat::Q8_0 => &SHADER_Q8_0,
        WeightFormat::Q4_0 => &SHADER_Q4_0,
        WeightFormat::Q4_1 => &SHADER_Q4_1,
        WeightFormat::BF16 => &SHADER_BF16,
        WeightFormat::Q4_K => &SHADER_Q4_K,
        WeightFormat::Q5_K => &SHADER_Q5_K,
        WeightFormat::Q6_K => &SHADER_Q6_K,
        WeightFormat::Q5_0 => &SHADER_Q5_0,
        WeightFormat::Q5_1 => &SHADER_Q5_1,
    }
}

impl Embedding {
    /// Kernel family name: `embedding_<format>`.
    pub fn op_name(&self) -> &'static str {
        shader(self.format).name
    }

    /// Bytes of one table row.
    ///
    /// # Panics
    /// If `dim` is not a whole number of blocks of the format.
    pub fn row_bytes(&self) -> u64 {
        self.format
            .row_bytes(u64::from(self.dim))
            .unwrap_or_else(|e| panic!("embedding {}x{}: {e}", self.rows, self.dim))
    }

    /// Whether `token` falls in this chunk.
    pub fn holds(&self, token: u32) -> bool {
        token >= self.row_start && token - self.row_start < self.rows
    }

    pub fn dispatch(
        &self,
        gpu: &Gpu,
        table: &GpuBuffer,
        token: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.dispatch_scaled(gpu, table, token, out, 1.0)
    }

    /// [`Self::dispatch`] with every element multiplied by `scale` (f32, as the CPU's
    /// [`Self::cpu_scaled`]): Gemma's embeddings times √dim.
    pub fn dispatch_scaled(
        &self,
        gpu: &Gpu,
        table: &GpuBuffer,
        token: &GpuBuffer,
        out: &GpuBuffer,
        scale: f32,
    ) -> Result<Dispatch, GpuError> {
        let name = self.op_name();
        let invalid =
            |what: String| GpuError::Invalid(format!("{name} {}x{}: {what}", self.rows, self.dim));
        if self.rows == 0 || self.dim == 0 {
            return Err(invalid("empty table".into()));
        }
        let row_bytes = self
            .format
            .row_bytes(u64::from(self.dim))
            .map_err(|e| invalid(e.to_string()))?;
        let table_bytes = u64::from(self.rows) * row_bytes;
        if table_bytes > u64::from(u32::MAX)
            || u64::from(self.rows) * u64::from(self.dim) > u64::from(u32::MAX)
        {
            return Err(invalid(
                "more than 2^32 bytes or elements: split the table into row chunks".into(),
            ));
        }
        if u64::from(self.row_start) + u64::from(self.rows) > u64::from(u32::MAX) + 1 {
            return Err(invalid(format!(
                "row_start {} + rows overflows u32 token ids",
                self.row_start
            )));
        }
        let need = |buf: &GpuBuffer, bytes: u64, what: &str| {
            if buf.size() < bytes {
                Err(invalid(format!(
                    "{what} buffer \"{}\" has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )))
            } else {
                Ok(())
            }
        };
        need(table, table_bytes.next_multiple_of(4), "table")?;
        need(token, 4, "token")?;
        need(out, u64::from(self.dim) * 4, "out")?;

        let pipeline = gpu.pipeline(
            shader(self.format),
            "main",
            &[
                ("DIM", f64::from(self.dim)),
                ("ROWS", f64::from(self.rows)),
                ("ROW_START", f64::from(self.row_start)),
                ("SCALE", f64::from(scale)),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[table, token, out])?;
        // dim ≤ 2^32 / rows elements, and 65535 · 256 ≈ 16.7M columns: a 1-D grid suffices
        // for any real model (dims are ≤ 16384).
        let groups = self.dim.div_ceil(WORKGROUP_SIZE);
        if groups > 65535 {
            return Err(invalid("dim above 16.7M columns".into()));
        }
        Ok(Dispatch::new(
            name,
            pipeline,
            bind_group,
            [groups, 1, 1],
            self.cost(),
            &[table, token],
            &[out],
        ))
    }
}
