//! Per-dispatch CPU execution: the oracle of any dispatch of any graph, found by its
//! kernel (shader) name and run on host copies of its bindings.
//!
//! `gpuscope check` needs the reference result of *each dispatch*, not just the model's
//! logits; `gpuscope ops test` needs the expected output of a kernel it runs alone. Both
//! go through here: [`executor`] maps a shader name (`rms_norm`, `gemv_q4_1`,
//! `rope_qkv_batched`, ...) to an [`Executor`] that reads the op's parameters from the
//! pipeline's override constants (the values the kernel itself sees), reads its inputs
//! from the bindings and writes its outputs, calling the op's own CPU oracle (`cpu.rs`
//! in the op's folder). An executor is generic over [`Real`]: `f32` follows the
//! kernel's arithmetic, `f64` accumulates in double precision over the same dequantized
//! weights.
//!
//! A shader with no executor is an error that names it ([`ExecError::NoExecutor`]);
//! nothing is ever skipped silently.
//!
//! # Adding an op (or a fused kernel)
//!
//! 1. In the op's folder, write `exec.rs` with one function per shader family:
//!    `pub(crate) fn run<T: Real>(c: &mut Call<T>) -> Result<(), ExecError>` that builds
//!    the op struct from `c.u32_const("N")?` / `c.f32_const("EPS")?`, reads inputs with
//!    `c.floats(b)?`, `c.bytes(b)`, `c.u32_at(b, i)?` and writes outputs into
//!    `c.out(b)?` (floats; starts as the binding's current contents, so in-place and
//!    accumulating kernels work) or `c.set_u32(b, i, v)?`. Call the op's oracle there,
//!    made generic over `T: Real`.
//! 2. Add one line to [`EXECUTORS`] below: the shader names it serves, the kind of each
//!    binding ([`Kind`]), and `entry!(path::to::run)`.
//!
//! The registry test (`ops` test binary, `exec::`) builds every dispatch of the decode and
//! prefill graphs and fails when one has no executor.

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::Real;

/// How a binding's words are read and compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// f32 values (activations, norms' weights, KV caches).
    F32,
    /// u32 values (token ids, the step or params buffer).
    U32,
    /// Raw bytes (quantized or float weight matrices in their GGUF layout).
    Bytes,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::F32 => "f32",
            Kind::U32 => "u32",
            Kind::Bytes => "bytes",
        }
    }
}

/// Why a dispatch could not be executed on the CPU.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ExecError {
    #[error("no CPU executor for shader `{shader}`: add one (see gpuscope_ops::exec)")]
    NoExecutor { shader: String },
    #[error("{shader}: override constant `{name}` is {problem}")]
    Constant {
        shader: String,
        name: String,
        problem: String,
    },
    #[error("{shader}: binding {binding} {problem}")]
    Binding {
        shader: String,
        binding: u32,
        problem: String,
    },
}

/// One binding's contents as the executor sees them: the bytes of the binding's range
/// and, when the reference keeps wider values than f32 ([`Real::WIDER_THAN_F32`]), those
/// values for the same range (one per 4-byte word).
#[derive(Debug, Clone, Copy)]
pub struct BindingData<'a, T> {
    pub bytes: &'a [u8],
    pub wide: Option<&'a [T]>,
}

/// What an executor wrote to one binding.
#[derive(Debug, Clone, PartialEq)]
pub enum Output<T> {
    /// One value per 4-byte word of the binding.
    Floats(Vec<T>),
    /// One u32 per word.
    Words(Vec<u32>),
}

/// One dispatch to execute: its shader, override constants and bindings.
pub struct Call<'a, T> {
    shader: &'a str,
    constants: &'a [(String, f64)],
    bindings: Vec<BindingData<'a, T>>,
    outputs: Vec<Option<Output<T>>>,
    /// The tested GPU's bytes of the same bindings for this dispatch, when the reference
    /// runs on inputs of its own ([`Self::following`]).
    subject: Option<Vec<&'a [u8]>>,
}

impl<'a, T: Real> Call<'a, T> {
    pub fn new(
        shader: &'a str,
        constants: &'a [(String, f64)],
        bindings: Vec<BindingData<'a, T>>,
    ) -> Call<'a, T> {
        let outputs = bindings.iter().map(|_| None).collect();
        Call {
            shader,
            constants,
            bindings,
            outputs,
            subject: None,
        }
    }

    /// The call with the tested GPU's bytes of the same bindings (`gpuscope check`'s
    /// chained reference, which runs on its own previous outputs): an executor whose
    /// kernel rounds its inputs may follow the GPU's rounding where the two inputs round
    /// to neighbouring steps ([`crate::gemv::XRounding::Int8Following`]).
    pub fn following(mut self, subject: Vec<&'a [u8]>) -> Call<'a, T> {
        self.subject = Some(subject);
        self
    }

    /// Binding `b` as the tested GPU had it (f32 words), when the call has it.
    pub fn subject_f32s(&self, b: u32) -> Option<Vec<f32>> {
        let bytes = self.subject.as_ref()?.get(b as usize)?;
        Some(
            bytes
                .chunks_exact(4)
                .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
                .collect(),
        )
    }

    pub fn shader(&self) -> &str {
        self.shader
    }

    fn constant(&self, name: &str) -> Result<f64, ExecError> {
        self.constants
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| *v)
            .ok_or_else(|| ExecError::Constant {
                shader: self.shader.to_string(),
                name: name.to_string(),
                problem: "not set by the pipeline".into(),
            })
    }

    /// The weight format whose kernel of a family (`name_of`) this shader is.
    pub fn format_of(
        &self,
        name_of: fn(crate::WeightFormat) -> &'static str,
    ) -> Result<crate::WeightFormat, ExecError> {
        crate::WeightFormat::ALL
            .iter()
            .copied()
            .find(|&f| name_of(f) == self.shader)
            .ok_or_else(|| ExecError::NoExecutor {
                shader: self.shader.to_string(),
            })
    }

    /// Fails unless binding `b` holds at least `bytes` bytes (a weight matrix).
    pub fn need_bytes(&self, b: u32, bytes: u64, what: &str) -> Result<(), ExecError> {
        let have = self.binding(b)?.bytes.len() as u64;
        if have < bytes {
            return Err(
                self.binding_error(b, format!("has {have} bytes, the {what} needs {bytes}"))
            );
        }
        Ok(())
    }

    /// An override constant that must be a whole number in u32 range.
    pub fn u32_const(&self, name: &str) -> Result<u32, ExecError> {
        let v = self.constant(name)?;
        if v.fract() != 0.0 || !(0.0..=u32::MAX as f64).contains(&v) {
            return Err(ExecError::Constant {
                shader: self.shader.to_string(),
                name: name.to_string(),
                problem: format!("{v}, not a u32"),
            });
        }
        Ok(v as u32)
    }

    /// An optional override constant (`default` when the pipeline does not set it), as
    /// [`Self::u32_const`].
    pub fn u32_const_or(&self, name: &str, default: u32) -> Result<u32, ExecError> {
        if self.constants.iter().any(|(k, _)| k == name) {
            self.u32_const(name)
        } else {
            Ok(default)
        }
    }

    /// An override constant used as f32 by the kernel (rounded to f32, as the GPU sees it).
    /// [`Self::f32_const`], or `default` when the pipeline does not set it (constants
    /// added after captures were made).
    pub fn f32_const_or(&self, name: &str, default: f32) -> Result<f32, ExecError> {
        if self.constants.iter().any(|(k, _)| k == name) {
            self.f32_const(name)
        } else {
            Ok(default)
        }
    }

    pub fn f32_const(&self, name: &str) -> Result<f32, ExecError> {
        Ok(self.constant(name)? as f32)
    }

    /// A boolean-like override (`ACCUMULATE`, `LAST_ONLY`): non-zero is true.
    pub fn flag_const(&self, name: &str) -> Result<bool, ExecError> {
        Ok(self.constant(name)? != 0.0)
    }

    fn binding(&self, b: u32) -> Result<&BindingData<'a, T>, ExecError> {
        self.bindings
            .get(b as usize)
            .ok_or_else(|| self.binding_error(b, "is not bound".into()))
    }

    fn binding_error(&self, b: u32, problem: String) -> ExecError {
        ExecError::Binding {
            shader: self.shader.to_string(),
            binding: b,
            problem,
        }
    }

    /// The binding's bytes (weights in their GGUF layout).
    pub fn bytes(&self, b: u32) -> Result<&'a [u8], ExecError> {
        Ok(self.binding(b)?.bytes)
    }

    /// Word `i` of the binding as a u32.
    pub fn u32_at(&self, b: u32, i: usize) -> Result<u32, ExecError> {
        let bytes = self.bytes(b)?;
        bytes
            .get(i * 4..i * 4 + 4)
            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
            .ok_or_else(|| {
                self.binding_error(b, format!("has {} bytes, word {i} is past it", bytes.len()))
            })
    }

    /// The first `n` words as u32.
    pub fn u32s(&self, b: u32, n: usize) -> Result<Vec<u32>, ExecError> {
        (0..n).map(|i| self.u32_at(b, i)).collect()
    }

    /// The binding's current values as `T` (an output written earlier in this call is
    /// not visible here; executors read inputs first).
    pub fn floats(&self, b: u32) -> Result<Vec<T>, ExecError> {
        let d = self.binding(b)?;
        Ok(match d.wide {
            Some(w) => w.to_vec(),
            None => d
                .bytes
                .chunks_exact(4)
                .map(|w| T::of(f32::from_le_bytes(w.try_into().unwrap())))
                .collect(),
        })
    }

    /// Fails unless binding `b` holds at least `n` words.
    pub fn need_words(&self, b: u32, n: u64) -> Result<(), ExecError> {
        let have = self.binding(b)?.bytes.len() as u64 / 4;
        if have < n {
            return Err(self.binding_error(b, format!("has {have} words, the op needs {n}")));
        }
        Ok(())
    }

    /// The binding as an f32 output, starting from its current contents.
    pub fn out(&mut self, b: u32) -> Result<&mut [T], ExecError> {
        if !matches!(self.outputs.get(b as usize), Some(Some(Output::Floats(_)))) {
            let current = self.floats(b)?;
            self.outputs[b as usize] = Some(Output::Floats(current));
        }
        match &mut self.outputs[b as usize] {
            Some(Output::Floats(v)) => Ok(v),
            _ => unreachable!(),
        }
    }

    /// Sets word `i` of the binding to the u32 `v` (other words keep their contents).
    pub fn set_u32(&mut self, b: u32, i: usize, v: u32) -> Result<(), ExecError> {
        if !matches!(self.outputs.get(b as usize), Some(Some(Output::Words(_)))) {
            let n = self.binding(b)?.bytes.len() / 4;
            let current = self.u32s(b, n)?;
            self.outputs[b as usize] = Some(Output::Words(current));
        }
        let Some(Some(Output::Words(words))) = self.outputs.get_mut(b as usize) else {
            unreachable!()
        };
        let n = words.len();
        *words.get_mut(i).ok_or_else(|| ExecError::Binding {
            shader: self.shader.to_string(),
            binding: b,
            problem: format!("has {n} words, word {i} is past it"),
        })? = v;
        Ok(())
    }

    /// What the executor wrote, by binding.
    pub fn into_outputs(self) -> Vec<(u32, Output<T>)> {
        self.outputs
            .into_iter()
            .enumerate()
            .filter_map(|(b, o)| o.map(|o| (b as u32, o)))
            .collect()
    }
}

/// An executor instantiated for one [`Real`].
pub type RunFn<T> = for<'a, 'b> fn(&'b mut Call<'a, T>) -> Result<(), ExecError>;

/// The CPU executor of one kernel family.
pub struct Executor {
    /// The shader names it serves.
    pub shaders: fn() -> Vec<&'static str>,
    /// The kind of each binding, binding 0 first.
    pub bindings: &'static [Kind],
    run_f32: RunFn<f32>,
    run_f64: RunFn<f64>,
}

impl std::fmt::Debug for Executor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Executor")
            .field("shaders", &(self.shaders)())
            .field("bindings", &self.bindings)
            .finish()
    }
}

impl Executor {
    /// Runs the dispatch described by `call` in `T`.
    pub fn run<T: Real>(&self, call: &mut Call<T>) -> Result<(), ExecError> {
        T::pick(self.run_f32, self.run_f64)(call)
    }
}

macro_rules! entry {
    ($shaders:expr, $kinds:expr, $($run:ident)::+) => {
        Executor {
            shaders: $shaders,
            bindings: $kinds,
            run_f32: $($run)::+::<f32>,
            run_f64: $($run)::+::<f64>,
        }
    };
}

use crate::gemv::EpilogueKind;
use Kind::{Bytes, F32, U32};

fn formats(f: fn(crate::WeightFormat) -> &'static str) -> Vec<&'static str> {
    crate::WeightFormat::ALL.iter().map(|&w| f(w)).collect()
}

/// Every executor. One line per kernel family: the shaders it serves, its bindings' kinds.
pub static EXECUTORS: &[Executor] = &[
    // The composed gemv shaders, one entry per binding set (norm weight; step and caches).
    entry!(
        || crate::gemv::exec::fused_shaders(false, (false, false), EpilogueKind::Store),
        &[Bytes, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, false), EpilogueKind::Store),
        &[Bytes, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(false, (false, false), EpilogueKind::Silu),
        &[Bytes, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, false), EpilogueKind::Silu),
        &[Bytes, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(false, (false, false), EpilogueKind::Gelu),
        &[Bytes, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, false), EpilogueKind::Gelu),
        &[Bytes, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(false, (false, false), EpilogueKind::Rope),
        &[Bytes, F32, F32, U32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, false), EpilogueKind::Rope),
        &[Bytes, F32, F32, F32, U32, F32, F32],
        crate::gemv::exec::run
    ),
    // With a post norm folded in (the dp4a frame): d, its weight and x_out after the norm
    // weight.
    entry!(
        || crate::gemv::exec::fused_shaders(true, (true, false), EpilogueKind::Store),
        &[Bytes, F32, F32, F32, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (true, false), EpilogueKind::Silu),
        &[Bytes, F32, F32, F32, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (true, false), EpilogueKind::Gelu),
        &[Bytes, F32, F32, F32, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (true, false), EpilogueKind::Rope),
        &[Bytes, F32, F32, F32, F32, F32, F32, U32, F32, F32],
        crate::gemv::exec::run
    ),
    // With the attention's partials added (the dp4a frame): the partials and x_out after
    // the norm weight.
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, true), EpilogueKind::Store),
        &[Bytes, F32, F32, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, true), EpilogueKind::Silu),
        &[Bytes, F32, F32, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, true), EpilogueKind::Gelu),
        &[Bytes, F32, F32, F32, F32, F32],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, true), EpilogueKind::Rope),
        &[Bytes, F32, F32, F32, F32, F32, U32, F32, F32],
        crate::gemv::exec::run
    ),
    // With the down projection folded in (the dp4a frame): the down matrix last.
    entry!(
        || crate::gemv::exec::fused_shaders(false, (false, false), EpilogueKind::SiluDown),
        &[Bytes, F32, F32, Bytes],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, false), EpilogueKind::SiluDown),
        &[Bytes, F32, F32, F32, Bytes],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (true, false), EpilogueKind::SiluDown),
        &[Bytes, F32, F32, F32, F32, F32, F32, Bytes],
        crate::gemv::exec::run
    ),
    entry!(
        || crate::gemv::exec::fused_shaders(true, (false, true), EpilogueKind::SiluDown),
        &[Bytes, F32, F32, F32, F32, F32, Bytes],
        crate::gemv::exec::run
    ),
    entry!(
        crate::attention::output::output_shaders,
        &[Bytes, F32, F32, F32, F32, U32],
        crate::attention::exec::run_output
    ),
    entry!(
        crate::gemv::exec::batched_shaders,
        &[Bytes, F32, F32, U32],
        crate::gemv::exec::run_batched
    ),
    entry!(
        || crate::gemv::exec::gemm_shaders(crate::gemv::GemmKind::Dp4a),
        &[Bytes, U32, F32, U32],
        crate::gemv::exec::run_gemm_dp4a
    ),
    entry!(
        || crate::gemv::exec::gemm_shaders(crate::gemv::GemmKind::Coopmat),
        &[Bytes, F32, F32, U32],
        crate::gemv::exec::run_gemm_coopmat
    ),
    entry!(
        || vec![crate::gemv::QUANTIZE_X_SHADER.name],
        &[F32, U32, U32],
        crate::gemv::exec::run_quantize_x
    ),
    entry!(
        || formats(|f| crate::embedding::shader(f).name),
        &[Bytes, U32, F32],
        crate::embedding::exec::run
    ),
    entry!(
        || formats(|f| crate::embedding::batched_shader(f).name),
        &[Bytes, U32, F32, U32],
        crate::embedding::exec::run_batched
    ),
    entry!(
        || vec![crate::rms_norm::SHADER.name],
        &[F32, F32, F32],
        crate::rms_norm::exec::run
    ),
    entry!(
        crate::rms_norm::exec::batched_shaders,
        &[F32, F32, F32, U32],
        crate::rms_norm::exec::run_batched
    ),
    entry!(
        || vec![crate::rope::SHADER.name],
        &[U32, F32, F32, F32, F32, F32],
        crate::rope::exec::run
    ),
    entry!(
        || vec![crate::rope::SHADER_QKV.name],
        &[U32, F32, F32, F32],
        crate::rope::exec::run_qkv
    ),
    entry!(
        || vec![crate::rope::NORMED_SHADER.name],
        &[U32, F32, F32, F32, F32, F32],
        crate::rope::exec::run_normed
    ),
    entry!(
        crate::rope::exec::batched_shaders,
        &[U32, F32, F32, F32],
        crate::rope::exec::run_batched
    ),
    entry!(
        // The subgroup and groups variants and the subgroup-reduced workgroup kernel
        // compute the same.
        || {
            let mut names = vec![
                crate::attention::FUSED_SHADER.name,
                crate::attention::fused_sg_shader().name,
                crate::attention::SUBGROUP_SHADER.name,
                crate::attention::SUBGROUP_WIDE_SHADER.name,
            ];
            names.extend(crate::attention::groups_shaders());
            names
        },
        &[U32, F32, F32, F32, F32],
        crate::attention::exec::run_fused
    ),
    entry!(
        || vec![crate::attention::COMBINE_SHADER.name],
        &[U32, F32, F32],
        crate::attention::exec::run_combine
    ),
    entry!(
        crate::attention::exec::batched_shaders,
        &[U32, F32, F32, F32, F32],
        crate::attention::exec::run_batched
    ),
    entry!(
        || vec![crate::attention::SCORES_SHADER.name],
        &[U32, F32, F32, F32],
        crate::attention::exec::run_scores
    ),
    entry!(
        || vec![crate::attention::VALUES_SHADER.name],
        &[U32, F32, F32, F32],
        crate::attention::exec::run_values
    ),
    entry!(
        || vec![crate::softmax::SHADER.name],
        &[U32, F32],
        crate::softmax::exec::run
    ),
    entry!(
        || vec![crate::silu_mul::SHADER.name],
        &[F32, F32, F32],
        crate::silu_mul::exec::run
    ),
    entry!(
        crate::silu_mul::exec::batched_shaders,
        &[F32, F32, U32],
        crate::silu_mul::exec::run_batched
    ),
    entry!(
        || vec![crate::gelu_mul::SHADER.name],
        &[F32, F32, F32],
        crate::gelu_mul::exec::run
    ),
    entry!(
        crate::gelu_mul::exec::batched_shaders,
        &[F32, F32, U32],
        crate::gelu_mul::exec::run_batched
    ),
    entry!(
        || vec![crate::head_norm::SHADER.name],
        &[F32, F32, F32],
        crate::head_norm::exec::run
    ),
    entry!(
        crate::head_norm::exec::batched_shaders,
        &[F32, F32, F32, U32],
        crate::head_norm::exec::run_batched
    ),
    entry!(
        || vec![crate::add::SHADER.name],
        &[F32, F32],
        crate::add::exec::run
    ),
    entry!(
        crate::add::exec::batched_shaders,
        &[F32, F32, U32],
        crate::add::exec::run_batched
    ),
    entry!(
        || crate::argmax::shaders().iter().map(|s| s.name).collect(),
        &[F32, U32],
        crate::argmax::exec::run
    ),
    entry!(
        || vec![crate::argmax::split_shaders()[0].name],
        &[F32, F32, U32],
        crate::argmax::exec::run_partial
    ),
    entry!(
        || vec![crate::argmax::split_shaders()[1].name],
        &[F32, U32, U32],
        crate::argmax::exec::run_merge
    ),
];

/// The executor of `shader`, or [`ExecError::NoExecutor`].
pub fn executor(shader: &str) -> Result<&'static Executor, ExecError> {
    static BY_NAME: OnceLock<HashMap<&'static str, &'static Executor>> = OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            let mut map = HashMap::new();
            for e in EXECUTORS {
                for s in (e.shaders)() {
                    let previous = map.insert(s, e);
                    assert!(previous.is_none(), "two executors serve shader `{s}`");
                }
            }
            map
        })
        .get(shader)
        .copied()
        .ok_or_else(|| ExecError::NoExecutor {
            shader: shader.to_string(),
        })
}
