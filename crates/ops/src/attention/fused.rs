//! [`AttnFused`] (`attention`): scores, softmax and values for one query in one
//! dispatch, what the decoder uses. The two-op form ([`super::AttnScores`] + softmax +
//! [`super::AttnValues`]) stays as the oracle's structure and for comparisons.
//!
//! Variants ([`AttnVariant`], `--kernel attention=NAME`):
//! - `workgroup` (op `attention`): one 256-thread workgroup per head (`fused.wgsl`);
//! - `subgroup` (op `attention`): one subgroup per head, lanes over head dims, no barrier
//!   (`subgroup.wgsl`): for CPU adapters;
//! - `groups` (op `attention`): one workgroup of up to 1024 threads per head in groups of
//!   head_dim / 4 lanes, each group walking its share of the positions with its own online
//!   softmax, merged once at the end (`groups.wgsl`): GPUs with subgroups, decode contexts;
//! - `split` (ops `attention_split` + `attention_combine`): split-K, the context in
//!   chunks of [`AttnFused::split_chunk`] positions over `n_heads × splits` workgroups,
//!   then a merge (`groups.wgsl` where `groups` runs, else `fused.wgsl`, with CHUNK > 0;
//!   `combine.wgsl`): long contexts on large GPUs, where one workgroup per head leaves
//!   most of the GPU idle.

use gpuscope_runtime::{Cost, Dispatch, Gpu, GpuBuffer, GpuError, ShaderSource};

use super::{AttnScores, AttnValues};
use crate::softmax::Softmax;

pub static FUSED_SHADER: ShaderSource = ShaderSource {
    name: "attention",
    wgsl: concat!(include_str!("fused.wgsl"), "\n", include_str!("emit.wgsl")),
};

/// `fused.wgsl` with its (max, sum) merge done by subgroup operations: a subgroupMax and
/// a subgroupAdd, then the subgroups' pairs merged after one barrier, instead of a tree of
/// eight barriers. Built once, for adapters offering SUBGROUP.
pub fn fused_sg_shader() -> &'static ShaderSource {
    static SHADER: std::sync::OnceLock<ShaderSource> = std::sync::OnceLock::new();
    SHADER.get_or_init(|| {
        let mut s = FUSED_SHADER.wgsl.to_string();
        let start = s.find("fn reduce_softmax(").expect("fused.wgsl has reduce_softmax");
        let end = start + s[start..].find("\n}\n").expect("reduce_softmax ends") + 3;
        s.replace_range(start..end, REDUCE_SOFTMAX_SG);
        let from = "    @builtin(local_invocation_index) lid: u32,\n) {\n";
        assert_eq!(s.matches(from).count(), 1, "fused.wgsl: main's parameters");
        s = s.replacen(
            from,
            "    @builtin(local_invocation_index) lid: u32,\n    @builtin(subgroup_invocation_id) sg_lane: u32,\n    @builtin(subgroup_size) sg_size: u32,\n) {\n    sg_lane_p = sg_lane;\n    sg_size_p = sg_size;\n",
            1,
        );
        ShaderSource {
            name: "attention.sg",
            wgsl: Box::leak(s.into_boxed_str()),
        }
    })
}

const REDUCE_SOFTMAX_SG: &str = "var<private> sg_lane_p: u32;
var<private> sg_size_p: u32;

// Merges every thread's (max, Σ exp(s - max)) into the workgroup's, returned to all:
// within each subgroup by subgroupMax / subgroupAdd, then over the subgroups.
fn reduce_softmax(lid: u32, m: f32, l: f32) -> vec2<f32> {
    let sm = subgroupMax(m);
    let sl = subgroupAdd(l * exp(m - sm));
    if sg_lane_p == 0u {
        red_m[lid / sg_size_p] = sm;
        red_l[lid / sg_size_p] = sl;
    }
    workgroupBarrier();
    let n = WG / sg_size_p;
    var mx = NEG;
    for (var i = 0u; i < n; i++) {
        mx = max(mx, red_m[i]);
    }
    var sum = 0.0;
    for (var i = 0u; i < n; i++) {
        sum += red_l[i] * exp(red_m[i] - mx);
    }
    workgroupBarrier();
    return vec2<f32>(mx, sum);
}
";

/// The `subgroup` variant's kernel with K and V read as `vec4<f32>`.
pub static SUBGROUP_SHADER: ShaderSource = ShaderSource {
    name: "attention.subgroup",
    wgsl: concat!(
        include_str!("subgroup.wgsl"),
        "\n",
        include_str!("subgroup_kv.wgsl")
    ),
};

/// The `subgroup` variant's kernel with K and V read as `vec4<u64>` (8 floats a load:
/// SHADER_INT64, 2 or 4 vec4s of a row per lane).
pub static SUBGROUP_WIDE_SHADER: ShaderSource = ShaderSource {
    name: "attention.subgroup.wide",
    wgsl: concat!(
        include_str!("subgroup.wgsl"),
        "\n",
        include_str!("subgroup_kv_wide.wgsl")
    ),
};

/// Query heads per `subgroup` workgroup: the largest divisor of the heads sharing a KV
/// head up to 4 (the kernel's head slots), so every workgroup has the same count and
/// loads each K / V row once for all of them.
pub(super) fn subgroup_heads_per_workgroup(op: &AttnFused) -> u32 {
    let group = op.n_heads / op.n_kv_heads;
    (1..=4)
        .rev()
        .find(|h| group.is_multiple_of(*h))
        .unwrap_or(1)
}

/// Threads per workgroup the `groups` variant may take, largest first.
pub(super) const GROUPS_WG: [u32; 5] = [1024, 512, 256, 128, 64];
/// Workgroup memory of `groups.wgsl`: per thread (m, l) and a vec4 accumulator.
const GROUPS_BYTES_PER_THREAD: u32 = 8 + 16;

/// `groups.wgsl` for `wg` threads a workgroup (one of `GROUPS_WG`), named
/// `attention.groups<wg>`: built once per size.
pub fn groups_shader(wg: u32) -> &'static ShaderSource {
    static SHADERS: std::sync::OnceLock<Vec<ShaderSource>> = std::sync::OnceLock::new();
    let shaders = SHADERS.get_or_init(|| {
        GROUPS_WG
            .iter()
            .map(|wg| ShaderSource {
                name: Box::leak(format!("attention.groups{wg}").into_boxed_str()),
                wgsl: Box::leak(
                    concat!(
                        include_str!("groups.wgsl"),
                        "\n",
                        include_str!("groups_main.wgsl"),
                        "\n",
                        include_str!("emit.wgsl")
                    )
                    .replace("WG_THREADS", &wg.to_string())
                    .into_boxed_str(),
                ),
            })
            .collect()
    });
    let i = GROUPS_WG
        .iter()
        .position(|&w| w == wg)
        .expect("groups_shader: a size of GROUPS_WG");
    &shaders[i]
}

/// Every size's `groups` shader (the CPU executor's table).
pub fn groups_shaders() -> Vec<&'static str> {
    GROUPS_WG.iter().map(|&wg| groups_shader(wg).name).collect()
}

/// The `groups` variant's workgroup size on `gpu`: the largest of [`GROUPS_WG`] the
/// adapter's limits allow (threads, x size, workgroup memory).
pub(super) fn groups_wg(gpu: &Gpu) -> Option<u32> {
    let limits = gpu.limits();
    GROUPS_WG.into_iter().find(|&wg| {
        wg <= limits.max_compute_invocations_per_workgroup
            && wg <= limits.max_compute_workgroup_size_x
            && wg * GROUPS_BYTES_PER_THREAD <= limits.max_compute_workgroup_storage_size
    })
}

pub static COMBINE_SHADER: ShaderSource = ShaderSource {
    name: "attention_combine",
    wgsl: include_str!("combine.wgsl"),
};

/// The `workgroup` variant's shader: [`fused_sg_shader`] where the adapter has SUBGROUP,
/// else `fused.wgsl` with its tree of barriers.
fn workgroup_shader(gpu: &Gpu) -> &'static ShaderSource {
    if gpu
        .features()
        .contains(gpuscope_runtime::wgpu::Features::SUBGROUP)
    {
        fused_sg_shader()
    } else {
        &FUSED_SHADER
    }
}

/// Most positions per split-K workgroup (one pass of the 256-thread workgroup).
pub const SPLIT_CHUNK: u32 = 256;
/// Fewest positions per split-K workgroup: below that the merge costs more than the
/// shorter serial part saves.
pub const MIN_SPLIT_CHUNK: u32 = 32;
/// Workgroups per head the `split` variant aims for at its context length: SmolLM2's
/// 9 heads become 72 workgroups, enough to spread over a large GPU's SMs.
pub const SPLIT_TARGET: u32 = 8;

/// Which attention kernel runs (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AttnVariant {
    Workgroup,
    Subgroup,
    Groups,
    Split,
}

impl AttnVariant {
    pub const ALL: [AttnVariant; 4] = [Self::Workgroup, Self::Subgroup, Self::Groups, Self::Split];

    pub fn name(self) -> &'static str {
        match self {
            Self::Workgroup => "workgroup",
            Self::Subgroup => "subgroup",
            Self::Groups => "groups",
            Self::Split => "split",
        }
    }

    pub fn parse(name: &str) -> Option<AttnVariant> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }

    /// `subgroup` on CPU adapters that can run it; on GPUs `split` for contexts longer
    /// than 2 chunks (512 positions), where n_heads workgroups would leave most of a
    /// large GPU idle, else `groups` where it runs, else `workgroup`: `groups` beats
    /// `workgroup` at every context measured, `split` beats `groups` from about 512
    /// positions, more the longer the context (measured: BENCHMARKS.md, run 12).
    pub fn for_adapter(gpu: &Gpu, op: &AttnFused) -> AttnVariant {
        let cpu = gpu.adapter_info().device_type == gpuscope_runtime::wgpu::DeviceType::Cpu;
        if cpu && Self::Subgroup.supported(gpu, op).is_ok() {
            Self::Subgroup
        } else if !cpu && op.max_ctx > 2 * SPLIT_CHUNK {
            Self::Split
        } else if !cpu && Self::Groups.supported(gpu, op).is_ok() {
            Self::Groups
        } else {
            Self::Workgroup
        }
    }

    /// Whether `gpu` can run this variant for `op`'s shape, and if not, why.
    pub fn supported(self, gpu: &Gpu, op: &AttnFused) -> Result<(), String> {
        if op.head_dim == 0 || !WG.is_multiple_of(op.head_dim) || !op.head_dim.is_multiple_of(4) {
            return Err(format!(
                "fused attention needs head_dim to divide {WG} and be a multiple of 4 (head_dim {}); the unfused scores, softmax and values take it",
                op.head_dim
            ));
        }
        if !matches!(self, Self::Subgroup | Self::Groups) {
            return Ok(());
        }
        let info = gpu.adapter_info();
        if !gpu
            .features()
            .contains(gpuscope_runtime::wgpu::Features::SUBGROUP)
        {
            return Err(format!(
                "attention variant `{}` needs the SUBGROUP feature, which \"{}\" does not offer",
                self.name(),
                info.name
            ));
        }
        if self == Self::Groups {
            let lanes = op.head_dim / 4;
            if !lanes.is_power_of_two() || lanes > info.subgroup_min_size {
                return Err(format!(
                    "attention variant `groups` needs head_dim / 4 to be a power of two no larger than the smallest subgroup (\"{}\": {} lanes; head_dim {})",
                    info.name, info.subgroup_min_size, op.head_dim
                ));
            }
            return match groups_wg(gpu) {
                Some(wg) if wg >= lanes => Ok(()),
                _ => Err(format!(
                    "attention variant `groups` needs a workgroup of at least 64 threads and {} bytes of workgroup memory per thread",
                    GROUPS_BYTES_PER_THREAD
                )),
            };
        }
        let sg = info.subgroup_min_size;
        let vpl = (op.head_dim / 4) / sg.max(1);
        if info.subgroup_max_size != sg
            || !op.head_dim.is_multiple_of(4 * sg)
            || !matches!(vpl, 1 | 2 | 4)
        {
            return Err(format!(
                "attention variant `subgroup` needs one subgroup size (\"{}\" has {}..{}) and head_dim / 4 of 1, 2 or 4 per lane (head_dim {})",
                info.name, sg, info.subgroup_max_size, op.head_dim
            ));
        }
        Ok(())
    }
}

/// Threads per workgroup in `fused.wgsl`; `head_dim` must divide it.
const WG: u32 = 256;

/// `softmax(q·Kᵀ/sqrt(head_dim))·V` for one query, all heads, grouped-query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttnFused {
    pub n_heads: u32,
    pub n_kv_heads: u32,
    pub head_dim: u32,
    pub max_ctx: u32,
}

impl AttnFused {
    pub const OP: &'static str = "attention";
    pub const OP_SPLIT: &'static str = "attention_split";
    pub const OP_COMBINE: &'static str = "attention_combine";

    /// The unfused ops computing the same: scores, softmax over their rows, values.
    pub fn parts(&self) -> (AttnScores, Softmax, AttnValues) {
        let (n_heads, n_kv_heads, head_dim, max_ctx) =
            (self.n_heads, self.n_kv_heads, self.head_dim, self.max_ctx);
        (
            AttnScores {
                n_heads,
                n_kv_heads,
                head_dim,
                max_ctx,
            },
            Softmax {
                rows: n_heads,
                row_stride: max_ctx,
            },
            AttnValues {
                n_heads,
                n_kv_heads,
                head_dim,
                max_ctx,
            },
        )
    }

    /// The oracle: the three unfused ops in sequence.
    pub fn cpu<T: crate::Real>(
        &self,
        n_ctx: u32,
        q: &[T],
        k_cache: &[T],
        v_cache: &[T],
        out: &mut [T],
    ) {
        let (scores_op, softmax, values) = self.parts();
        let mut scores = vec![T::zero(); (self.n_heads * self.max_ctx) as usize];
        scores_op.cpu(n_ctx, q, k_cache, &mut scores);
        softmax.cpu(n_ctx, &mut scores);
        values.cpu(n_ctx, &scores, v_cache, out);
    }

    /// The `split` variant's first pass: for head h and split s (positions
    /// `[s·chunk, (s+1)·chunk)` of the first `n_ctx`), `HEAD_DIM` sums Σ e^(x−m)·v, then m
    /// (the split's largest scaled score) and l = Σ e^(x−m), at
    /// `(h·splits + s)·(HEAD_DIM + 2)` of `partials`; an empty split writes zeros,
    /// m = -3e38 and l = 0, as the kernel does.
    pub fn cpu_split<T: crate::Real>(
        &self,
        n_ctx: u32,
        chunk: u32,
        q: &[T],
        k_cache: &[T],
        v_cache: &[T],
        partials: &mut [T],
    ) {
        let (scores_op, _, _) = self.parts();
        let mut scores = vec![T::zero(); (self.n_heads * self.max_ctx) as usize];
        scores_op.cpu(n_ctx, q, k_cache, &mut scores);
        let hd = self.head_dim as usize;
        let kv_row = self.n_kv_heads as usize * hd;
        let group = (self.n_heads / self.n_kv_heads) as usize;
        let splits = self.max_ctx.div_ceil(chunk) as usize;
        for h in 0..self.n_heads as usize {
            let row = &scores[h * self.max_ctx as usize..][..n_ctx as usize];
            for sp in 0..splits {
                let start = (sp * chunk as usize).min(n_ctx as usize);
                let stop = ((sp + 1) * chunk as usize).min(n_ctx as usize);
                let out = &mut partials[(h * splits + sp) * (hd + 2)..][..hd + 2];
                out.fill(T::zero());
                let m = row[start..stop]
                    .iter()
                    .fold(T::of(-3.0e38), |m, &x| m.max(x));
                let mut l = T::zero();
                for (t, &x) in row.iter().enumerate().take(stop).skip(start) {
                    let p = (x - m).exp();
                    l = l + p;
                    let v = &v_cache[t * kv_row + (h / group) * hd..][..hd];
                    for (o, &v) in out[..hd].iter_mut().zip(v) {
                        *o = *o + p * v;
                    }
                }
                out[hd] = m;
                out[hd + 1] = l;
            }
        }
    }

    /// The `split` variant's merge over the splits `n_ctx` uses (`chunk` positions each):
    /// `Σ_s e^(m_s − M)·acc_s / Σ_s e^(m_s − M)·l_s`, M the largest m_s.
    pub fn cpu_combine<T: crate::Real>(
        &self,
        n_ctx: u32,
        chunk: u32,
        partials: &[T],
        out: &mut [T],
    ) {
        let hd = self.head_dim as usize;
        let splits = self.max_ctx.div_ceil(chunk) as usize;
        let used = (n_ctx.div_ceil(chunk) as usize).min(splits);
        for h in 0..self.n_heads as usize {
            let part = |s: usize| &partials[(h * splits + s) * (hd + 2)..][..hd + 2];
            let top = (0..used).fold(T::of(-3.0e38), |m, s| m.max(part(s)[hd]));
            let den = (0..used).fold(T::zero(), |a, s| {
                a + (part(s)[hd] - top).exp() * part(s)[hd + 1]
            });
            for d in 0..hd {
                let num =
                    (0..used).fold(T::zero(), |a, s| a + (part(s)[hd] - top).exp() * part(s)[d]);
                out[h * hd + d] = num / den;
            }
        }
    }

    /// At `n_ctx` rows: q, the K and V rows of every kv head, and the output, each once;
    /// a multiply-add per element of each dot product and of the weighted sum.
    pub fn cost_at(&self, n_ctx: u32) -> Cost {
        let (h, kv, hd, n) = (
            self.n_heads as u64,
            self.n_kv_heads as u64,
            self.head_dim as u64,
            n_ctx as u64,
        );
        Cost {
            bytes: 4 + 4 * (h * hd + 2 * n * kv * hd + h * hd),
            flops: 4 * h * n * hd,
        }
    }

    /// `cost_at(1)`: the decoder replaces it per token (see the module docs of attention).
    pub fn cost(&self) -> Cost {
        self.cost_at(1)
    }

    /// Positions per workgroup of the `split` variant: the context over about
    /// `SPLIT_TARGET` workgroups per head, a power of two from `MIN_SPLIT_CHUNK` to
    /// `SPLIT_CHUNK`.
    pub fn split_chunk(&self) -> u32 {
        self.max_ctx
            .div_ceil(SPLIT_TARGET)
            .next_power_of_two()
            .clamp(MIN_SPLIT_CHUNK, SPLIT_CHUNK)
    }

    /// Splits of the context for the `split` variant.
    pub fn splits(&self) -> u32 {
        self.max_ctx.div_ceil(self.split_chunk())
    }

    /// Bytes of the `split` variant's partials: per head and split, HEAD_DIM sums, m, l.
    pub fn split_scratch_bytes(&self) -> u64 {
        4 * u64::from(self.n_heads) * u64::from(self.splits()) * u64::from(self.head_dim + 2)
    }

    /// The `workgroup` variant (one dispatch, op `attention`).
    pub fn dispatch(
        &self,
        gpu: &Gpu,
        step: &GpuBuffer,
        q: &GpuBuffer,
        k_cache: &GpuBuffer,
        v_cache: &GpuBuffer,
        out: &GpuBuffer,
    ) -> Result<Dispatch, GpuError> {
        let mut ds = self.dispatch_variant(
            gpu,
            AttnVariant::Workgroup,
            [step, q, k_cache, v_cache, out],
            None,
        )?;
        Ok(ds.remove(0))
    }

    /// The dispatches of `variant`: one, or two for `split`, which needs `scratch`
    /// ([`Self::split_scratch_bytes`]) for its partials. Buffers: step, q, k_cache,
    /// v_cache, out.
    pub fn dispatch_variant(
        &self,
        gpu: &Gpu,
        variant: AttnVariant,
        buffers: [&GpuBuffer; 5],
        scratch: Option<&GpuBuffer>,
    ) -> Result<Vec<Dispatch>, GpuError> {
        variant
            .supported(gpu, self)
            .map_err(|what| self.invalid(what))?;
        self.check_buffers(buffers)?;
        let [step, q, k_cache, v_cache, out] = buffers;
        match variant {
            AttnVariant::Subgroup => Ok(vec![self.dispatch_subgroup(
                gpu,
                self.subgroup_wide(gpu),
                buffers,
            )?]),
            AttnVariant::Workgroup | AttnVariant::Groups => {
                let shader = match variant {
                    AttnVariant::Groups => {
                        groups_shader(groups_wg(gpu).expect("checked by supported"))
                    }
                    _ => workgroup_shader(gpu),
                };
                let pipeline = gpu.pipeline(shader, "main", &self.constants())?;
                let bind_group = gpu.bind_group(&pipeline, &buffers)?;
                Ok(vec![Dispatch::new(
                    Self::OP,
                    pipeline,
                    bind_group,
                    [self.n_heads, 1, 1],
                    self.cost(),
                    &[step, q, k_cache, v_cache],
                    &[out],
                )])
            }
            AttnVariant::Split => {
                let scratch = scratch
                    .ok_or_else(|| self.invalid("split attention needs a scratch buffer".into()))?;
                self.dispatch_split(gpu, buffers, scratch)
            }
        }
    }

    fn invalid(&self, what: String) -> GpuError {
        GpuError::Invalid(format!("{self:?}: {what}"))
    }

    /// The shape's constraints, and each buffer (step, q, k_cache, v_cache, out) at
    /// least as large as the shape needs.
    fn check_buffers(
        &self,
        [step, q, k_cache, v_cache, out]: [&GpuBuffer; 5],
    ) -> Result<(), GpuError> {
        if self.n_kv_heads == 0 || !self.n_heads.is_multiple_of(self.n_kv_heads) {
            return Err(self.invalid("n_heads must be a multiple of n_kv_heads".into()));
        }
        if self.head_dim == 0
            || self.head_dim > WG
            || !WG.is_multiple_of(self.head_dim)
            || !self.head_dim.is_multiple_of(4)
        {
            return Err(self.invalid(format!("head_dim must divide {WG} and be a multiple of 4")));
        }
        let q_bytes = 4 * (self.n_heads * self.head_dim) as u64;
        let cache_bytes = 4 * (self.n_kv_heads * self.head_dim) as u64 * self.max_ctx as u64;
        for (buf, bytes, role) in [
            (step, 16, "step"),
            (q, q_bytes, "q"),
            (k_cache, cache_bytes, "k_cache"),
            (v_cache, cache_bytes, "v_cache"),
            (out, q_bytes, "out"),
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

    /// The override constants of the workgroup, groups and split kernels.
    pub(super) fn constants(&self) -> Vec<(&'static str, f64)> {
        vec![
            ("N_HEADS", self.n_heads as f64),
            ("N_KV_HEADS", self.n_kv_heads as f64),
            ("HEAD_DIM", self.head_dim as f64),
            ("MAX_CTX", self.max_ctx as f64),
            ("SCALE", 1.0 / (self.head_dim as f64).sqrt()),
        ]
    }

    /// The `split` variant: partials of each chunk of positions into `scratch`, then
    /// one dispatch combining them into `out`.
    fn dispatch_split(
        &self,
        gpu: &Gpu,
        [step, q, k_cache, v_cache, out]: [&GpuBuffer; 5],
        scratch: &GpuBuffer,
    ) -> Result<Vec<Dispatch>, GpuError> {
        if scratch.size() < self.split_scratch_bytes() {
            return Err(self.invalid(format!(
                "scratch buffer \"{}\" has {} bytes, needs {}",
                scratch.label(),
                scratch.size(),
                self.split_scratch_bytes()
            )));
        }
        if self.splits() > 65535 {
            return Err(self.invalid("more than 65535 splits".into()));
        }
        let mut split_constants = self.constants();
        split_constants.push(("CHUNK", f64::from(self.split_chunk())));
        // The first pass runs on the `groups` kernel where the adapter can run it
        // (H100: faster than fused.wgsl's, as for one workgroup per head).
        let shader = if AttnVariant::Groups.supported(gpu, self).is_ok() {
            groups_shader(groups_wg(gpu).expect("checked by supported"))
        } else {
            workgroup_shader(gpu)
        };
        let pipeline = gpu.pipeline(shader, "main", &split_constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[step, q, k_cache, v_cache, scratch])?;
        let split = Dispatch::new(
            Self::OP_SPLIT,
            pipeline,
            bind_group,
            [self.n_heads, self.splits(), 1],
            self.cost_split_at(1),
            &[step, q, k_cache, v_cache],
            &[scratch],
        );
        let pipeline = gpu.pipeline(
            &COMBINE_SHADER,
            "main",
            &[
                ("N_HEADS", self.n_heads as f64),
                ("HEAD_DIM", self.head_dim as f64),
                ("MAX_CTX", self.max_ctx as f64),
                ("CHUNK", f64::from(self.split_chunk())),
                ("SPLITS", f64::from(self.splits())),
            ],
        )?;
        let bind_group = gpu.bind_group(&pipeline, &[step, scratch, out])?;
        let combine = Dispatch::new(
            Self::OP_COMBINE,
            pipeline,
            bind_group,
            [self.n_heads, 1, 1],
            self.cost_combine_at(1),
            &[step, scratch],
            &[out],
        );
        Ok(vec![split, combine])
    }

    /// Whether the `subgroup` variant reads K and V as `vec4<u64>` on `gpu`: where the
    /// device has 64-bit integers and a lane's part of a row is whole pairs of vec4s
    /// (lavapipe, SmolLM2 at 300 positions: about half the time of `vec4<f32>` loads;
    /// BENCHMARKS.md).
    pub fn subgroup_wide(&self, gpu: &Gpu) -> bool {
        gpu.features()
            .contains(gpuscope_runtime::wgpu::Features::SHADER_INT64)
            && matches!(
                self.head_dim / 4 / gpu.adapter_info().subgroup_min_size.max(1),
                2 | 4
            )
    }

    /// The `subgroup` variant's dispatch, with K and V read as `vec4<u64>` when `wide`
    /// (see [`Self::subgroup_wide`]; the decoder takes that choice, tests run both):
    /// one workgroup per KV head and group of (up to 4) query
    /// heads. The caller has checked the variant and the buffers
    /// ([`Self::dispatch_variant`] does).
    pub fn dispatch_subgroup(
        &self,
        gpu: &Gpu,
        wide: bool,
        [step, q, k_cache, v_cache, out]: [&GpuBuffer; 5],
    ) -> Result<Dispatch, GpuError> {
        let sg = gpu.adapter_info().subgroup_min_size;
        let hpw = subgroup_heads_per_workgroup(self);
        let constants = [
            ("N_HEADS", self.n_heads as f64),
            ("N_KV_HEADS", self.n_kv_heads as f64),
            ("HEAD_DIM", self.head_dim as f64),
            ("MAX_CTX", self.max_ctx as f64),
            ("SCALE", 1.0 / (self.head_dim as f64).sqrt()),
            ("SG", f64::from(sg)),
            ("HPW", f64::from(hpw)),
        ];
        let shader = if wide {
            &SUBGROUP_WIDE_SHADER
        } else {
            &SUBGROUP_SHADER
        };
        let pipeline = gpu.pipeline(shader, "main", &constants)?;
        let bind_group = gpu.bind_group(&pipeline, &[step, q, k_cache, v_cache, out])?;
        Ok(Dispatch::new(
            Self::OP,
            pipeline,
            bind_group,
            [self.n_kv_heads, self.n_heads / self.n_kv_heads / hpw, 1],
            self.cost(),
            &[step, q, k_cache, v_cache],
            &[out],
        ))
    }

    /// The split pass at `n_ctx`: the fused cost plus its partials written.
    pub fn cost_split_at(&self, n_ctx: u32) -> Cost {
        let used = u64::from(n_ctx.div_ceil(self.split_chunk()).max(1));
        let c = self.cost_at(n_ctx);
        let partials = 4 * u64::from(self.n_heads) * used * u64::from(self.head_dim + 2);
        Cost {
            bytes: c.bytes - 4 * u64::from(self.n_heads * self.head_dim) + partials,
            flops: c.flops,
        }
    }

    /// The combine pass at `n_ctx`: the used partials read, the output written; a
    /// multiply-add per partial element for the numerator and the denominator.
    pub fn cost_combine_at(&self, n_ctx: u32) -> Cost {
        let used = u64::from(n_ctx.div_ceil(self.split_chunk()).max(1));
        let (h, hd) = (u64::from(self.n_heads), u64::from(self.head_dim));
        Cost {
            bytes: 4 + 4 * (h * used * (hd + 2) + h * hd),
            flops: 4 * h * used * hd,
        }
    }
}
