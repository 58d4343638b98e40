//! Which kernels the decode graph uses: the gemv and attention variants and the fusions,
//! chosen per adapter ([`KernelPlan::for_adapter`]), overridable (`--kernel`, `--fuse`),
//! and recorded in profiles ([`gpuscope_trace::WorkloadDesc::settings`]) so a report
//! always says what ran. Op names stay the kernel family (`gemv_q4_1`, `attention`; a
//! fused op's name lists what it fused, `rms_norm+gemv_q4_1+rope`).

use std::collections::BTreeMap;

use gpuscope_ops::attention::{AttnFused, AttnVariant};
use gpuscope_ops::gemv::{GemmKind, GemvVariant, WeightLayout};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::Gpu;

/// One switchable fusion of the decode graph.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Fusion {
    /// rms_norm folded into the gemv after it (q/k/v, gate/up, the output head): Σx²
    /// beside the dot products, the norm's scale one scalar per row.
    Norm,
    /// rope and the KV-cache append in the q/k/v gemv's epilogue, or, where q/k head
    /// norms come between them (Qwen3, Gemma 3), in the head norms' kernel.
    Rope,
    /// silu(gate)·up, or gelu(gate)·up (GeGLU), in the gate/up gemv's epilogue.
    Silu,
    /// The residual adds in the output projections' epilogues (y += W·x), or, after a
    /// post norm (Gemma 3), in the norm's kernel.
    Residual,
    /// Scores, softmax and values of attention in one kernel.
    Attention,
    /// A post norm (Gemma 3) and its residual add in the next gemv's input, where that
    /// gemv runs the dp4a frame with its own norm folded in (with `norm` and `residual`;
    /// else the post norm is an `rms_norm+add` dispatch). The gemv's first workgroup
    /// writes the new residual stream to the other of two residual buffers.
    PostNorm,
    /// The output projection in attention's kernel (`attention+gemv`: each head's share
    /// of W_o · attention), its residual add in the next gemv's input, which writes the
    /// new residual stream to the other of two residual buffers. Where the `groups`
    /// attention runs, the next gemv is in the dp4a frame with its norm folded in, and
    /// the model's dim fits a workgroup (small models: SmolLM2, Qwen2.5 0.5B); with
    /// `norm` and `residual`.
    AttnOutput,
    /// The down projection in the gate/up gemv's kernel (`+silu_mul+gemv_<fmt>`): each
    /// workgroup multiplies its 32 values of silu(gate)·up into their block column of
    /// W_down, a partial of the residual's update; the next layer's q/k/v gemv adds the
    /// partials to the residual stream as it loads it, in order, and writes the new
    /// residual to the other of two residual buffers. Where gate/up and the next q/k/v
    /// run the dp4a frame with the norm folded in, the down matrix is gate/up's packed
    /// format, the FFN has at most 64 blocks of 32 (`activations.rs`) and
    /// silu is the activation (SmolLM2); with `norm`, `silu` and `residual`. Not in the
    /// last layer (the output head does not add partials).
    Down,
}

impl Fusion {
    pub const ALL: [Fusion; 8] = [
        Self::Norm,
        Self::Rope,
        Self::Silu,
        Self::Residual,
        Self::Attention,
        Self::PostNorm,
        Self::AttnOutput,
        Self::Down,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Norm => "norm",
            Self::Rope => "rope",
            Self::Silu => "silu",
            Self::Residual => "residual",
            Self::Attention => "attention",
            Self::PostNorm => "post_norm",
            Self::AttnOutput => "attn_output",
            Self::Down => "down",
        }
    }
}

/// A set of fusions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Fusions(u8);

impl Fusions {
    pub fn all() -> Fusions {
        Fusion::ALL.into_iter().collect()
    }

    pub fn none() -> Fusions {
        Fusions(0)
    }

    pub fn has(self, f: Fusion) -> bool {
        self.0 & (1 << f as u8) != 0
    }

    pub fn with(self, f: Fusion) -> Fusions {
        Fusions(self.0 | (1 << f as u8))
    }

    pub fn without(self, f: Fusion) -> Fusions {
        Fusions(self.0 & !(1 << f as u8))
    }

    /// `all`, `none`, or a comma-separated list of fusion names (`norm,rope`).
    pub fn parse(s: &str) -> Result<Fusions, String> {
        match s.trim() {
            "all" => return Ok(Fusions::all()),
            "none" | "" => return Ok(Fusions::none()),
            _ => {}
        }
        s.split(',')
            .map(|name| {
                let name = name.trim();
                Fusion::ALL
                    .into_iter()
                    .find(|f| f.name() == name)
                    .ok_or_else(|| {
                        format!(
                            "unknown fusion `{name}`: expected all, none or a list of {}",
                            Fusion::ALL.map(Fusion::name).join(", ")
                        )
                    })
            })
            .collect()
    }

    /// `all`, `none`, or the names in order.
    pub fn describe(self) -> String {
        if self == Fusions::all() {
            return "all".into();
        }
        if self == Fusions::none() {
            return "none".into();
        }
        Fusion::ALL
            .into_iter()
            .filter(|f| self.has(*f))
            .map(Fusion::name)
            .collect::<Vec<_>>()
            .join(",")
    }
}

impl FromIterator<Fusion> for Fusions {
    fn from_iter<I: IntoIterator<Item = Fusion>>(iter: I) -> Fusions {
        iter.into_iter().fold(Fusions::none(), Fusions::with)
    }
}

/// Weights from which a matrix counts as large for [`KernelPlan::gemv_large`]: 2^18,
/// every matrix of SmolLM2-135M (576×576 and up) and of larger models; the tiny test
/// models' matrices stay below.
pub const LARGE_GEMV_WEIGHTS: u64 = 1 << 18;

/// The decode graph's kernel choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelPlan {
    pub gemv: GemvVariant,
    /// The variant of matrices of at least [`LARGE_GEMV_WEIGHTS`] weights, where it has a
    /// kernel for them (`None`: [`Self::gemv`] for every matrix). `dp4a` on GPUs that run
    /// it: faster for Llama-8B's matrices and, since its loads were reworked, for
    /// SmolLM2's too, hence the 2^18 threshold (measured: BENCHMARKS.md, runs 9, 12 and
    /// 13). Int8 activations are not the float decoder's function: `check` gives them
    /// chained limits of their own, and `--kernel gemv_large=none` is the float path.
    pub gemv_large: Option<GemvVariant>,
    /// `Some((lanes per row, rows per lane))`: that spread for every gemv instead of the
    /// per-shape rule (sweeps: `--kernel gemv=blocks:16x4`).
    pub gemv_shape: Option<(u32, u32)>,
    /// How q4_0 / q4_1 / q8_0 matrices are stored on the GPU (`--kernel weights=packed`);
    /// other formats, and the embedding table, keep their GGUF bytes.
    pub weights: WeightLayout,
    /// `None`: per adapter and context length ([`AttnVariant::for_adapter`]).
    pub attention: Option<AttnVariant>,
    pub fusions: Fusions,
    /// The tiled gemm prompt processing runs for q4_0 / q4_1 / q8_0 matrices (`None`: the
    /// batched gemv, 8 prompt rows per weight pass), `--kernel prefill=coopmat|dp4a|batched`.
    /// Per adapter: coopmat where wgpu offers 16x16 f16 cooperative matrices (tensor cores),
    /// else dp4a where the plan runs dp4a gemvs.
    pub prefill: Option<GemmKind>,
    /// Whether `dp4a` takes the K-quant (q4_K, q5_K) matrices too (`--kernel dp4a_k=off`
    /// leaves them to the float variant). On by default: on an H100 it made decode 1.06x
    /// (Gemma 3 270M) to 1.45x (Qwen3 0.6B) faster (BENCHMARKS.md, run 30), and the real
    /// Gemma 3 270M file passes `check` in float64 with it, the reference following the
    /// GPU's int8 rounding ([`gpuscope_ops::gemv::XRounding::Int8Following`]).
    pub dp4a_k_quants: bool,
    /// Whether [`Self::gemv`] and [`Self::gemv_large`] come from this adapter's cached
    /// sweep ([`GemvTuning`], `bench --sweep ... --save-tuning`) rather than
    /// the rules; a `--kernel gemv=` or `gemv_large=` override clears it.
    pub tuned: bool,
}

/// The gemv variants a sweep measured fastest on one adapter, as `bench --sweep
/// --save-tuning` caches them: the plan takes them as an argument
/// ([`KernelPlan::apply_tuning`]), so the library never reads the user's cache itself.
#[derive(Debug, Clone, PartialEq)]
pub struct GemvTuning {
    /// The variant of matrices below `large_weights` weights.
    pub gemv: Option<String>,
    /// The variant of matrices from `large_weights` weights.
    pub gemv_large: Option<String>,
    /// Where the sweep drew the line between the size classes.
    pub large_weights: u64,
    /// The file it came from (named in messages).
    pub source: std::path::PathBuf,
}

impl KernelPlan {
    /// What runs best on this adapter as far as measured: gemv and attention variants by
    /// device type and features (see [`GemvVariant::for_adapter`]), `dp4a` for large
    /// matrices on GPUs that run it ([`Self::gemv_large`]); every fusion (the fused
    /// attention kernel beats scores, softmax and values apart). Packed weights on CPU
    /// adapters (one 16-byte load per block instead of five 4-byte ones: faster there);
    /// GGUF bytes on GPUs for the float variants (no difference measured there).
    /// Measured: BENCHMARKS.md (run 9; "2026-11-23 — packed weights on lavapipe").
    pub fn for_adapter(gpu: &Gpu) -> KernelPlan {
        let cpu = gpu.adapter_info().device_type == gpuscope_runtime::wgpu::DeviceType::Cpu;
        let dp4a = !cpu && GemvVariant::Dp4a.supported(gpu).is_ok();
        let mut plan = KernelPlan {
            gemv: GemvVariant::for_adapter(gpu),
            gemv_large: dp4a.then_some(GemvVariant::Dp4a),
            gemv_shape: None,
            weights: if cpu {
                WeightLayout::Packed
            } else {
                WeightLayout::Gguf
            },
            attention: None,
            fusions: Fusions::all(),
            prefill: None,
            dp4a_k_quants: true,
            tuned: false,
        };
        plan.prefill = if !cpu && GemmKind::Coopmat.supported(gpu).is_ok() {
            Some(GemmKind::Coopmat)
        } else if dp4a {
            Some(GemmKind::Dp4a)
        } else {
            None
        };
        plan
    }

    /// Takes the gemv variants a sweep measured fastest on this adapter (`bench --sweep
    /// ... --save-tuning`; the CLI reads the cached file). An error (one line, naming the
    /// file) says why the tuning cannot be used here; the plan is then unchanged.
    pub fn apply_tuning(&mut self, gpu: &Gpu, t: &GemvTuning) -> Result<(), String> {
        let file = t.source.display();
        if t.large_weights != LARGE_GEMV_WEIGHTS {
            return Err(format!(
                "{file}: its large matrices start at {} weights, this build's at {LARGE_GEMV_WEIGHTS}",
                t.large_weights
            ));
        }
        let variant = |name: &Option<String>| -> Result<Option<GemvVariant>, String> {
            name.as_deref()
                .map(|n| {
                    let v = GemvVariant::parse(n).ok_or(format!("unknown gemv variant `{n}`"))?;
                    v.supported(gpu)?;
                    Ok(v)
                })
                .transpose()
                .map_err(|why: String| format!("{file}: {why}"))
        };
        let (small, large) = (variant(&t.gemv)?, variant(&t.gemv_large)?);
        if let Some(v) = small {
            self.gemv = v;
        }
        if let Some(v) = large {
            self.gemv_large = Some(v);
        }
        self.tuned = small.is_some() || large.is_some();
        Ok(())
    }

    /// Applies one `--kernel` override, `OP=VARIANT` (`gemv=rows`, `attention=split`).
    pub fn set_kernel(&mut self, spec: &str) -> Result<(), String> {
        let (op, variant) = spec
            .split_once('=')
            .ok_or_else(|| format!("`{spec}`: expected OP=VARIANT, e.g. gemv=subgroup"))?;
        let names = |all: &[&str]| all.join(", ");
        match op.trim() {
            "gemv" => {
                let (name, shape) = match variant.trim().split_once(':') {
                    Some((name, shape)) => (
                        name,
                        Some(parse_shape(shape).map_err(|e| format!("`{spec}`: {e}"))?),
                    ),
                    None => (variant.trim(), None),
                };
                self.gemv = GemvVariant::parse(name).ok_or_else(|| {
                    format!(
                        "`{spec}`: unknown gemv variant (expected {}, optionally :LANESxROWS)",
                        names(&GemvVariant::ALL.map(GemvVariant::name))
                    )
                })?;
                self.gemv_shape = shape;
                // A variant named for every gemv applies to the large ones too.
                self.gemv_large = None;
                self.tuned = false;
            }
            "gemv_large" => {
                self.tuned = false;
                self.gemv_large = match variant.trim() {
                    "none" => None,
                    name => Some(GemvVariant::parse(name).ok_or_else(|| {
                        format!(
                            "`{spec}`: unknown gemv variant (expected {} or none)",
                            names(&GemvVariant::ALL.map(GemvVariant::name))
                        )
                    })?),
                }
            }
            "dp4a_k" => {
                self.dp4a_k_quants = match variant.trim() {
                    "on" => true,
                    "off" => false,
                    _ => return Err(format!("`{spec}`: expected dp4a_k=on or dp4a_k=off")),
                }
            }
            "weights" => {
                self.weights = WeightLayout::parse(variant.trim()).ok_or_else(|| {
                    format!(
                        "`{spec}`: unknown weight layout (expected {})",
                        names(&WeightLayout::ALL.map(WeightLayout::name))
                    )
                })?
            }
            "attention" => {
                self.attention = Some(AttnVariant::parse(variant.trim()).ok_or_else(|| {
                    format!(
                        "`{spec}`: unknown attention variant (expected {})",
                        names(&AttnVariant::ALL.map(AttnVariant::name))
                    )
                })?)
            }
            "prefill" => {
                self.prefill = match variant.trim() {
                    "batched" => None,
                    name => Some(
                        GemmKind::ALL
                            .into_iter()
                            .find(|k| k.name() == name)
                            .ok_or_else(|| {
                                format!(
                                    "`{spec}`: unknown prompt kernel (expected {} or batched)",
                                    names(&GemmKind::ALL.map(GemmKind::name))
                                )
                            })?,
                    ),
                }
            }
            other => {
                return Err(format!(
                "`{spec}`: unknown op `{other}` (kernels with variants: gemv, gemv_large, dp4a_k, attention, weights, prefill)"
            ))
            }
        }
        Ok(())
    }

    /// Checks that `gpu` can run the chosen gemv variants (attention is checked per
    /// shape when the graph is built).
    /// The fused attention kernel the decode graph runs for `op` (`None`: the unfused
    /// scores, softmax and values), and why not fused when the plan asked for it but the
    /// adapter's default variant cannot take the shape (Phi-3's head_dim 96). A variant
    /// the plan names and the shape does not fit is an error.
    pub(crate) fn attention_choice(
        &self,
        gpu: &Gpu,
        op: &AttnFused,
    ) -> Result<(Option<AttnVariant>, Option<String>), String> {
        if !self.fusions.has(Fusion::Attention) {
            return Ok((None, None));
        }
        if let Some(v) = self.attention {
            v.supported(gpu, op)?;
            return Ok((Some(v), None));
        }
        let v = AttnVariant::for_adapter(gpu, op);
        Ok(match v.supported(gpu, op) {
            Ok(()) => (Some(v), None),
            Err(why) => (None, Some(why)),
        })
    }

    pub fn check(&self, gpu: &Gpu) -> Result<(), String> {
        self.gemv.supported(gpu)?;
        if let Some(kind) = self.prefill {
            kind.supported(gpu)?;
        }
        match self.gemv_large {
            Some(v) => v.supported(gpu),
            None => Ok(()),
        }
    }

    /// The variant the plan asks for a matrix of `rows × cols` ([`Self::gemv_large`]
    /// from [`LARGE_GEMV_WEIGHTS`] weights, else [`Self::gemv`]), before the layout and
    /// format are considered.
    fn gemv_asked(&self, rows: u32, cols: u32) -> GemvVariant {
        match self.gemv_large {
            Some(v) if u64::from(rows) * u64::from(cols) >= LARGE_GEMV_WEIGHTS => v,
            _ => self.gemv,
        }
    }

    /// How a matrix goes up: in the one layout its variant reads the format in, where it
    /// reads only one (`dp4a`: packed q4_0 / q4_1 / q8_0, GGUF q5_0 / q5_1), else as
    /// [`Self::weights`] asks (formats without a packed form keep their GGUF bytes either
    /// way).
    pub fn layout_for(&self, format: WeightFormat, rows: u32, cols: u32) -> WeightLayout {
        self.gemv_asked(rows, cols)
            .layout_for(format)
            .unwrap_or(self.weights)
    }

    /// The variant a `rows × cols` matrix of `format` stored in `layout` runs: the one the
    /// plan asks for its size, or where that has no kernel for it (`dp4a` over K-quants,
    /// f16, ...), [`Self::gemv`], or failing that `subgroup` where the adapter offers it,
    /// else `shared` (the profile's settings say so).
    pub fn gemv_for(
        &self,
        gpu: &Gpu,
        format: WeightFormat,
        layout: WeightLayout,
        rows: u32,
        cols: u32,
    ) -> GemvVariant {
        let m = gpuscope_ops::gemv::Gemv {
            rows,
            cols,
            format,
            out_offset: 0,
            layout,
        };
        let asked = self.gemv_asked(rows, cols);
        if self.takes(gpu, asked, &m) {
            asked
        } else if self.takes(gpu, self.gemv, &m) {
            self.gemv
        } else {
            self.gemv_fallback(gpu)
        }
    }

    /// Whether the plan runs `variant` for matrix `m`: where it has a kernel for its format
    /// and layout, and `dp4a` where its x fits the device's workgroup memory and, over
    /// K-quants, with [`Self::dp4a_k_quants`].
    fn takes(&self, gpu: &Gpu, variant: GemvVariant, m: &gpuscope_ops::gemv::Gemv) -> bool {
        if !variant.runs(m.format, m.layout) {
            return false;
        }
        if variant != GemvVariant::Dp4a {
            return true;
        }
        let k_quant = matches!(m.format, WeightFormat::Q4_K | WeightFormat::Q5_K);
        (self.dp4a_k_quants || !k_quant) && m.dp4a_fits(gpu)
    }

    /// See [`Self::gemv_for`].
    pub fn gemv_fallback(&self, gpu: &Gpu) -> GemvVariant {
        if GemvVariant::Subgroup.supported(gpu).is_ok() {
            GemvVariant::Subgroup
        } else {
            GemvVariant::Shared
        }
    }

    /// The gemv variant's name with the fixed shape, if any (`blocks:16x4`).
    pub fn gemv_name(&self) -> String {
        match self.gemv_shape {
            Some((lanes, rows)) => format!("{}:{lanes}x{rows}", self.gemv.name()),
            None => self.gemv.name().to_string(),
        }
    }
}

/// `LANESxROWS` (lanes per row a power of two from 1 to 256, rows per lane 1 to 4).
fn parse_shape(s: &str) -> Result<(u32, u32), String> {
    let bad = || {
        format!("bad gemv shape `{s}`: expected LANESxROWS, e.g. 16x2 (lanes a power of two up to 256, rows 1-4)")
    };
    let (lanes, rows) = s.trim().split_once('x').ok_or_else(bad)?;
    let lanes: u32 = lanes.parse().map_err(|_| bad())?;
    let rows: u32 = rows.parse().map_err(|_| bad())?;
    if !lanes.is_power_of_two() || lanes > 256 || !(1..=4).contains(&rows) {
        return Err(bad());
    }
    Ok((lanes, rows))
}

/// What a built decoder ran with, for [`gpuscope_trace::WorkloadDesc::settings`].
pub(crate) fn settings(
    plan: &KernelPlan,
    gemv_detail: &str,
    attention: Option<AttnVariant>,
    skipped: &BTreeMap<&'static str, String>,
) -> BTreeMap<String, String> {
    let mut s = BTreeMap::new();
    s.insert(
        "gemv".into(),
        format!("{}, {gemv_detail}", plan.gemv_name()),
    );
    s.insert("weights".into(), plan.weights.name().into());
    if let Some(v) = plan.gemv_large {
        s.insert(
            "gemv_large".into(),
            format!("{} for matrices of at least {LARGE_GEMV_WEIGHTS} weights (packed weights where it has a kernel for the format, else `gemv`)", v.name()),
        );
    }
    if plan.gemv_large == Some(GemvVariant::Dp4a) || plan.gemv.quantizes_x() {
        s.insert(
            "dp4a_k".into(),
            if plan.dp4a_k_quants {
                "on: dp4a over q4_K / q5_K matrices too (int8 activations)"
            } else {
                "off: q4_K / q5_K matrices on the float variant"
            }
            .into(),
        );
    }
    if plan.gemv.quantizes_x() {
        s.insert(
            "weights".into(),
            format!("{} (q4_0, q4_1, q8_0 packed for dp4a)", plan.weights.name()),
        );
    }
    s.insert(
        "attention".into(),
        attention
            .map_or("unfused (scores, softmax, values)", AttnVariant::name)
            .into(),
    );
    s.insert("fuse".into(), plan.fusions.describe());
    if plan.tuned {
        s.insert(
            "tuning".into(),
            "gemv variants from this adapter's sweep (`gpuscope bench --sweep ... --save-tuning`, the cache's tuning/ folder)".into(),
        );
    }
    for (fusion, why) in skipped {
        s.insert(format!("fuse.{fusion}"), format!("skipped: {why}"));
    }
    s
}
