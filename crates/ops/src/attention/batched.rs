//! Batched causal attention for prompt processing: query row `b < params[1]` (at
//! position `params[0] + b`) attends to KV-cache rows `0..=params[0] + b`.
//!
//! On GPUs, `batched.wgsl`: four query rows of one head per workgroup, so that each key
//! and value row loaded serves four rows (the decode kernel run per (head, row), as
//! this module first did, read the cache once per prompt row). CPU adapters take the
//! `subgroup` variant's kernel made batched ([`batched_subgroup_shader`]).

use std::sync::OnceLock;

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::{AttnFused, AttnVariant};

const WG: u32 = 256;
/// Query rows per workgroup of `batched.wgsl` (`ROWS` there).
const ROWS: u32 = 4;
/// The largest head `batched.wgsl`'s query tile holds (`4 · MAX_D4` there).
const MAX_HEAD_DIM: u32 = 256;

static BATCHED_SHADER: ShaderSource = ShaderSource {
    name: "attention_batched",
    wgsl: include_str!("batched.wgsl"),
};

/// The batched shader of GPUs (`batched.wgsl`).
pub fn batched_shader() -> &'static ShaderSource {
    &BATCHED_SHADER
}

/// The `subgroup` variant's kernel made batched (CPU adapters), derived once from
/// `subgroup.wgsl` with its K/V form (`wide`: `vec4<u64>` loads) as `batched_shader` does
/// from `fused.wgsl`: the grid's z is the query row, the context length comes from the
/// row's position, q and out are indexed by row. One workgroup per (KV head, its query
/// heads, row), each K/V row loaded once for its query heads.
pub fn batched_subgroup_shader(wide: bool) -> &'static ShaderSource {
    static SHADERS: OnceLock<[ShaderSource; 2]> = OnceLock::new();
    let shaders = SHADERS.get_or_init(|| {
        [false, true].map(|wide| {
            let base = if wide {
                &super::SUBGROUP_WIDE_SHADER
            } else {
                &super::SUBGROUP_SHADER
            };
            let mut s = base.wgsl.to_string();
            for (from, to) in [
                ("override SCALE: f32 = 0.125;", "override SCALE: f32 = 0.125;\n// f32 elements per row of q and of out (multiples of 4).\noverride Q_STRIDE: u32 = 0u;\noverride OUT_STRIDE: u32 = 0u;"),
                ("    let n_ctx = min(step[1], MAX_CTX);\n", "    let b = wg.z;\n    // Workgroup-uniform: rows past the batch return at once.\n    if b >= step[1] {\n        return;\n    }\n    let n_ctx = min(step[0] + b + 1u, MAX_CTX);\n"),
                ("    let qb = first * hd4 + lane4;", "    let qb = b * (Q_STRIDE / 4u) + first * hd4 + lane4;"),
                ("    let ob = first * hd4 + lane4;", "    let ob = b * (OUT_STRIDE / 4u) + first * hd4 + lane4;"),
            ] {
                assert_eq!(s.matches(from).count(), 1, "attention batched: `{from}` not found once in subgroup.wgsl");
                s = s.replacen(from, to, 1);
            }
            let name = if wide {
                "attention_batched.subgroup.wide"
            } else {
                "attention_batched.subgroup"
            };
            ShaderSource { name, wgsl: Box::leak(s.into_boxed_str()) }
        })
    });
    &shaders[usize::from(wide)]
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnBatched {
    pub attn: AttnFused,
    pub max_batch: u32,
    /// f32 elements per row of q (q of head h at `b * q_stride + h * head_dim`).
    pub q_stride: u32,
    /// f32 elements per row of out.
    pub out_stride: u32,
}

impl AttnBatched {
    /// Declared cost of a batch of `n_rows` rows from position `pos0` (a row reads at
    /// most the cache's `max_ctx` rows, as the kernel does).
    pub fn cost_at(&self, pos0: u32, n_rows: u32) -> Cost {
        let mut total = Cost { bytes: 0, flops: 0 };
        for b in 0..n_rows {
            let c = self.attn.cost_at((pos0 + b + 1).min(self.attn.max_ctx));
            total.bytes += c.bytes;
            total.flops += c.flops;
        }
        total
    }

    /// The fused kernel's batched form (`attention_batched`), for GPUs.
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        params: &GpuBuffer,
        q: &GpuBuffer,
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        self.dispatch_variant(
            gpu,
            AttnVariant::Workgroup,
            [params, q, k_cache, v_cache, out],
        )
    }

    /// The batched form of `variant`'s kernel: `subgroup` (CPU adapters) has its own
    /// (`batched_subgroup_shader`, K/V as `vec4<u64>` where
    /// [`AttnFused::subgroup_wide`]); every other variant takes the fused kernel's.
    /// Bindings params (`[pos0, n_rows, ..]`), q, k_cache, v_cache, out.
    pub fn dispatch_variant(
        &self,
        gpu: &Gpu,
        variant: AttnVariant,
        [params, q, k_cache, v_cache, out]: [&GpuBuffer; 5],
    ) -> Result<Dispatch, GpuError> {
        let a = &self.attn;
        let invalid = |what: String| GpuError::Invalid(format!("{self:?}: {what}"));
        if a.n_kv_heads == 0 || !a.n_heads.is_multiple_of(a.n_kv_heads) {
            return Err(invalid("n_heads must be a multiple of n_kv_heads".into()));
        }
        if a.head_dim == 0
            || a.head_dim > MAX_HEAD_DIM
            || !WG.is_multiple_of(a.head_dim)
            || !a.head_dim.is_multiple_of(4)
        {
            return Err(invalid(format!(
                "head_dim must divide {WG}, be at most {MAX_HEAD_DIM} and a multiple of 4"
            )));
        }
        let hq = a.n_heads * a.head_dim;
        if self.q_stride < hq
            || self.out_stride < hq
            || self.max_batch == 0
            || self.max_batch > 65535
        {
            return Err(invalid("bad strides or batch".into()));
        }
        let m = u64::from(self.max_batch);
        let cache_bytes = 4 * u64::from(a.n_kv_heads * a.head_dim) * u64::from(a.max_ctx);
        for (buf, bytes, role) in [
            (params, 16, "params"),
            (q, 4 * m * u64::from(self.q_stride), "q"),
            (k_cache, cache_bytes, "k_cache"),
            (v_cache, cache_bytes, "v_cache"),
            (out, 4 * m * u64::from(self.out_stride), "out"),
        ] {
            if buf.size() < bytes {
                return Err(invalid(format!(
                    "buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        let mut constants = vec![
            ("N_HEADS", f64::from(a.n_heads)),
            ("N_KV_HEADS", f64::from(a.n_kv_heads)),
            ("HEAD_DIM", f64::from(a.head_dim)),
            ("MAX_CTX", f64::from(a.max_ctx)),
            ("SCALE", 1.0 / f64::from(a.head_dim).sqrt()),
            ("Q_STRIDE", f64::from(self.q_stride)),
            ("OUT_STRIDE", f64::from(self.out_stride)),
        ];
        let (shader, grid) = if variant == AttnVariant::Subgroup {
            variant
                .supported(gpu, a)
                .map_err(|why| invalid(format!("batched attention: {why}")))?;
            if !self.q_stride.is_multiple_of(4) || !self.out_stride.is_multiple_of(4) {
                return Err(invalid(
                    "the subgroup kernel reads q and out as vec4: strides must be multiples of 4"
                        .into(),
                ));
            }
            let hpw = super::fused::subgroup_heads_per_workgroup(a);
            constants.push(("SG", f64::from(gpu.adapter_info().subgroup_min_size)));
            constants.push(("HPW", f64::from(hpw)));
            (
                batched_subgroup_shader(a.subgroup_wide(gpu)),
                [a.n_kv_heads, a.n_heads / a.n_kv_heads / hpw, self.max_batch],
            )
        } else {
            let info = gpu.adapter_info();
            let subgroups = gpu
                .features()
                .contains(gpuscope_runtime::wgpu::Features::SUBGROUP);
            if !subgroups || info.subgroup_min_size < 8 {
                return Err(invalid(format!(
                    "batched attention reduces over subgroups of at least 8 lanes (wgpu's SUBGROUP); \"{}\" offers {}",
                    info.name,
                    if subgroups {
                        format!("{} lanes", info.subgroup_min_size)
                    } else {
                        "none".to_string()
                    }
                )));
            }
            (
                batched_shader(),
                [a.n_heads, self.max_batch.div_ceil(ROWS), 1],
            )
        };
        let pipeline = gpu.pipeline(shader, "main", &constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[params, q, k_cache, v_cache, out])?;
        Ok(Dispatch::new(
            AttnFused::OP,
            pipeline,
            bind_group,
            grid,
            self.cost_at(0, self.max_batch),
            &[params, q, k_cache, v_cache],
            &[out],
        ))
    }

    /// CPU reference: the single-query oracle per row, row b with `pos0 + b + 1` positions.
    pub fn cpu<T: crate::Real>(
        &self,
        pos0: u32,
        n_rows: u32,
        q: &[T],
        k_cache: &[T],
        v_cache: &[T],
        out: &mut [T],
    ) {
        let hq = (self.attn.n_heads * self.attn.head_dim) as usize;
        for b in 0..n_rows as usize {
            let qs = &q[b * self.q_stride as usize..][..hq];
            self.attn.cpu(
                pos0 + b as u32 + 1,
                qs,
                k_cache,
                v_cache,
                &mut out[b * self.out_stride as usize..][..hq],
            );
        }
    }
}
