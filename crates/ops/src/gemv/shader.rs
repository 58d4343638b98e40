//! Composing a gemv shader from its pieces: a frame (how rows map to threads), the weight
//! format's `unit_dot`, the input (x as it is, or rms-normed on the fly) and the epilogue
//! (store, accumulate, rope + KV cache, silu·mul or gelu·mul). Each combination in use is built once
//! and kept for the life of the process (pipelines refer to their source by `&'static`).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use gpuscope_runtime::ShaderSource;

use super::{GemvVariant, WeightLayout};
use crate::quant::WeightFormat;

/// What the shader does after the dot products.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum EpilogueKind {
    /// y = row (or y += row with the ACCUMULATE constant).
    Store,
    /// Rope on q and k rows, k and v rows into the KV cache.
    Rope,
    /// y[j] = silu(gate_j) · up_j.
    Silu,
    /// y[j] = gelu(gate_j) · up_j.
    Gelu,
    /// h = silu(gate) · up, then each workgroup's partial of W_down · h (the dp4a frame,
    /// packed q4_0 / q4_1 / q8_0; `epilogue_silu_down.wgsl`).
    SiluDown,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct ShaderKey {
    pub variant: GemvVariant,
    /// The lanes frames' reduction: subgroup shuffles (else a shared-memory tree).
    pub subgroup_reduce: bool,
    pub layout: WeightLayout,
    pub format: WeightFormat,
    pub norm: bool,
    /// A post norm and its residual add folded in before the norm (`dp4a` with `norm`
    /// only; `kernel_dp4a.wgsl`'s POST).
    pub post: bool,
    /// The heads' partial output projections added to x before the norm (`dp4a` with
    /// `norm` only; `kernel_dp4a.wgsl`'s PARTIALS; see `attention/output.rs`).
    pub partials: bool,
    pub epilogue: EpilogueKind,
    /// x shared through subgroup shuffles (`input_shared.wgsl`; `rows` frame only).
    pub x_shared: bool,
    /// The `rows` frame over 32-byte loads (`kernel_rows_wide.wgsl`; with `x_shared`,
    /// packed q4_0 / q4_1 / q8_0 only): see [`wide`].
    pub wide: bool,
}

/// The kernel family of a fused form: `gemv_q4_1`, `rms_norm+gemv_q4_1+rope`,
/// `rms_norm+add+rms_norm+gemv_q5_0+gelu_mul` (a post norm folded in),
/// `add+rms_norm+gemv_q4_1+silu_mul` (the attention's partial projections added), ...
pub(crate) fn op_name(
    format: WeightFormat,
    norm: bool,
    (post, partials): (bool, bool),
    epilogue: EpilogueKind,
) -> String {
    let gemv = super::Gemv {
        rows: 1,
        cols: format.block_elems(),
        format,
        out_offset: 0,
        layout: WeightLayout::Gguf,
    };
    let mut name = String::new();
    if post {
        name.push_str("rms_norm+add+");
    }
    if partials {
        name.push_str("add+");
    }
    if norm {
        name.push_str("rms_norm+");
    }
    name.push_str(gemv.op_name());
    match epilogue {
        EpilogueKind::Store => {}
        EpilogueKind::Rope => name.push_str("+rope"),
        EpilogueKind::Silu => name.push_str("+silu_mul"),
        EpilogueKind::Gelu => name.push_str("+gelu_mul"),
        EpilogueKind::SiluDown => {
            name.push_str("+silu_mul+");
            name.push_str(gemv.op_name());
        }
    }
    name
}

impl ShaderKey {
    /// The shader's name: the op name, the variant, then what else distinguishes it
    /// (`rms_norm+gemv_q4_1+rope.blocks.packed.subgroup`). CPU executors find the
    /// kernel by this name (`exec.rs`).
    pub(crate) fn name(&self) -> String {
        let mut name = format!(
            "{}.{}",
            op_name(
                self.format,
                self.norm,
                (self.post, self.partials),
                self.epilogue
            ),
            self.variant.name()
        );
        if self.layout != WeightLayout::Gguf {
            name += &format!(".{}", self.layout.name());
        }
        if self.x_shared {
            name += ".xshared";
        }
        if self.wide {
            name += ".wide";
        }
        if self.variant == GemvVariant::Blocks {
            name += if self.subgroup_reduce {
                ".subgroup"
            } else {
                ".shared"
            };
        }
        name
    }

    /// Every key a dispatch can use with this input and epilogue (`post`, `partials`:
    /// the `dp4a` frame with `norm` only, one of them).
    pub(crate) fn all(
        norm: bool,
        (post, partials): (bool, bool),
        epilogue: EpilogueKind,
    ) -> Vec<ShaderKey> {
        if (post || partials) && !norm || post && partials {
            return Vec::new();
        }
        let mut keys = Vec::new();
        for variant in GemvVariant::ALL {
            for format in WeightFormat::ALL {
                for layout in WeightLayout::ALL.into_iter().filter(|l| l.supports(format)) {
                    for (x_shared, subgroup_reduce, wide) in [
                        (false, false, false),
                        (false, true, false),
                        (true, false, false),
                        (true, false, true),
                    ] {
                        let possible = variant.runs(format, layout)
                            && (!(post || partials) || variant == GemvVariant::Dp4a)
                            && (epilogue != EpilogueKind::SiluDown
                                || variant == GemvVariant::Dp4a && down_format(format, layout))
                            && match variant {
                                GemvVariant::Shared => !subgroup_reduce && !x_shared,
                                GemvVariant::Subgroup | GemvVariant::Dp4a => subgroup_reduce,
                                GemvVariant::Rows => {
                                    !subgroup_reduce && (!wide || wide_format(format, layout))
                                }
                                GemvVariant::Blocks => !x_shared,
                            };
                        if possible {
                            keys.push(ShaderKey {
                                variant,
                                subgroup_reduce,
                                layout,
                                format,
                                norm,
                                post,
                                partials,
                                epilogue,
                                x_shared,
                                wide,
                            });
                        }
                    }
                }
            }
        }
        keys
    }
}

/// The format's part for a layout: its bindings and `unit_dot` (packed: also
/// `block_dot`), plus the block-format helpers.
pub(crate) fn format_part(format: WeightFormat, layout: WeightLayout) -> &'static str {
    macro_rules! quant {
        ($file:literal) => {
            concat!(include_str!($file), "\n", include_str!("quant_common.wgsl"))
        };
    }
    macro_rules! packed {
        ($file:literal) => {
            concat!(include_str!("packed_common.wgsl"), "\n", quant!($file))
        };
    }
    if layout == WeightLayout::Packed {
        return match format {
            WeightFormat::Q4_0 => packed!("packed_q4_0.wgsl"),
            WeightFormat::Q4_1 => packed!("packed_q4_1.wgsl"),
            WeightFormat::Q8_0 => packed!("packed_q8_0.wgsl"),
            other => panic!("{} has no packed layout", other.name()),
        };
    }
    match format {
        WeightFormat::F32 => include_str!("kernel_f32.wgsl"),
        WeightFormat::F16 => include_str!("kernel_f16.wgsl"),
        WeightFormat::BF16 => include_str!("kernel_bf16.wgsl"),
        WeightFormat::Q8_0 => quant!("kernel_q8_0.wgsl"),
        WeightFormat::Q4_0 => quant!("kernel_q4_0.wgsl"),
        WeightFormat::Q4_1 => quant!("kernel_q4_1.wgsl"),
        WeightFormat::Q4_K => quant!("kernel_q4_k.wgsl"),
        WeightFormat::Q5_K => quant!("kernel_q5_k.wgsl"),
        WeightFormat::Q6_K => quant!("kernel_q6_k.wgsl"),
        WeightFormat::Q5_0 => quant!("kernel_q5_0.wgsl"),
        WeightFormat::Q5_1 => quant!("kernel_q5_1.wgsl"),
    }
}

/// Whether the format's kernel reads x as `vec4<f32>` (the block formats) or `f32`.
pub(crate) fn x_is_vec4(format: WeightFormat) -> bool {
    format.is_quantized()
}

/// `xsq` (x squared, summed over a vec4) for x's element type.
pub(crate) fn x_helpers(format: WeightFormat) -> &'static str {
    if x_is_vec4(format) {
        "fn xsq(v: XT) -> f32 {\n    return dot(v, v);\n}\n"
    } else {
        "fn xsq(v: XT) -> f32 {\n    return v * v;\n}\n"
    }
}

/// Binding numbers past w (0), x (1) and y (2).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bindings {
    /// The norm weight (with `norm`).
    pub norm: u32,
    /// The folded post norm's d, weight and x_out (with `post`), or the partials and
    /// x_out (with `partials`), from here.
    pub post: u32,
    /// The rope epilogue's step, k_cache and v_cache, from here.
    pub rope: u32,
}

/// The binding numbers for a key's input: the norm weight, then the post norm's three
/// or the partials' two, then step, k_cache and v_cache. Bind groups take buffers in
/// binding order, so the numbers are consecutive.
pub(crate) fn binding_numbers(norm: bool, (post, partials): (bool, bool)) -> Bindings {
    let post_first = if norm { 4 } else { 3 };
    let rope = post_first
        + match (post, partials) {
            (true, _) => 3,
            (false, true) => 2,
            (false, false) => 0,
        };
    Bindings {
        norm: 3,
        post: post_first,
        rope,
    }
}

/// A format's `load_block` and `block_idot` for the dp4a frames, with its binding 0 (`w`)
/// and helpers (idot_common.wgsl not included).
pub(crate) fn idot_source(format: WeightFormat, layout: WeightLayout) -> String {
    // The format's load_block and block_idot, with its binding 0 (`w`) and helpers.
    // Packed formats share packed_common.wgsl (binding 0 as vec4s, the scales region);
    // the GGUF-block ones quant_common.wgsl's helpers, the K-quants also idot_k.wgsl.
    let (own, shared) = match format {
        WeightFormat::Q4_0 => (include_str!("idot_q4_0.wgsl"), ""),
        WeightFormat::Q4_1 => (include_str!("idot_q4_1.wgsl"), ""),
        WeightFormat::Q8_0 => (include_str!("idot_q8_0.wgsl"), ""),
        WeightFormat::Q5_0 => (
            include_str!("idot_q5_0.wgsl"),
            include_str!("q5_0_words.wgsl"),
        ),
        WeightFormat::Q5_1 => (include_str!("idot_q5_1.wgsl"), ""),
        WeightFormat::Q4_K => (include_str!("idot_q4_k.wgsl"), include_str!("idot_k.wgsl")),
        WeightFormat::Q5_K => (include_str!("idot_q5_k.wgsl"), include_str!("idot_k.wgsl")),
        other => panic!("{} has no dp4a kernel", other.name()),
    };
    if layout == WeightLayout::Packed {
        format!("{}\n{own}", include_str!("packed_common.wgsl"))
    } else {
        format!("{own}\n{shared}\n{}", include_str!("quant_common.wgsl"))
    }
}

/// The `dp4a` frame with its format's `block_idot` and its input (x, and the norm weight
/// when rms_norm is folded in).
fn compose_dp4a(key: ShaderKey, name: &str) -> String {
    let b = binding_numbers(key.norm, (key.post, key.partials));
    let norm_decl = if key.norm {
        format!(
            "@group(0) @binding({}) var<storage, read> nw: array<vec4<f32>>;\noverride EPS: f32;",
            b.norm
        )
    } else {
        "const EPS: f32 = 0.0;".to_string()
    };
    // Never read unless POST (PARTIALS), but named by the frame's code either way.
    let x_out = |at: u32| {
        format!("@group(0) @binding({at}) var<storage, read_write> x_out: array<vec4<f32>>;")
    };
    let post_decl = if key.post {
        format!(
            "@group(0) @binding({}) var<storage, read> post_d: array<vec4<f32>>;\n@group(0) @binding({}) var<storage, read> post_w: array<vec4<f32>>;\n{}\noverride POST_EPS: f32;\nvar<workgroup> post_part: array<f32, 128>;",
            b.post,
            b.post + 1,
            x_out(b.post + 2)
        )
    } else {
        "const POST_EPS: f32 = 0.0;\nvar<private> post_d: array<vec4<f32>, 1>;\nvar<private> post_w: array<vec4<f32>, 1>;\nvar<private> post_part: array<f32, 1>;".to_string()
    };
    let partials_decl = if key.partials {
        format!(
            "@group(0) @binding({}) var<storage, read> partials: array<vec4<f32>>;\n{}\noverride N_PARTIALS: u32;",
            b.post,
            x_out(b.post + 1)
        )
    } else {
        let no_x_out = if key.post {
            ""
        } else {
            "var<private> x_out: array<vec4<f32>, 1>;\n"
        };
        format!(
            "{no_x_out}const N_PARTIALS: u32 = 0u;\nvar<private> partials: array<vec4<f32>, 1>;"
        )
    };
    let frame = concat!(
        include_str!("lanes_common.wgsl"),
        "\n",
        include_str!("kernel_dp4a.wgsl"),
        "\n",
        include_str!("quantize_part.wgsl")
    )
    .replace("NORM_ON", &key.norm.to_string())
    .replace("NORM_DECL", &norm_decl)
    .replace("POST_ON", &key.post.to_string())
    .replace("POST_DECL", &format!("{post_decl}\n{partials_decl}"))
    .replace("PARTIALS_ON", &key.partials.to_string())
    .replace(
        "NORM_WEIGHT",
        if key.norm {
            "nw[min(b, X_BLOCKS - 1u) * 8u + k]"
        } else {
            "vec4<f32>(1.0)"
        },
    );
    let idot = idot_source(key.format, key.layout);
    let down = if key.epilogue == EpilogueKind::SiluDown {
        down_loader(key.format)
    } else {
        String::new()
    };
    format!(
        "// {name}: composed by gpuscope-ops (gemv/shader.rs) from the dp4a frame, format and epilogue.\n{frame}\n{}\n{idot}\n{down}\n{}\n{}\n{}",
        include_str!("idot_common.wgsl"),
        include_str!("reduce_subgroup.wgsl"),
        epilogue_part(key.epilogue, b.rope),
        match key.epilogue {
            EpilogueKind::Store => include_str!("epilogue_dp4a_store.wgsl"),
            EpilogueKind::Rope => include_str!("epilogue_dp4a_rope.wgsl"),
            EpilogueKind::Silu | EpilogueKind::Gelu => include_str!("epilogue_dp4a_silu.wgsl"),
            EpilogueKind::SiluDown => include_str!("epilogue_dp4a_silu_down.wgsl"),
        },
    )
}

/// Whether the folded down projection (`EpilogueKind::SiluDown`) has a loader for this
/// format and layout: the packed q4_0, q4_1 and q8_0 (their `load_block` reads only `w`,
/// `COLS` and the scales region, which [`down_loader`] renames).
pub(crate) fn down_format(format: WeightFormat, layout: WeightLayout) -> bool {
    wide_format(format, layout)
}

/// The function `name` of a WGSL source (from `fn name(` to its closing brace at the
/// start of a line).
fn wgsl_fn<'s>(src: &'s str, name: &str) -> &'s str {
    let start = src
        .find(&format!("fn {name}("))
        .unwrap_or_else(|| panic!("no fn {name} in the source"));
    let end = src[start..].find("\n}").expect("a closing brace") + start + 2;
    &src[start..end]
}

/// `load_down_block(row, b)`: the format's `load_block` (and the packed layout's
/// `block_scale`) over the down matrix, binding `wd` with DOWN_COLS columns and its
/// scales from DOWN_SCALES_AT, made from the same source so the two cannot disagree;
/// then the format's `down_dot` (a block times h in f32).
fn down_loader(format: WeightFormat) -> String {
    let src = idot_source(format, WeightLayout::Packed);
    let rename = |f: &str| {
        f.replace("w[", "wd[")
            .replace("COLS", "DOWN_COLS")
            .replace("SCALES_AT", "DOWN_SCALES_AT")
            .replace("block_scale(", "down_block_scale(")
            .replace("fn load_block(", "fn load_down_block(")
    };
    let dot = match format {
        WeightFormat::Q4_0 => include_str!("down_q4_0.wgsl"),
        WeightFormat::Q4_1 => include_str!("down_q4_1.wgsl"),
        WeightFormat::Q8_0 => include_str!("down_q8_0.wgsl"),
        other => panic!("{} has no folded down projection", other.name()),
    };
    format!(
        "{}\n\n{}\n{dot}",
        rename(wgsl_fn(include_str!("packed_common.wgsl"), "block_scale")),
        rename(wgsl_fn(&src, "load_block"))
    )
}

/// The epilogue's source (rope's bindings numbered after `rope_first`).
fn epilogue_part(epilogue: EpilogueKind, rope_first: u32) -> String {
    match epilogue {
        EpilogueKind::Store => include_str!("epilogue_store.wgsl").to_string(),
        EpilogueKind::Silu => concat!(
            include_str!("epilogue_silu.wgsl"),
            include_str!("../silu_mul/silu.wgsl")
        )
        .to_string(),
        EpilogueKind::Gelu => concat!(
            include_str!("epilogue_silu.wgsl"),
            include_str!("../gelu_mul/gelu.wgsl")
        )
        .to_string(),
        // The down matrix binds after the input's bindings (where rope's would start).
        EpilogueKind::SiluDown => format!(
            "{}\n{}",
            include_str!("epilogue_silu_down.wgsl").replace("B_DOWN", &rope_first.to_string()),
            include_str!("../silu_mul/silu.wgsl")
        ),
        EpilogueKind::Rope => format!(
            "{}\n{}",
            include_str!("epilogue_rope.wgsl")
                .replace("B_STEP", &rope_first.to_string())
                .replace("B_KCACHE", &(rope_first + 1).to_string())
                .replace("B_VCACHE", &(rope_first + 2).to_string()),
            include_str!("../rope/angle.wgsl")
        ),
    }
}

/// The wide `rows` frame with its format's `pair_load` / `pair_dot` and the wide shared
/// input (x, and the norm weight when rms_norm is folded in).
fn compose_rows_wide(key: ShaderKey, name: &str) -> String {
    let Bindings {
        norm: norm_binding,
        rope: rope_first,
        ..
    } = binding_numbers(key.norm, (false, false));
    let norm_decl = if key.norm {
        format!(
            "@group(0) @binding({norm_binding}) var<storage, read> nw: array<vec4<u64>>;\noverride EPS: f32;\nfn norm_words(i: u32) -> vec4<u64> {{\n    return nw[i];\n}}"
        )
    } else {
        // Never called (HAS_NORM is false), but the input's code names it.
        "const EPS: f32 = 0.0;\nfn norm_words(i: u32) -> vec4<u64> {\n    return vec4<u64>(0lu);\n}"
            .to_string()
    };
    let input = include_str!("input_shared_wide.wgsl")
        .replace("NORM_DECL", &norm_decl)
        .replace("NORM_ON", &key.norm.to_string());
    let format = wide_format_part(key.format);
    format!(
        "// {name}: composed by gpuscope-ops (gemv/shader.rs) from the wide rows frame, format, input and epilogue.\n{}\n{}\n{format}\n{input}\n{}",
        concat!(
            include_str!("rows_common.wgsl"),
            "\n",
            include_str!("kernel_rows_wide.wgsl")
        ),
        include_str!("wide_common.wgsl"),
        epilogue_part(key.epilogue, rope_first),
    )
}

fn compose(key: ShaderKey, name: &str) -> String {
    if key.variant == GemvVariant::Dp4a {
        return compose_dp4a(key, name);
    }
    if key.wide {
        return compose_rows_wide(key, name);
    }
    let frame = match key.variant {
        GemvVariant::Rows => concat!(
            include_str!("rows_common.wgsl"),
            "\n",
            include_str!("kernel_rows.wgsl")
        )
        .to_string(),
        lanes => {
            let reduce = if key.subgroup_reduce {
                include_str!("reduce_subgroup.wgsl")
            } else {
                include_str!("reduce_shared.wgsl")
            };
            let whole_blocks = lanes == GemvVariant::Blocks;
            format!(
                "{}\n{}\n{reduce}",
                include_str!("lanes_common.wgsl"),
                include_str!("kernel.wgsl").replace("WHOLE_BLOCKS_ON", &whole_blocks.to_string())
            )
        }
    };
    // block_dot: in the packed format files; for GGUF bytes a file per block format, or
    // four unit_dots.
    let block = match (key.layout, key.format) {
        (WeightLayout::Packed, _) => "",
        (WeightLayout::Gguf, WeightFormat::Q4_0) => include_str!("block_q4_0.wgsl"),
        (WeightLayout::Gguf, WeightFormat::Q4_1) => include_str!("block_q4_1.wgsl"),
        (WeightLayout::Gguf, WeightFormat::Q8_0) => include_str!("block_q8_0.wgsl"),
        (WeightLayout::Gguf, WeightFormat::Q5_0) => {
            concat!(
                include_str!("q5_0_words.wgsl"),
                include_str!("block_q5_0.wgsl")
            )
        }
        (WeightLayout::Gguf, WeightFormat::Q5_1) => include_str!("block_q5_1.wgsl"),
        (WeightLayout::Gguf, WeightFormat::Q4_K) => include_str!("block_q4_k.wgsl"),
        (WeightLayout::Gguf, WeightFormat::Q5_K) => include_str!("block_q5_k.wgsl"),
        (WeightLayout::Gguf, WeightFormat::Q6_K) => include_str!("block_q6_k.wgsl"),
        (WeightLayout::Gguf, _) => include_str!("block_generic.wgsl"),
    };
    let Bindings {
        norm: norm_binding,
        rope: rope_first,
        ..
    } = binding_numbers(key.norm, (false, false));
    let input = match (key.x_shared, key.norm) {
        (true, true) => include_str!("input_shared.wgsl")
            .replace(
                "NORM_BINDING",
                &format!(
                    "@group(0) @binding({norm_binding}) var<storage, read> nw: array<XT>;\noverride EPS: f32;"
                ),
            )
            .replace("NORM_ON", "true")
            .replace("NORM_WEIGHT", "nw[i]"),
        (true, false) => include_str!("input_shared.wgsl")
            .replace("NORM_BINDING", "const EPS: f32 = 0.0;")
            .replace("NORM_ON", "false")
            .replace("NORM_WEIGHT", "XT(1.0)"),
        (false, true) => {
            include_str!("input_norm.wgsl").replace("B_NORM", &norm_binding.to_string())
        }
        (false, false) => include_str!("input_plain.wgsl").to_string(),
    };
    let epilogue = epilogue_part(key.epilogue, rope_first);
    format!(
        "// {name}: composed by gpuscope-ops (gemv/shader.rs) from frame, format, input and epilogue.\n{frame}\n{}\n{block}\n{}\n{input}\n{epilogue}",
        format_part(key.format, key.layout),
        x_helpers(key.format),
    )
}

/// Whether the `rows` frame shares x through subgroup shuffles for this format on `gpu`:
/// the 32-element block formats (4 units read exactly a block's 8 vec4 of x), on an
/// adapter whose subgroups are exactly the frame's workgroup.
pub(crate) fn x_shared(
    gpu: &gpuscope_runtime::Gpu,
    variant: GemvVariant,
    format: WeightFormat,
) -> bool {
    let info = gpu.adapter_info();
    variant == GemvVariant::Rows
        && matches!(
            format,
            WeightFormat::Q4_0
                | WeightFormat::Q4_1
                | WeightFormat::Q8_0
                | WeightFormat::Q5_0
                | WeightFormat::Q5_1
        )
        && gpu
            .features()
            .contains(gpuscope_runtime::wgpu::Features::SUBGROUP)
        && info.subgroup_min_size == super::ROWS_WORKGROUP_SIZE
        && info.subgroup_max_size == super::ROWS_WORKGROUP_SIZE
}

/// The wide rows frames' part for `format` (`pair_load`, `pair_dot`).
///
/// # Panics
/// If `format` is not q4_0, q4_1 or q8_0.
pub(crate) fn wide_format_part(format: WeightFormat) -> &'static str {
    match format {
        WeightFormat::Q4_0 => include_str!("wide_q4_0.wgsl"),
        WeightFormat::Q4_1 => include_str!("wide_q4_1.wgsl"),
        WeightFormat::Q8_0 => include_str!("wide_q8_0.wgsl"),
        other => panic!("{} has no wide rows kernel", other.name()),
    }
}

/// Whether the `rows` frame has a wide form for this format and layout: q4_0, q4_1 and
/// q8_0 in the packed layout (`kernel_rows_wide.wgsl`).
fn wide_format(format: WeightFormat, layout: WeightLayout) -> bool {
    layout == WeightLayout::Packed
        && matches!(
            format,
            WeightFormat::Q4_0 | WeightFormat::Q4_1 | WeightFormat::Q8_0
        )
}

/// Whether the `rows` frame reads this matrix through 32-byte loads
/// (`kernel_rows_wide.wgsl`): where it shares x ([`x_shared`]), the device has
/// SHADER_INT64 (the loads are `vec4<u64>`), the weights are packed q4_0 / q4_1 / q8_0
/// and a row has an even number of blocks (a lane takes two a step). lavapipe (Mesa
/// 22.3, SmolLM2-135M Q4_1): see BENCHMARKS.md.
pub(crate) fn wide(gpu: &gpuscope_runtime::Gpu, variant: GemvVariant, gemv: &super::Gemv) -> bool {
    x_shared(gpu, variant, gemv.format)
        && wide_format(gemv.format, gemv.layout)
        && gpu
            .features()
            .contains(gpuscope_runtime::wgpu::Features::SHADER_INT64)
        && gemv.cols.is_multiple_of(64)
}

/// The shader for `key`, named `name` (built on first use, then shared).
pub(crate) fn shader(key: ShaderKey, name: String) -> &'static ShaderSource {
    static CACHE: OnceLock<Mutex<HashMap<ShaderKey, &'static ShaderSource>>> = OnceLock::new();
    let mut cache = CACHE.get_or_init(Default::default).lock().unwrap();
    cache.entry(key).or_insert_with(|| {
        let wgsl = compose(key, &name);
        Box::leak(Box::new(ShaderSource {
            name: Box::leak(name.into_boxed_str()),
            wgsl: Box::leak(wgsl.into_boxed_str()),
        }))
    })
}
