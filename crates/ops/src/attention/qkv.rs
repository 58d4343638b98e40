//! [`AttnQkv`]: decode attention with the q/k/v projection before it (rms_norm folded
//! in, rope, the KV-cache append) in one dispatch, a workgroup per query head
//! (`qkv.wgsl`): for small models, where a dispatch's fixed cost outweighs computing
//! each KV head's k and v rows once per query head. The oracle is the gemv's, rope's and
//! attention's in sequence.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::fused::groups_wg;
use super::AttnFused;
use crate::gemv::{Gemv, GemvEpilogue, GemvFused, WeightLayout};
use crate::rope::Rope;
use crate::{Real, WeightFormat};

/// Lanes per row of the projection (`LPR` in the kernel).
const LANES_PER_ROW: u32 = 4;

/// The q/k/v projection and attention of one decode step, fused.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttnQkv {
    pub attn: AttnFused,
    /// Rope of q and k (its shape is `attn`'s; no ring: the cache is written linearly).
    pub rope: Rope,
    /// The stacked q | k | v matrix, all of it (`rows` = q_dim + 2·kv_dim, offset 0).
    pub gemv: Gemv,
    /// The folded rms_norm's eps.
    pub eps: f32,
}

/// The buffers an [`AttnQkv`] dispatch binds, in binding order.
#[derive(Debug, Clone, Copy)]
pub struct QkvBuffers<'a> {
    pub w: &'a GpuBuffer,
    /// The residual stream (`cols` f32).
    pub x: &'a GpuBuffer,
    pub norm_weight: &'a GpuBuffer,
    /// `[pos, n_ctx, ..]`.
    pub step: &'a GpuBuffer,
    pub k_cache: &'a GpuBuffer,
    pub v_cache: &'a GpuBuffer,
    /// The heads' outputs (`n_heads · head_dim` f32).
    pub out: &'a GpuBuffer,
}

impl AttnQkv {
    /// The kernel family: the fused ops in order, `rms_norm+gemv_q4_1+rope+attention`.
    pub fn op_name(&self) -> String {
        format!("rms_norm+{}+rope+attention", self.gemv.op_name())
    }

    fn invalid(&self, what: impl std::fmt::Display) -> GpuError {
        GpuError::Invalid(format!("{}: {what}", self.op_name()))
    }

    /// Whether `gpu` runs this op for this shape, and if not, why: subgroups of at least
    /// the lanes a key row takes (`groups`' condition) and 4, a quantized format, the
    /// stacked matrix whole, rope without a ring over the attention's heads, and the
    /// workgroup memory (`groups`' per thread, x, the head's rows).
    pub fn supported(&self, gpu: &Gpu) -> Result<(), String> {
        let a = &self.attn;
        let r = &self.rope;
        super::AttnVariant::Groups.supported(gpu, a)?;
        if gpu.adapter_info().subgroup_min_size < LANES_PER_ROW {
            return Err(format!("subgroups of fewer than {LANES_PER_ROW} lanes"));
        }
        if !self.gemv.format.is_quantized() {
            return Err(format!(
                "{} weights (the kernel takes a block format's block_dot)",
                self.gemv.format.name()
            ));
        }
        let (q_dim, kv_dim) = (a.n_heads * a.head_dim, a.n_kv_heads * a.head_dim);
        if self.gemv.out_offset != 0 || self.gemv.rows != q_dim + 2 * kv_dim {
            return Err("q, k and v are not one matrix of one row chunk".into());
        }
        if r.ring
            || (r.n_heads, r.n_kv_heads, r.head_dim, r.max_ctx)
                != (a.n_heads, a.n_kv_heads, a.head_dim, a.max_ctx)
        {
            return Err("rope over a ring cache or another shape".into());
        }
        if !r.rope_dims.is_multiple_of(2) || r.rope_dims > r.head_dim {
            return Err(format!(
                "rope dims {} of a {}-dim head",
                r.rope_dims, r.head_dim
            ));
        }
        let bytes = self.workgroup_bytes(gpu);
        let limit = gpu.limits().max_compute_workgroup_storage_size;
        if bytes > u64::from(limit) {
            return Err(format!(
                "{bytes} bytes of workgroup memory, the device allows {limit}"
            ));
        }
        Ok(())
    }

    /// Threads per workgroup: `groups`' size on this adapter.
    fn workgroup(gpu: &Gpu) -> u32 {
        groups_wg(gpu).unwrap_or(64)
    }

    fn workgroup_bytes(&self, gpu: &Gpu) -> u64 {
        let wg = u64::from(Self::workgroup(gpu));
        wg * 24 + u64::from(self.gemv.cols) * 4 + 12 * u64::from(self.attn.head_dim) + 512
    }

    /// The projection's part of the cost: each workgroup's 3 · head_dim weight rows (a KV
    /// head's k and v rows once per query head), x and the norm weight per workgroup; two
    /// FLOPs a weight.
    pub fn projection_cost(&self) -> Cost {
        let g = &self.gemv;
        let rows = 3 * u64::from(self.attn.head_dim) * u64::from(self.attn.n_heads);
        let row_bytes = g.weight_bytes() / u64::from(g.rows.max(1));
        let per_head = 8 * u64::from(g.cols);
        Cost {
            bytes: rows * row_bytes + u64::from(self.attn.n_heads) * per_head,
            flops: 2 * rows * u64::from(g.cols),
        }
    }

    /// At `n_ctx` rows: the projection's, then attention's own.
    pub fn cost_at(&self, n_ctx: u32) -> Cost {
        let (p, a) = (self.projection_cost(), self.attn.cost_at(n_ctx));
        Cost {
            bytes: p.bytes + a.bytes,
            flops: p.flops + a.flops,
        }
    }

    /// Builds the dispatch (its cost at one row: the decoder sets it per token).
    pub fn dispatch(&self, gpu: &Gpu, b: &QkvBuffers) -> Result<Dispatch, GpuError> {
        self.supported(gpu).map_err(|e| self.invalid(e))?;
        self.check(b)?;
        let a = &self.attn;
        let g = &self.gemv;
        let mut constants = a.constants();
        constants.extend([
            ("COLS", f64::from(g.cols)),
            ("EPS", f64::from(self.eps)),
            ("ROPE_DIMS", f64::from(self.rope.rope_dims)),
            ("BASE", f64::from(self.rope.base)),
            ("X_VEC4S", f64::from(g.cols / 4)),
            ("QKV_ROWS", f64::from(3 * a.head_dim)),
        ]);
        if g.layout == WeightLayout::Packed {
            constants.push((
                "SCALES_AT",
                f64::from(WeightLayout::scales_at(g.format, g.rows, g.cols)),
            ));
        }
        let shader = shader(Self::workgroup(gpu), g.format, g.layout, self.rope.neox);
        // Without naga's runtime checks, as the gemv frames: rows are clamped to the
        // matrix, blocks below COLS / 32, x and the norm weight below COLS / 4, cache rows
        // below MAX_CTX (clamped positions) and the output below n_heads · head_dim.
        let pipeline = gpu.pipeline_trusted(shader, "main", &constants)?;
        let buffers = [b.w, b.x, b.norm_weight, b.step, b.k_cache, b.v_cache, b.out];
        let bind_group = gpu.bind_group(&pipeline, &buffers)?;
        Ok(Dispatch::new(
            self.op_name(),
            pipeline,
            bind_group,
            [a.n_heads, 1, 1],
            self.cost_at(1),
            &[b.w, b.x, b.norm_weight, b.step, b.k_cache, b.v_cache],
            &[b.k_cache, b.v_cache, b.out],
        ))
    }

    /// Each buffer at least as large as the shape needs.
    fn check(&self, b: &QkvBuffers) -> Result<(), GpuError> {
        let a = &self.attn;
        let g = &self.gemv;
        g.format
            .row_bytes(u64::from(g.cols))
            .map_err(|e| self.invalid(e))?;
        if !g.layout.supports(g.format) {
            return Err(self.invalid(format!(
                "{} has no {} layout",
                g.format.name(),
                g.layout.name()
            )));
        }
        let cols = 4 * u64::from(g.cols);
        let heads = 4 * u64::from(a.n_heads * a.head_dim);
        let cache = 4 * u64::from(a.n_kv_heads * a.head_dim) * u64::from(a.max_ctx);
        for (buf, bytes, role) in [
            (b.w, g.buffer_bytes(), "weights"),
            (b.x, cols, "x"),
            (b.norm_weight, cols, "norm weight"),
            (b.step, 16, "step"),
            (b.k_cache, cache, "k_cache"),
            (b.v_cache, cache, "v_cache"),
            (b.out, heads, "out"),
        ] {
            if buf.size() < bytes {
                return Err(self.invalid(format!(
                    "buffer \"{}\" ({role}) has {} bytes, needs {bytes}",
                    buf.label(),
                    buf.size()
                )));
            }
        }
        Ok(())
    }

    /// The oracle: rms_norm and the gemv ([`GemvFused::cpu`]), rope with the KV-cache
    /// append at `pos` ([`Rope::cpu`]; past the cache, q alone is rotated and nothing
    /// stored, as on the GPU), then attention over `n_ctx` rows ([`AttnFused::cpu`]).
    #[allow(clippy::too_many_arguments)]
    pub fn cpu<T: Real>(
        &self,
        w: &[u8],
        x: &[T],
        norm_weight: &[T],
        pos: u32,
        n_ctx: u32,
        k_cache: &mut [T],
        v_cache: &mut [T],
        out: &mut [T],
    ) {
        let a = &self.attn;
        let (q_dim, kv_dim) = (
            (a.n_heads * a.head_dim) as usize,
            (a.n_kv_heads * a.head_dim) as usize,
        );
        let mut qkv = vec![T::zero(); q_dim + 2 * kv_dim];
        let gemv = GemvFused {
            gemv: self.gemv,
            norm: Some(self.eps),
            post_norm: None,
            epilogue: GemvEpilogue::Store,
        };
        gemv.cpu(w, x, Some(norm_weight), &mut qkv, None);
        let (q, kv) = qkv.split_at_mut(q_dim);
        let (k, v) = kv.split_at(kv_dim);
        if pos < self.rope.max_ctx {
            self.rope.cpu(pos, q, k, v, k_cache, v_cache);
        } else {
            for head in q.chunks_exact_mut(a.head_dim as usize) {
                self.rope.rotate_head(pos, head);
            }
        }
        a.cpu(n_ctx, q, k_cache, v_cache, out);
    }
}

/// The kernel for a workgroup size, weight format and layout, and rope mode, named
/// `attention_qkv_<format>[.packed][.neox].wg<threads>`: built once each.
fn shader(
    wg: u32,
    format: WeightFormat,
    layout: WeightLayout,
    neox: bool,
) -> &'static ShaderSource {
    type Key = (u32, WeightFormat, WeightLayout, bool);
    static CACHE: OnceLock<Mutex<HashMap<Key, &'static ShaderSource>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache.entry((wg, format, layout, neox)).or_insert_with(|| {
        let name = shader_name(wg, format, layout, neox);
        let wgsl = format!(
            "// {name}: composed by gpuscope-ops (attention/qkv.rs).\n{}\n{}\n{}\n{}\n{}\n{}",
            include_str!("qkv.wgsl")
                .replace("WG_THREADS", &wg.to_string())
                .replace("NEOX_ON", &neox.to_string()),
            crate::gemv::shader::block_dot_part(format, layout),
            include_str!("groups_attend.wgsl"),
            include_str!("emit.wgsl"),
            include_str!("../rope/angle.wgsl"),
            include_str!("../rope/pair.wgsl"),
        );
        Box::leak(Box::new(ShaderSource {
            name: Box::leak(name.into_boxed_str()),
            wgsl: Box::leak(wgsl.into_boxed_str()),
        }))
    })
}

fn shader_name(wg: u32, format: WeightFormat, layout: WeightLayout, neox: bool) -> String {
    let mut name = format!("attention_qkv_{}", format.name());
    if layout != WeightLayout::Gguf {
        name += &format!(".{}", layout.name());
    }
    if neox {
        name += ".neox";
    }
    name + &format!(".wg{wg}")
}

/// Every shader name the CPU executor serves, with what it was built from.
pub(crate) fn shaders() -> &'static [(String, WeightFormat, WeightLayout)] {
    static NAMES: OnceLock<Vec<(String, WeightFormat, WeightLayout)>> = OnceLock::new();
    NAMES.get_or_init(|| {
        let mut names = Vec::new();
        for wg in super::fused::GROUPS_WG {
            for format in WeightFormat::ALL.into_iter().filter(|f| f.is_quantized()) {
                for layout in WeightLayout::ALL.into_iter().filter(|l| l.supports(format)) {
                    for neox in [false, true] {
                        names.push((shader_name(wg, format, layout, neox), format, layout));
                    }
                }
            }
        }
        names
    })
}
