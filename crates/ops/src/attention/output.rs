//! `attention+gemv_<format>` (`groups_o.wgsl`): decode attention (the `groups` kernel's)
//! and the output projection in one dispatch, for models whose dim fits one workgroup
//! (SmolLM2: 576 rows). Each head's workgroup writes its head's share of W_o · attention
//! (a partial of `dim` floats); the next gemv adds the partials to the residual stream as
//! it loads it ([`crate::gemv::GemvFused::partials`]). Where it pays: on an H100 the
//! output projection's dispatch was 16% of SmolLM2's tg128, and this fusion took tg128
//! from 1,388 to 1,464 tok/s (BENCHMARKS.md run 41).
//!
//! What it computes: head h's partial is `Σ_{c in head h} W_o[r, c] · x̂_c`, x̂ the head's
//! output quantized per 32-element block as the dp4a gemv quantizes x, so that the
//! partials' sum is the dp4a output projection's W_o · x̂, up to the order of f32 sums.

use std::sync::OnceLock;

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::fused::{groups_wg, GROUPS_WG};
use super::{AttnFused, AttnVariant};
use crate::gemv::{Gemv, GemvVariant, WeightLayout};
use crate::WeightFormat;

/// Attention over the cache, then each head's partial of `W_o · attention` ([`Gemv`] `o`:
/// rows = dim, cols = n_heads · head_dim).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AttnOutput {
    pub attn: AttnFused,
    pub o: Gemv,
}

/// The formats (and their dp4a layouts) the kernel has a `block_idot` for.
const FORMATS: [(WeightFormat, WeightLayout); 7] = [
    (WeightFormat::Q4_0, WeightLayout::Packed),
    (WeightFormat::Q4_1, WeightLayout::Packed),
    (WeightFormat::Q8_0, WeightLayout::Packed),
    (WeightFormat::Q5_0, WeightLayout::Gguf),
    (WeightFormat::Q5_1, WeightLayout::Gguf),
    (WeightFormat::Q4_K, WeightLayout::Gguf),
    (WeightFormat::Q5_K, WeightLayout::Gguf),
];

/// The shader for `wg`-thread workgroups (one of the `groups` sizes) and a format in its
/// layout, named `attention+gemv_<format>.groups<wg>[.packed]`; built once.
fn shader(wg: u32, format: WeightFormat, layout: WeightLayout) -> Option<&'static ShaderSource> {
    type Shaders = Vec<(u32, WeightFormat, WeightLayout, ShaderSource)>;
    static ALL: OnceLock<Shaders> = OnceLock::new();
    let all = ALL.get_or_init(|| {
        let mut out = Vec::new();
        for wg in GROUPS_WG {
            for (f, l) in FORMATS {
                let packed = if l == WeightLayout::Packed {
                    ".packed"
                } else {
                    ""
                };
                let name = format!("{}_{}.groups{wg}{packed}", AttnOutput::OP, f.name());
                let wgsl = format!(
                    "{}\n{}\n{}\n{}\n{}",
                    include_str!("groups.wgsl").replace("WG_THREADSu", &format!("{wg}u")),
                    include_str!("groups_o.wgsl"),
                    include_str!("../gemv/quantize_part.wgsl"),
                    crate::gemv::shader::idot_source(f, l),
                    include_str!("../gemv/idot_common.wgsl"),
                );
                let source = ShaderSource {
                    name: Box::leak(name.into_boxed_str()),
                    wgsl: Box::leak(wgsl.into_boxed_str()),
                };
                out.push((wg, f, l, source));
            }
        }
        out
    });
    all.iter()
        .find(|(w, f, l, _)| (*w, *f, *l) == (wg, format, layout))
        .map(|(.., s)| s)
}

/// The format and layout of the shader called `name`, if it is one of the kernel's.
pub(crate) fn output_shader_format(name: &str) -> Option<(WeightFormat, WeightLayout)> {
    GROUPS_WG.into_iter().find_map(|wg| {
        FORMATS
            .into_iter()
            .find(|&(f, l)| shader(wg, f, l).is_some_and(|s| s.name == name))
    })
}

/// Every shader of the kernel (the CPU executor's table).
pub(crate) fn output_shaders() -> Vec<&'static str> {
    GROUPS_WG
        .into_iter()
        .flat_map(|wg| {
            FORMATS
                .into_iter()
                .filter_map(move |(f, l)| shader(wg, f, l))
        })
        .map(|s| s.name)
        .collect()
}

impl AttnOutput {
    /// Op name prefix of the kernel family.
    pub const OP: &'static str = "attention+gemv";

    /// Whether `gpu` runs it for this shape, else why not: the `groups` attention and the
    /// dp4a gemv run there; one output row per thread; whole 32-column blocks per head,
    /// at most 4; the format in its dp4a layout.
    pub fn supported(&self, gpu: &Gpu) -> Result<(), String> {
        AttnVariant::Groups.supported(gpu, &self.attn)?;
        GemvVariant::Dp4a.supported(gpu)?;
        let wg = groups_wg(gpu).ok_or("no workgroup size for the groups attention")?;
        let (a, o) = (&self.attn, &self.o);
        if o.cols != a.n_heads * a.head_dim || o.out_offset != 0 {
            return Err(format!(
                "the output projection is {}x{} from {}, the heads give {} columns",
                o.rows,
                o.cols,
                o.out_offset,
                a.n_heads * a.head_dim
            ));
        }
        if o.rows > wg {
            return Err(format!(
                "{} output rows, more than the {wg} threads of a workgroup (one row each)",
                o.rows
            ));
        }
        if !a.head_dim.is_multiple_of(32) || a.head_dim > 128 {
            return Err(format!(
                "head_dim {}: whole 32-column blocks per head, at most 4",
                a.head_dim
            ));
        }
        if shader(wg, o.format, o.layout).is_none() {
            return Err(format!(
                "no kernel for {} weights in the {} layout",
                o.format.name(),
                o.layout.name()
            ));
        }
        Ok(())
    }

    /// Bytes of the partials buffer: n_heads vectors of dim floats.
    pub fn partials_bytes(&self) -> u64 {
        u64::from(self.attn.n_heads) * u64::from(self.o.rows) * 4
    }

    /// Cost at a context of `n_ctx` positions: the attention's, and the matrix read once.
    pub fn cost_at(&self, n_ctx: u32) -> Cost {
        let a = self.attn.cost_at(n_ctx);
        Cost {
            bytes: a.bytes + self.o.weight_bytes() + self.partials_bytes(),
            flops: a.flops + 2 * u64::from(self.o.rows) * u64::from(self.o.cols),
        }
    }

    /// One dispatch: `w` the output matrix, `parts` [`Self::partials_bytes`].
    #[allow(clippy::too_many_arguments)]
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        w: &GpuBuffer,
        step: &GpuBuffer,
        q: &GpuBuffer,
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
        parts: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let invalid = |what: String| GpuError::Invalid(format!("{}: {what}", Self::OP));
        self.supported(gpu).map_err(invalid)?;
        let (a, o) = (&self.attn, &self.o);
        let need = |b: &GpuBuffer, bytes: u64, what: &str| {
            if b.size() < bytes {
                Err(invalid(format!(
                    "{what} holds {} bytes, needs {bytes}",
                    b.size()
                )))
            } else {
                Ok(())
            }
        };
        need(w, o.buffer_bytes(), "the output matrix")?;
        need(parts, self.partials_bytes(), "partials")?;
        need(step, 16, "step")?;
        need(q, u64::from(a.n_heads * a.head_dim) * 4, "q")?;
        let cache = u64::from(a.n_kv_heads * a.head_dim) * u64::from(a.max_ctx) * 4;
        need(k_cache, cache, "k_cache")?;
        need(v_cache, cache, "v_cache")?;
        let wg = groups_wg(gpu).expect("checked by supported");
        let shader = shader(wg, o.format, o.layout).expect("checked by supported");
        let mut constants = a.constants();
        constants.extend([
            ("ROWS", f64::from(o.rows)),
            ("COLS", f64::from(o.cols)),
            ("X_BLOCKS", f64::from(a.head_dim / 32)),
        ]);
        if o.layout == WeightLayout::Packed {
            let at = WeightLayout::scales_at(o.format, o.rows, o.cols);
            constants.push(("SCALES_AT", f64::from(at)));
        }
        let pipeline = gpu.pipeline(shader, "main", &constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[w, q, k_cache, v_cache, parts, step])?;
        Ok(Dispatch::new(
            format!("{}_{}", Self::OP, o.format.name()),
            pipeline,
            bind_group,
            [a.n_heads, 1, 1],
            self.cost_at(1),
            &[w, q, k_cache, v_cache, step],
            &[parts],
        ))
    }

    /// The oracle: [`AttnFused::cpu`] at `n_ctx` positions, then head h's partial, the
    /// dp4a gemv's oracle over the head's output alone (the other heads' blocks zero:
    /// they quantize to zero and add nothing), into `parts[h · dim..]`.
    #[allow(clippy::too_many_arguments)]
    pub fn cpu<T: crate::Real>(
        &self,
        n_ctx: u32,
        w: &[u8],
        q: &[T],
        k_cache: &[T],
        v_cache: &[T],
        parts: &mut [T],
    ) {
        let (a, o) = (&self.attn, &self.o);
        let mut heads = vec![T::zero(); (a.n_heads * a.head_dim) as usize];
        a.cpu(n_ctx, q, k_cache, v_cache, &mut heads);
        let gemv = crate::gemv::GemvFused::plain(*o);
        let (hd, rows) = (a.head_dim as usize, o.rows as usize);
        for h in 0..a.n_heads as usize {
            let mut x = vec![T::zero(); heads.len()];
            x[h * hd..(h + 1) * hd].copy_from_slice(&heads[h * hd..(h + 1) * hd]);
            let rounding = crate::gemv::XRounding::of(GemvVariant::Dp4a);
            let out = &mut parts[h * rows..(h + 1) * rows];
            gemv.cpu_variant(rounding, w, &x, None, out, None);
        }
    }
}
