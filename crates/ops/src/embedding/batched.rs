//! Batched embedding for prompt processing: rows `0..params[1]` of `out` (`max_batch ×
//! dim`) from the token ids in `tokens`. The per-format `dequant` files are shared with
//! the single-token kernel; only the frame differs.

use std::sync::OnceLock;

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::{shader, Embedding};
use crate::quant::WeightFormat;

/// The batched shader of `format`, built once from the single-token shader's format files.
pub fn batched_shader(format: WeightFormat) -> &'static ShaderSource {
    static SHADERS: OnceLock<Vec<ShaderSource>> = OnceLock::new();
    let all = SHADERS.get_or_init(|| {
        WeightFormat::ALL
            .iter()
            .map(|&f| {
                let single = shader(f);
                let format_part = single
                    .wgsl
                    .strip_prefix(include_str!("kernel.wgsl"))
                    .expect("embedding shaders start with the frame");
                let wgsl = format!("{}{}", include_str!("kernel_batched.wgsl"), format_part);
                let name = format!("embedding_batched_{}", &single.name["embedding_".len()..]);
                ShaderSource {
                    name: Box::leak(name.into_boxed_str()),
                    wgsl: Box::leak(wgsl.into_boxed_str()),
                }
            })
            .collect()
    });
    &all[WeightFormat::ALL.iter().position(|&f| f == format).unwrap()]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmbeddingBatched {
    pub emb: Embedding,
    pub max_batch: u32,
}

impl EmbeddingBatched {
    pub fn cost(&self) -> Cost {
        self.emb.cost().times(u64::from(self.max_batch))
    }

    pub fn dispatch(
        &self,
        gpu: &Gpu,
        table: &GpuBuffer,
        tokens: &GpuBuffer,
        out: &GpuBuffer,
        params: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.dispatch_scaled(gpu, table, tokens, out, params, 1.0)
    }

    /// [`Self::dispatch`] with every element multiplied by `scale` (Gemma's √dim, as
    /// [`Embedding::dispatch_scaled`]).
    pub fn dispatch_scaled(
        &self,
        gpu: &Gpu,
        table: &GpuBuffer,
        tokens: &GpuBuffer,
        out: &GpuBuffer,
        params: &GpuBuffer,
        scale: f32,
    ) -> Result<Dispatch, GpuError> {
        let e = &self.emb;
        let name = batched_shader(e.format).name;
        let invalid =
            |what: String| GpuError::Invalid(format!("{name} {}x{}: {what}", e.rows, e.dim));
        if e.rows == 0 || e.dim == 0 || self.max_batch == 0 {
            return Err(invalid("empty table or batch".into()));
        }
        let row_bytes = e
            .format
            .row_bytes(u64::from(e.dim))
            .map_err(|er| invalid(er.to_string()))?;
        let m = u64::from(self.max_batch);
        if m * u64::from(e.dim) > u64::from(u32::MAX) {
            return Err(invalid("more than 2^32 output elements".into()));
        }
        for (buf, bytes, what) in [
            (
                table,
                (u64::from(e.rows) * row_bytes).next_multiple_of(4),
                "table",
            ),
            (tokens, 4 * m, "tokens"),
            (out, 4 * m * u64::from(e.dim), "out"),
            (params, 16, "params"),
        ] {
            if buf.size() < bytes {
                return Err(invalid(format!(
                    "{what} buffer \"{}\" has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let pipeline = gpu.pipeline(
            batched_shader(e.format),
            "main",
            &[
                ("DIM", f64::from(e.dim)),
                ("ROWS", f64::from(e.rows)),
                ("ROW_START", f64::from(e.row_start)),
                ("SCALE", f64::from(scale)),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[table, tokens, out, params])?;
        let groups = e.dim.div_ceil(256);
        if groups > 65535 || self.max_batch > 65535 {
            return Err(invalid("grid too large".into()));
        }
        Ok(Dispatch::new(
            name,
            pipeline,
            bind_group,
            [groups, self.max_batch, 1],
            self.cost(),
            &[table, tokens, params],
            &[out],
        ))
    }

    /// CPU reference: the single-token oracle per row.
    pub fn cpu<T: crate::Real>(&self, table: &[u8], tokens: &[u32], out: &mut [T]) {
        self.cpu_scaled(table, tokens, out, 1.0)
    }

    /// [`Self::cpu`] with every element multiplied by `scale`.
    pub fn cpu_scaled<T: crate::Real>(
        &self,
        table: &[u8],
        tokens: &[u32],
        out: &mut [T],
        scale: f32,
    ) {
        let d = self.emb.dim as usize;
        for (b, &t) in tokens.iter().enumerate() {
            self.emb
                .cpu_scaled(table, t, &mut out[b * d..(b + 1) * d], scale);
        }
    }
}
