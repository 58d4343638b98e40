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

/// Query rows per workgroup of `coopmat.wgsl` (`BQ` there).
const COOPMAT_ROWS: u32 = 64;
/// The head sizes `coopmat.wgsl` is composed for: multiples of 16 up to 128 (its staged
/// q tile, 64 rows of the head in f16, fits 48 KB of workgroup memory up to there).
const COOPMAT_MAX_HEAD_DIM: u32 = 128;

/// `coopmat.wgsl` composed for heads of `head_dim` (a multiple of 16, at most
/// `COOPMAT_MAX_HEAD_DIM`, 128): the q fragments, score, value and output code for its
/// `head_dim / 16` fragments along the head.
pub fn coopmat_shader(head_dim: u32) -> &'static ShaderSource {
    static SHADERS: OnceLock<Vec<ShaderSource>> = OnceLock::new();
    let shaders = SHADERS.get_or_init(|| {
        (1..=COOPMAT_MAX_HEAD_DIM / 16)
            .map(|n| {
                let name = format!("attention_coopmat.d{}", 16 * n);
                let wgsl = coopmat_source(16 * n);
                ShaderSource {
                    name: Box::leak(name.into_boxed_str()),
                    wgsl: Box::leak(wgsl.into_boxed_str()),
                }
            })
            .collect()
    });
    assert!(
        head_dim.is_multiple_of(16) && (16..=COOPMAT_MAX_HEAD_DIM).contains(&head_dim),
        "coopmat attention: head_dim {head_dim}"
    );
    &shaders[(head_dim / 16 - 1) as usize]
}

/// Whether the kernel named `shader` is `coopmat.wgsl`, which rounds q, k, v and the
/// weights to f16 (its exact oracle differs from it by that rounding).
pub fn rounds_to_f16(shader: &str) -> bool {
    shader.starts_with("attention_coopmat.")
}

/// Every composed `coopmat.wgsl` (the executor's names, the naga test).
pub fn coopmat_shaders() -> Vec<&'static ShaderSource> {
    (1..=COOPMAT_MAX_HEAD_DIM / 16)
        .map(|n| coopmat_shader(16 * n))
        .collect()
}

/// Workgroup memory of `coopmat.wgsl` for heads of `d`: the q / K tile (64 rows) and the
/// V tile (32 rows) of d + 8 halves, 4 subgroups' 16x32 scores (f32, rows of 36) and
/// weights (f16, rows of 40).
fn coopmat_workgroup_bytes(d: u32) -> u32 {
    let row = 2 * (d + 8);
    (COOPMAT_ROWS + 32) * row + 4 * 16 * (36 * 4 + 40 * 2)
}

/// `coopmat.wgsl`'s RESCALES: the output accumulators o0.. (`frags` of them) through the
/// subgroup's part of st, two at a time (its 128 vec4s hold two 16x16 f32 fragments), each
/// lane's half row times its alpha.
fn coopmat_rescales(frags: u32) -> String {
    // Indices go through `let`s: naga's SPIR-V writer does not emit an index expression
    // written inside a cooperative load's or store's pointer ("not cached").
    let mut code = String::from("            let ir0 = own;\n            let ir1 = own + 64u;\n");
    for pair in (0..frags).collect::<Vec<_>>().chunks(2) {
        for (i, o) in pair.iter().enumerate() {
            code += &format!("            coopStoreT(o{o}, &st[ir{i}], s4);\n");
        }
        code += "            workgroupBarrier();\n";
        for i in 0..pair.len() {
            code += &format!("            scale_row(ir{i} + m_row * 4u + half * 2u, alpha);\n");
        }
        code += "            workgroupBarrier();\n";
        for (i, o) in pair.iter().enumerate() {
            code +=
                &format!("            o{o} = coopLoadT<coop_mat16x16<f32, C>>(&st[ir{i}], s4);\n");
        }
        code += "            workgroupBarrier();\n";
    }
    code
}

fn coopmat_source(d: u32) -> String {
    let frags = d / 16;
    let mut q_frags = String::new();
    let mut scores = String::from("        var sf0 = zero;\n        var sf1 = zero;\n");
    let mut accs = String::new();
    let mut values = String::new();
    let mut emits = String::new();
    for kk in 0..frags {
        q_frags += &format!(
            "    let iq{kk} = (16u * sg) * SK + {}u;\n    let q{kk} = coopLoadT<coop_mat16x16<f16, A>>(&kt[iq{kk}], sk);\n",
            4 * kk
        );
        for j in 0..2 {
            scores += &format!(
                "        let ik{j}_{kk} = {}u * SK + {}u;\n        let kf{j}_{kk} = coopLoad<coop_mat16x16<f16, B>>(&kt[ik{j}_{kk}], sk);\n        sf{j} = coopMultiplyAdd(q{kk}, kf{j}_{kk}, sf{j});\n",
                16 * j,
                4 * kk
            );
        }
        accs += &format!("    var o{kk} = coop_mat16x16<f32, C>();\n");
        emits += &format!("    emit(o{kk}, {kk}u, own, lane, b0, sg, h, n, inv_l);\n");
    }
    let rescales = coopmat_rescales(frags);
    scores += "        let is0 = own;\n        let is1 = own + 4u;\n        coopStoreT(sf0, &st[is0], st_stride);\n        coopStoreT(sf1, &st[is1], st_stride);\n";
    for j in 0..2 {
        values += &format!(
            "        let ip{j} = own_p + {}u;\n        let p{j} = coopLoadT<coop_mat16x16<f16, A>>(&pt[ip{j}], pt_stride);\n",
            4 * j
        );
        for dd in 0..frags {
            values += &format!(
                "        let iv{j}_{dd} = {}u * SK + {}u;\n        let vf{j}_{dd} = coopLoadT<coop_mat16x16<f16, B>>(&vt[iv{j}_{dd}], sk);\n        o{dd} = coopMultiplyAdd(p{j}, vf{j}_{dd}, o{dd});\n",
                16 * j,
                4 * dd
            );
        }
    }
    let sk = d / 4 + 2;
    include_str!("coopmat.wgsl")
        .replace("Q_FRAGMENTS\n", &q_frags)
        .replace("SCORES\n", &scores)
        .replace("OUT_ACCUMULATORS\n", &accs)
        .replace("RESCALES\n", &rescales)
        .replace("VALUES\n", &values)
        .replace("EMITS\n", &emits)
        .replace("KT_SIZEu", &format!("{}u", COOPMAT_ROWS * sk))
        .replace("VT_SIZEu", &format!("{}u", 32 * sk))
        .replace("HEAD_DIMu", &format!("{d}u"))
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
    /// GPUs: run `coopmat.wgsl` (tensor cores) instead of `batched.wgsl`; see
    /// [`Self::coopmat_supported`]. The prefill graph sets it where its gemm runs on
    /// cooperative matrices.
    pub coopmat: bool,
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

    /// Whether `coopmat.wgsl` runs this op on `gpu`: 16x16 f16 cooperative matrices with
    /// f32 accumulators and subgroups of 32 (as the coopmat gemm), heads of a multiple of
    /// 16 up to 128 dims, q and out rows in whole vec4s, and its workgroup memory.
    pub fn coopmat_supported(&self, gpu: &Gpu) -> Result<(), String> {
        let d = self.attn.head_dim;
        if !d.is_multiple_of(16) || !(16..=COOPMAT_MAX_HEAD_DIM).contains(&d) {
            return Err(format!(
                "the coopmat attention takes heads of a multiple of 16 up to {COOPMAT_MAX_HEAD_DIM} dims, not {d}"
            ));
        }
        if !self.q_stride.is_multiple_of(4) || !self.out_stride.is_multiple_of(4) {
            return Err("the coopmat attention reads q and out rows as vec4s".into());
        }
        crate::gemv::GemmKind::Coopmat.supported(gpu)?;
        let limit = gpu.limits().max_compute_workgroup_storage_size;
        let bytes = coopmat_workgroup_bytes(d);
        if limit < bytes {
            return Err(format!(
                "the coopmat attention stages {bytes} bytes of workgroup memory, the device allows {limit}"
            ));
        }
        Ok(())
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
        // coopmat.wgsl checks its own head sizes (`coopmat_supported`).
        let coopmat = self.coopmat && variant != AttnVariant::Subgroup;
        if !coopmat
            && (a.head_dim == 0
                || a.head_dim > MAX_HEAD_DIM
                || !WG.is_multiple_of(a.head_dim)
                || !a.head_dim.is_multiple_of(4))
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
        // The coopmat kernel is built without naga's runtime checks (`coopmat_form`).
        let (shader, grid, trusted) = if coopmat {
            self.coopmat_form(gpu, &mut constants)?
        } else if variant == AttnVariant::Subgroup {
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
                false,
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
                false,
            )
        };
        let pipeline = if trusted {
            gpu.pipeline_trusted(shader, "main", &constants)?
        } else {
            gpu.pipeline(shader, "main", &constants)?
        };
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

    /// `coopmat.wgsl`'s shader and grid, its MAX_BATCH added to `constants`; it is built
    /// without naga's runtime checks (as the coopmat gemm: on an H100 they cost it 3.6x).
    /// In range by construction, with the sizes `dispatch_variant` checked: q and out rows
    /// are below min(params[1], MAX_BATCH) <= max_batch (q read at clamped rows, out
    /// written below them), cache rows clamped below MAX_CTX, and the workgroup arrays'
    /// indices as the kernel's header works out.
    fn coopmat_form(
        &self,
        gpu: &Gpu,
        constants: &mut Vec<(&str, f64)>,
    ) -> Result<(&'static ShaderSource, [u32; 3], bool), GpuError> {
        self.coopmat_supported(gpu)
            .map_err(|why| GpuError::Invalid(format!("{self:?}: {why}")))?;
        constants.push(("MAX_BATCH", f64::from(self.max_batch)));
        let grid = [self.attn.n_heads, self.max_batch.div_ceil(COOPMAT_ROWS), 1];
        Ok((coopmat_shader(self.attn.head_dim), grid, true))
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
