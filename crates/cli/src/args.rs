//! Command-line arguments, turned into library options in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use gpuscope_runtime::{GpuOptions, TimingRequest};
use gpuscope_trace::TimingMode;

use crate::exit::{Exit, GPU_UNAVAILABLE};

pub mod limits;
use limits::MAX_TOKENS;

#[derive(Debug, Parser)]
#[command(
    name = "gpuscope",
    version,
    about = "See where GPU inference time goes, on any wgpu backend."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Decode a model on the GPU and report every token, layer and op, with counters.
    Profile(ProfileArgs),
    /// Print the report of a profile saved with `profile --json` or `--compact`, or
    /// write it as Markdown, a self-contained HTML page, a Perfetto trace or JSON.
    Report(ReportArgs),
    /// Generate text from a GGUF model, printing it as it comes, then the speeds.
    Run(RunArgs),
    /// List the GPU adapters wgpu can see.
    Devices,
    /// Summarise a capture made with `profile --capture`: commands, shaders and their
    /// constant sets, buffers, the commands that took the most time.
    Inspect {
        /// The capture directory.
        dir: PathBuf,
        /// Commands to list.
        #[arg(long, default_value_t = 15)]
        top: usize,
    },
    /// Replay a capture on any adapter: the whole stream timed (the profile report), or
    /// each unique command benchmarked; with captured data, outputs are compared.
    Replay(ReplayArgs),
    /// Find the first wrong dispatch: run the same tokens on the GPU and on a reference
    /// (the CPU, another adapter or backend, or the same GPU serially) and compare every
    /// dispatch's output.
    Check(CheckArgs),
    /// The kernel author's harness: every op × weight format × shape, against the CPU
    /// executors (`test`) or timed (`perf`).
    Ops {
        #[command(subcommand)]
        mode: OpsMode,
    },
    /// Compare two profiles: time per token, per op, label and layer with a significance
    /// test, counters exactly, settings; with limits, a CI gate (exit 5 on regression).
    Diff(DiffArgs),
    /// Benchmark prompt processing and generation as llama-bench does (same options,
    /// same output fields): `-p 512 -n 128 -r 5`, `-pg 512,128`, `-o md|csv|json|jsonl`.
    Bench(BenchArgs),
    /// Measure the device's ceilings (bandwidth, FMA rates, dispatch cost, workgroups
    /// that fill it) and cache them for rooflines; print the cached ones if present.
    Peak(PeakArgs),
    /// Profile any Vulkan program without changing it: `gpuscope attach -- PROGRAM ARGS`
    /// runs it with gpuscope's Vulkan layer loaded, then reports every step (the work
    /// between two host waits: a token), dispatch and counter it recorded.
    Attach(AttachArgs),
    /// Write a synthetic model of a preset's shape as a GGUF file that llama.cpp loads
    /// too (the same weights `profile --preset` decodes), so any engine can run
    /// gpuscope's shapes with no download.
    Synth(SynthArgs),
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A profile file (JSON or compact; the content tells).
    pub file: PathBuf,
    /// Output format: text (the terminal report), md (Markdown results document),
    /// html (self-contained page), perfetto (trace for ui.perfetto.dev), json (the
    /// profile as versioned JSON), compact (the profile in the compact binary encoding,
    /// about a tenth of the JSON and read several times faster).
    #[arg(
        long,
        default_value = "text",
        value_name = "text|md|html|perfetto|json|compact"
    )]
    pub format: String,
    /// Write here (atomically) instead of stdout; required for html, perfetto and
    /// compact.
    #[arg(short = 'o', long = "output", value_name = "FILE", value_parser = output_file)]
    pub output: Option<PathBuf>,
}

/// Parsed by [`ReportFormat::parse`] rather than by clap, so that an unknown format is
/// a one-line error like every other bad input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    Text,
    Md,
    Html,
    Perfetto,
    Json,
    /// The compact binary encoding (what `profile --compact` writes).
    Compact,
}

impl ReportFormat {
    pub const ALL: [ReportFormat; 6] = [
        ReportFormat::Text,
        ReportFormat::Md,
        ReportFormat::Html,
        ReportFormat::Perfetto,
        ReportFormat::Json,
        ReportFormat::Compact,
    ];

    pub fn parse(s: &str) -> Result<ReportFormat, String> {
        Self::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("unknown report format `{s}`: expected text, md, html, perfetto, json or compact")
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            ReportFormat::Text => "text",
            ReportFormat::Md => "md",
            ReportFormat::Html => "html",
            ReportFormat::Perfetto => "perfetto",
            ReportFormat::Json => "json",
            ReportFormat::Compact => "compact",
        }
    }

    /// Formats that are not for a terminal: written only to a file.
    pub fn needs_file(self) -> bool {
        matches!(
            self,
            ReportFormat::Html | ReportFormat::Perfetto | ReportFormat::Compact
        )
    }
}

#[derive(Debug, Args)]
pub struct PeakArgs {
    /// Bytes the bandwidth kernels move per repetition, in MiB (capped by the device's
    /// binding limit).
    #[arg(long, default_value_t = 1024, value_parser = limits::u64_in(1..=1 << 20))]
    pub mib: u64,
    /// Timed repetitions per figure (after 2 warm-ups).
    #[arg(long, default_value_t = 20, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000))]
    pub repetitions: usize,
    /// The FMA and fill kernels grow until one repetition takes this long, in ms.
    #[arg(long, default_value_t = 5.0, value_parser = |s: &str| limits::finite_in(s, 0.001..=3.6e6, "a time in milliseconds"))]
    pub target_ms: f64,
    /// Dispatches in the dependent-dispatch chain.
    #[arg(long, default_value_t = 1000, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1_000_000))]
    pub chain: usize,
    /// Measure again even when this adapter's ceilings are cached.
    #[arg(long)]
    pub refresh: bool,
    #[command(flatten)]
    pub device: DeviceArgs,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TimingArg {
    /// The finest the adapter offers that costs little: sampled where a timestamp between
    /// dispatches is expensive (NVIDIA), else dispatch, else pass, else off.
    Auto,
    /// Wall-clock per token only (one sync per token, no GPU timestamps).
    Off,
    /// GPU timestamps at each compute pass (one pass per layer).
    Pass,
    /// GPU timestamps between dispatches: per-op times.
    Dispatch,
    /// Per-op times from timestamps around one dispatch in 16, rotating over tokens:
    /// per-op shares at a fraction of `dispatch`'s cost.
    Sampled,
}

#[derive(Debug, Args)]
pub struct DeviceArgs {
    /// Use the adapter whose name contains this (case-insensitive).
    #[arg(long)]
    pub adapter: Option<String>,
    /// Use this wgpu backend: vulkan, metal, dx12 or gl.
    #[arg(long)]
    pub backend: Option<String>,
    /// GPU timing mode.
    #[arg(long, value_enum, default_value = "auto")]
    pub timing: TimingArg,
    /// Turn on the backend's validation (the Vulkan validation layer when installed);
    /// `check` reports each message as a failure at the dispatch that caused it.
    #[arg(long)]
    pub validate: bool,
}

impl DeviceArgs {
    pub fn gpu_options(&self) -> GpuOptions {
        GpuOptions {
            adapter: self.adapter.clone(),
            backend: self.backend.clone(),
            timing: match self.timing {
                TimingArg::Auto => TimingRequest::Auto,
                TimingArg::Off => TimingRequest::Exactly(TimingMode::Off),
                TimingArg::Pass => TimingRequest::Exactly(TimingMode::Pass),
                TimingArg::Dispatch => TimingRequest::Exactly(TimingMode::Dispatch),
                TimingArg::Sampled => TimingRequest::Sampled {
                    stride: gpuscope_runtime::AUTO_SAMPLING_STRIDE,
                },
            },
            validate: self.validate,
        }
    }

    /// [`Self::gpu_options`] for timing kernels run back to back (`ops perf`, sweeps):
    /// `auto` becomes pass timestamps, which add nothing per dispatch (a timestamp after
    /// every dispatch costs several µs on some drivers, and auto's sampled mode times too
    /// few of a short pass's dispatches).
    pub fn kernel_timing_options(&self) -> GpuOptions {
        let mut o = self.gpu_options();
        if matches!(self.timing, TimingArg::Auto) {
            o.timing = TimingRequest::Exactly(TimingMode::Pass);
        }
        o
    }
}

/// Kernel variants and fusions of the decode graph (profile, run, bench, check).
#[derive(Debug, Args, Default)]
pub struct KernelArgs {
    /// Pick a kernel variant, OP=VARIANT (repeatable): gemv=shared|subgroup|rows|blocks|dp4a
    /// (optionally :LANESxROWS, e.g. gemv=blocks:16x2, one spread for every gemv; dp4a:
    /// int8 activations and integer dot products, packed q4_0/q4_1/q8_0 and GGUF q5_0/q5_1/q4_K/q5_K
    /// weights; dp4a_k=off leaves q4_K/q5_K to the float variant, see docs/kernels.md),
    /// attention=workgroup|subgroup|groups|split, weights=gguf|packed, gemv_large=VARIANT|none
    /// (the variant of matrices of 2^18 weights and more; dp4a on GPUs),
    /// prefill=coopmat|dp4a|batched (the prompt's gemm for q4_0/q4_1/q8_0/q5_0/q5_1/q4_K/q5_K: f16 tiles on
    /// cooperative matrices, int8 tiles, or the batched gemv). Default: by adapter (the
    /// profile records it).
    #[arg(long = "kernel", value_name = "OP=VARIANT")]
    pub kernels: Vec<String>,
    /// Fusions: all, none, or a list of norm, rope, silu, residual, attention, post_norm,
    /// attn_output, down. Default:
    /// all (the profile records it).
    #[arg(long, value_name = "all|none|LIST")]
    pub fuse: Option<String>,
}

impl KernelArgs {
    /// The adapter's plan with these overrides applied. A bad name is a usage error (2);
    /// a variant the adapter cannot run, a missing feature (3).
    pub fn plan(&self, gpu: &gpuscope_runtime::Gpu) -> Result<gpuscope_model::KernelPlan, Exit> {
        let usage = |e: String| Exit {
            code: 2,
            error: anyhow::anyhow!(e),
        };
        let mut plan = gpuscope_model::KernelPlan::for_adapter(gpu);
        if let Some(tuning) = cached_tuning(gpu) {
            if let Err(why) = plan.apply_tuning(gpu, &tuning) {
                eprintln!("gpuscope: not using the kernel tuning {why}");
            }
        }
        if let Some(fuse) = &self.fuse {
            plan.fusions =
                gpuscope_model::Fusions::parse(fuse).map_err(|e| usage(format!("--fuse: {e}")))?;
        }
        for k in &self.kernels {
            plan.set_kernel(k)
                .map_err(|e| usage(format!("--kernel {e}")))?;
        }
        plan.check(gpu).map_err(|e| Exit {
            code: GPU_UNAVAILABLE,
            error: anyhow::anyhow!("--kernel: {e}"),
        })?;
        Ok(plan)
    }
}

/// This adapter's kernel tuning from the cache (`bench --sweep --save-tuning`), if any;
/// a file that exists but cannot be used is said on stderr.
fn cached_tuning(gpu: &gpuscope_runtime::Gpu) -> Option<gpuscope_model::GemvTuning> {
    use gpuscope_report::{cache, tuning};
    let root = cache::cache_root()?;
    let key = cache::CacheKey::new(
        &gpu.adapter_desc(),
        concat!("gpuscope ", env!("CARGO_PKG_VERSION")),
    );
    match tuning::load(&root, &key) {
        Ok(found) => found.map(|(t, source)| gpuscope_model::GemvTuning {
            gemv: t.gemv,
            gemv_large: t.gemv_large,
            large_weights: t.large_weights,
            source,
        }),
        Err(why) => {
            eprintln!("gpuscope: not using the kernel tuning {why}");
            None
        }
    }
}

#[derive(Debug, Args)]
pub struct SynthArgs {
    /// Model shape: tiny, smollm2-135m, llama-1b, llama-8b,
    /// gemma3-270m, qwen2.5-0.5b, qwen3-0.6b, mistral-7b, phi3-mini (and tiny-gemma3,
    /// tiny-qwen2, tiny-qwen3, tiny-mistral, tiny-phi3).
    #[arg(long, default_value = "smollm2-135m")]
    pub preset: String,
    /// Weight format of the matrices and embeddings (as `profile --weights`).
    #[arg(long, default_value = "q8_0")]
    pub weights: String,
    /// Seed of the synthetic weights.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The GGUF file to write.
    #[arg(short = 'o', long = "output", value_name = "FILE.gguf", value_parser = output_file)]
    pub output: PathBuf,
}

#[derive(Debug, Args)]
#[command(override_usage = "gpuscope attach [OPTIONS] -- PROGRAM [ARGS]...")]
pub struct AttachArgs {
    /// GPU timing: auto (every dispatch; on NVIDIA 1 in 128, picked by a hash), off, pass
    /// (a timestamp at each command buffer's start and end), dispatch, sampled (1 in 16).
    #[arg(long, default_value = "auto", value_parser = ["auto", "off", "pass", "dispatch", "sampled"])]
    pub timing: String,
    /// With sampled timing, time 1 dispatch in N [default: 16 for `sampled`; 64 for
    /// `auto` on NVIDIA, where each timed dispatch costs the GPU microseconds].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub stride: Option<u32>,
    /// What one step is: sync (the work between two host waits on a queue, a token of a
    /// decode loop) or submit (each queue submit).
    #[arg(long, default_value = "sync", value_parser = ["sync", "submit"])]
    pub step: String,
    /// Keep the layer's raw recording in this new or empty directory (`gpuscope report
    /// DIR` reads it).
    #[arg(long, value_name = "DIR", value_parser = new_or_empty_dir)]
    pub output: Option<PathBuf>,
    /// Write the profile (versioned JSON) here.
    #[arg(long, value_parser = output_file)]
    pub json: Option<PathBuf>,
    /// Write the profile in the compact binary encoding here.
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub compact: Option<PathBuf>,
    /// Write a Perfetto trace here.
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub trace: Option<PathBuf>,
    /// First run the program with timing off, then as asked, and report what the layer's
    /// timing costs (steady steps per second of both; the program runs twice).
    #[arg(long)]
    pub overhead: bool,
    /// The layer library (default: `$GPUSCOPE_LAYER_LIBRARY`, else beside this gpuscope
    /// binary, where `cargo build` puts it).
    #[arg(long, value_name = "PATH")]
    pub layer: Option<PathBuf>,
    /// The program to run, and its arguments (after `--`).
    #[arg(
        required = true,
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM"
    )]
    pub program: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A GGUF model file (llama, mistral, qwen2, qwen3, phi3 or gemma3).
    pub model: PathBuf,
    /// The text to continue.
    #[arg(long, short)]
    pub prompt: String,
    /// Tokens to generate.
    #[arg(short = 'n', long = "tokens", default_value_t = 32, value_parser = limits::tokens())]
    pub tokens: u32,
    /// Wrap the prompt in the model's chat format (ChatML, Gemma, Llama 3, Phi-3, Mistral INST).
    #[arg(long)]
    pub chat: bool,
    /// Keep generating past the end-of-sequence token.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Decode with the CPU reference instead of the GPU (slow; for checking).
    #[arg(long)]
    pub cpu: bool,
    /// Record every GPU command of the run (prompt and generation steps) to this
    /// capture directory (see `inspect` and `replay`).
    #[arg(long, conflicts_with = "cpu", value_parser = output_dir)]
    pub capture: Option<PathBuf>,
    /// Also capture every buffer's contents before the first step.
    #[arg(long, requires = "capture")]
    pub capture_data: bool,
    /// Also capture the outputs of every dispatch of these recorded steps (`3..4`; prompt
    /// steps count first), decoded again dispatch by dispatch after the run.
    #[arg(long, value_name = "A..B", requires = "capture_data", value_parser = parse_range)]
    pub capture_tokens: Option<std::ops::Range<u32>>,
    /// Replace an existing capture at the --capture directory (one that holds nothing
    /// but a gpuscope capture).
    #[arg(long, requires = "capture")]
    pub force: bool,
    #[command(flatten)]
    pub kernels: KernelArgs,
    #[command(flatten)]
    pub device: DeviceArgs,
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// A GGUF model file to profile (llama, mistral, qwen2, qwen3, phi3 or gemma3);
    /// without one, a synthetic model.
    pub model: Option<PathBuf>,
    /// With a model file: a prompt, fed first to measure prompt processing (pp).
    #[arg(long, requires = "model")]
    pub prompt: Option<String>,
    /// Without a model file: this many synthetic prompt tokens go through batched prefill
    /// first (timed apart as pp, e.g. 512 for llama-bench's pp512); the decoded tokens
    /// continue from their KV cache.
    #[arg(long, value_name = "N", conflicts_with = "model", value_parser = limits::tokens_or_none())]
    pub prompt_tokens: Option<u32>,
    /// Model shape to synthesize: tiny, smollm2-135m, llama-1b, llama-8b,
    /// gemma3-270m, qwen2.5-0.5b, qwen3-0.6b, mistral-7b, phi3-mini (and tiny-gemma3,
    /// tiny-qwen2, tiny-qwen3, tiny-mistral, tiny-phi3).
    #[arg(long, default_value = "smollm2-135m")]
    pub preset: String,
    /// Weight format of the matrices and embeddings: f32, f16, bf16, q8_0, q4_0, q4_1,
    /// q5_0, q5_1, q4_k, q5_k, q6_k (tensors whose width is not whole blocks fall back to
    /// q8_0).
    #[arg(long, default_value = "q8_0")]
    pub weights: String,
    /// Tokens to decode [default: 32; with sampled timing, enough for every dispatch
    /// site to be timed four times: 4 × the sampling stride].
    #[arg(long, value_parser = limits::tokens())]
    pub tokens: Option<u32>,
    /// Seed of the synthetic weights.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Token id fed at position 0.
    #[arg(long, default_value_t = 1)]
    pub first_token: u32,
    /// Tokens decoded and discarded before the recorded ones (lazy pipeline compiles,
    /// GPU clock ramp-up): `auto` decodes until the step time settles (two 8-step
    /// medians within 5%, at most 10 s and 256 steps; the report says how it ended), or
    /// a number of tokens.
    #[arg(long, default_value = "auto", value_parser = parse_warmup)]
    pub warmup: gpuscope_model::Warmup,
    /// Tokens in flight: 2 encodes the next token while the GPU runs this one; 1 waits
    /// for each token first (per-token latency instead of throughput).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub in_flight: u8,
    /// Also decode with timing off and report what profiling costs.
    #[arg(long)]
    pub overhead: bool,
    /// Write the full profile (versioned JSON) here.
    #[arg(long, value_parser = output_file)]
    pub json: Option<PathBuf>,
    /// Write the full profile in the compact binary encoding here (a tenth of the
    /// JSON's size, read much faster; `gpuscope report` reads both).
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub compact: Option<PathBuf>,
    /// Also write a Perfetto trace here (open it at ui.perfetto.dev); the same as
    /// `report PROFILE --format perfetto -o FILE`.
    #[arg(long, value_name = "FILE", value_parser = output_file)]
    pub trace: Option<PathBuf>,
    /// Record every GPU command of the recorded tokens to this capture directory
    /// (`gpuscope inspect` / `gpuscope replay` read it).
    #[arg(long, value_name = "DIR", value_parser = output_dir)]
    pub capture: Option<PathBuf>,
    /// Also capture every buffer's contents before the first recorded token.
    #[arg(long, requires = "capture")]
    pub capture_data: bool,
    /// Also capture the outputs of every dispatch of these recorded tokens (`3..4`),
    /// decoded again dispatch by dispatch after the timed run.
    #[arg(long, value_name = "A..B", requires = "capture_data", value_parser = parse_range)]
    pub capture_tokens: Option<std::ops::Range<u32>>,
    /// Replace an existing capture at the --capture directory (one that holds nothing
    /// but a gpuscope capture).
    #[arg(long, requires = "capture")]
    pub force: bool,
    /// Test-only: extra GPU work in one gemv of every layer, `TARGET=PASSES` (e.g.
    /// `ffn_down=12`), to check that `diff`'s gate catches a slowdown.
    #[arg(long, hide = true, value_name = "TARGET=PASSES", value_parser = gpuscope_model::PlantedSlowdown::parse)]
    pub plant_slowdown: Option<gpuscope_model::PlantedSlowdown>,
    /// Test hook: provoke a GPU fault mid-run, `device-lost-after=N` (the device is
    /// destroyed once N tokens are measured) or `oom-after=N` (Linux: an allocation over
    /// a lowered address-space budget), to check that the run keeps what it measured
    /// and exits 4.
    #[arg(long, hide = true, value_name = "FAULT", value_parser = crate::watch::Fault::parse)]
    pub fault: Option<crate::watch::Fault>,
    #[command(flatten)]
    pub kernels: KernelArgs,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// `--force`: whether an existing capture may be replaced.
pub fn on_existing(force: bool) -> gpuscope_trace::capture::OnExisting {
    match force {
        true => gpuscope_trace::capture::OnExisting::Replace,
        false => gpuscope_trace::capture::OnExisting::Refuse,
    }
}

fn parse_range(s: &str) -> Result<std::ops::Range<u32>, String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("`{s}`: expected A..B, e.g. 3..4"))?;
    let a: u32 = a
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: `{a}` is not a token index"))?;
    let b: u32 = b
        .trim()
        .parse()
        .map_err(|_| format!("`{s}`: `{b}` is not a token index"))?;
    if a >= b {
        return Err(format!("`{s}`: empty range (A must be less than B)"));
    }
    Ok(a..b)
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// A GGUF model file (llama, mistral, qwen2, qwen3, phi3 or gemma3); without one, a
    /// synthetic model (--preset).
    pub model: Option<PathBuf>,
    /// What to compare with: `cpu`, `serial` (this GPU, a submit and a wait per
    /// dispatch), a backend (`vulkan`, `gl`, `metal`, `dx12`) or an adapter name substring.
    #[arg(long, default_value = "cpu")]
    pub against: String,
    /// The CPU reference's arithmetic: f32 (the kernels' own) or f64 (exact arithmetic
    /// over the same dequantized weights).
    #[arg(long, default_value = "f32", value_parser = ["f32", "f64"])]
    pub precision: String,
    /// Tokens (steps) to check.
    #[arg(long, default_value_t = 4, value_parser = limits::tokens())]
    pub tokens: u32,
    /// With a model file: text whose tokens are fed first.
    #[arg(long, requires = "model")]
    pub prompt: Option<String>,
    /// Without a prompt: the token fed at position 0.
    #[arg(long, default_value_t = 1)]
    pub first_token: u32,
    /// Synthetic model shape: tiny, smollm2-135m, llama-1b, llama-8b,
    /// gemma3-270m, qwen2.5-0.5b, qwen3-0.6b, mistral-7b, phi3-mini (and tiny-gemma3,
    /// tiny-qwen2, tiny-qwen3, tiny-mistral, tiny-phi3).
    #[arg(long, default_value = "tiny")]
    pub preset: String,
    /// Synthetic weight format: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k,
    /// q6_k.
    #[arg(long, default_value = "q8_0")]
    pub weights: String,
    /// Seed of the synthetic weights.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Override a threshold: nmse=, max=, chained.nmse=, chained.max=, OP=NMSE, OP.nmse=,
    /// OP.max= (repeatable; OP is an op or its family, e.g. rope, gemv).
    #[arg(long, value_name = "KEY=VALUE")]
    pub threshold: Vec<String>,
    /// Run the tested GPU serially: a submit and a wait after every dispatch.
    #[arg(long)]
    pub serial: bool,
    /// Write each selected dispatch's inputs, outputs and expected outputs as .npy files
    /// plus index.json into this new directory.
    #[arg(long, value_name = "DIR", value_parser = output_dir)]
    pub trace_tensors: Option<PathBuf>,
    /// Dispatches to trace: op=NAME, label=LABEL, layer=N|A..B, token=N|A..B, comma-separated.
    #[arg(long, requires = "trace_tensors")]
    pub filter: Option<String>,
    /// Stop after this dispatch (`N`, the report's seq, or `token=T,label=L`); writes its
    /// tensors and a one-dispatch capture (for `gpuscope replay`) into --trace-tensors DIR.
    #[arg(long, value_name = "N|token=T,label=L", requires = "trace_tensors")]
    pub break_at: Option<String>,
    /// Write the full comparison (JSON) here.
    #[arg(long, value_parser = output_file)]
    pub json: Option<PathBuf>,
    /// Plant a fault to see the check find it: `corrupt=N` changes dispatch N's output.
    #[arg(long, hide = true)]
    pub inject_fault: Option<String>,
    #[command(flatten)]
    pub kernels: KernelArgs,
    #[command(flatten)]
    pub device: DeviceArgs,
}

#[derive(Debug, Subcommand)]
pub enum OpsMode {
    /// Run each case once, compare with the CPU executor, check the guard regions.
    Test(OpsArgs),
    /// Time each case with GPU timestamps: µs per run, GB/s, GFLOP/s, % of the ceiling.
    Perf(OpsArgs),
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum OutputFormat {
    Table,
    Csv,
    Json,
}

#[derive(Debug, Args)]
pub struct OpsArgs {
    /// Only kernels whose name contains this (repeatable), e.g. gemv, rope, attention.
    #[arg(long)]
    pub op: Vec<String>,
    /// Only this weight format (repeatable): f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1,
    /// q4_k, q5_k, q6_k.
    #[arg(long = "format")]
    pub formats: Vec<String>,
    /// Only shapes whose name contains this (repeatable), e.g. smollm2, one_row, odd.
    #[arg(long)]
    pub shape: Vec<String>,
    /// Also Llama-3-8B shapes and a weight matrix as large as the device's largest binding.
    #[arg(long)]
    pub all_shapes: bool,
    /// How stdout shows the results.
    #[arg(long, value_enum, default_value = "table")]
    pub output: OutputFormat,
    /// Also write the results as JSON here.
    #[arg(long, value_parser = output_file)]
    pub json: Option<PathBuf>,
    /// Override a threshold (as for `check`): nmse=, max=, OP=NMSE, OP.max=.
    #[arg(long, value_name = "KEY=VALUE")]
    pub threshold: Vec<String>,
    /// perf: the copy bandwidth (GB/s) that % of ceiling is taken of; by default the
    /// copy bandwidth `gpuscope peak` measured and cached for this adapter.
    #[arg(long, value_name = "GB/S")]
    pub ceiling: Option<String>,
    /// Plant a kernel bug: rope-theta, oob-write.
    /// perf: time with warm caches (runs back to back, no flush between them); the
    /// results are labelled warm. By default each run follows a write larger than the
    /// last-level cache.
    #[arg(long)]
    pub warm_caches: bool,
    /// Only the harness's table: leave out the kernels the adapter's default plan runs
    /// (checked inside a decode step of a synthetic SmolLM2-135M, or timed as the
    /// decoder binds them).
    #[arg(long)]
    pub no_plan: bool,
    #[arg(long, hide = true)]
    pub inject_fault: Option<String>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The capture directory.
    pub dir: PathBuf,
    /// Benchmark each unique command alone (GPU timestamps), slowest total first.
    #[arg(long)]
    pub per_command: bool,
    /// Replay with an edited kernel: SHADER=FILE.wgsl (repeatable). Its entry points and
    /// bindings must match the recorded shader's.
    #[arg(long, value_name = "SHADER=FILE")]
    pub substitute: Vec<String>,
    /// Compare float outputs within this relative tolerance (0 to 1) instead of
    /// bitwise; integer outputs (token ids, counts) are always compared exactly.
    #[arg(long, value_parser = parse_tolerance)]
    pub tolerance: Option<f32>,
    /// Write the replayed profile (or, with --per-command, the benchmark) as JSON.
    #[arg(long, value_parser = output_file)]
    pub json: Option<PathBuf>,
    /// Refuse a capture whose replay would hold more than this much memory (buffers,
    /// uploads, blobs, compared outputs), e.g. `64GiB`.
    // The default has room for a capture of an 8B-parameter model at 8 bits with its
    // KV cache, and is far short of what a hostile capture can claim.
    #[arg(long, value_name = "SIZE", default_value = "16GiB", value_parser = parse_size)]
    pub max_memory: u64,
    /// Watchdog: stop (exit 4) when one unit of GPU work (a step, one command's
    /// benchmark, the output comparison) runs longer than this many seconds, naming
    /// the dispatch most likely stuck (a substituted kernel that never finishes); 0
    /// waits forever.
    #[arg(long, value_name = "SECS", default_value_t = 60.0, value_parser = parse_seconds)]
    pub timeout: f64,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// A duration in seconds, 0 or more.
/// An output file, checked as the command line is read (before any run): not a
/// directory, not read-only, in a directory that exists and takes new files
/// ([`gpuscope_trace::atomic::check_file_target`]). Every output file option uses it.
fn output_file(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    gpuscope_trace::atomic::check_file_target(&path).map_err(|e| e.to_string())?;
    Ok(path)
}

/// An output directory (`--capture`, `--trace-tensors`), checked as the command line is
/// read: its parent exists and takes new entries, the same rule as [`output_file`]
/// (whether an existing directory may be replaced is checked with `--force` in view).
/// An output directory that may exist (a capture directory: replacing one needs
/// `--force`, checked when it is written); a new one's parent must take it.
fn output_dir(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    if !path.exists() {
        gpuscope_trace::atomic::check_new_entry(&path).map_err(|e| e.to_string())?;
    }
    Ok(path)
}

/// A new directory (its parent must take it) or an empty one, so what a run writes is
/// never mixed with, or mistaken for, an earlier run's files (attach's recording).
fn new_or_empty_dir(s: &str) -> Result<PathBuf, String> {
    let path = output_dir(s)?;
    if !path.exists() {
        return Ok(path);
    }
    let mut entries = std::fs::read_dir(&path).map_err(|e| format!("{s}: {e}"))?;
    if entries.next().is_some() {
        return Err(format!(
            "{s} is not empty: give a new directory or an empty one (an earlier run's files would be mixed with this one's)"
        ));
    }
    Ok(path)
}

fn parse_seconds(s: &str) -> Result<f64, String> {
    limits::finite_in(s, 0.0..=limits::MAX_SECONDS, "a number of seconds")
}

fn parse_warmup(s: &str) -> Result<gpuscope_model::Warmup, String> {
    let w: gpuscope_model::Warmup = s.parse()?;
    match w {
        gpuscope_model::Warmup::Steps(n) if n > MAX_TOKENS => {
            Err(format!("`{s}` is more than {MAX_TOKENS} tokens"))
        }
        w => Ok(w),
    }
}

fn parse_tolerance(s: &str) -> Result<f32, String> {
    limits::finite_in(s, 0.0..=1.0, "a relative tolerance").map(|v| v as f32)
}

/// A size in bytes: a plain number or with a unit (`512MiB`, `16GiB`, `2GB`).
fn parse_size(s: &str) -> Result<u64, String> {
    s.parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|e| format!("`{s}`: {e} (e.g. 16GiB)"))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DiffBy {
    Op,
    Family,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum DiffFormat {
    Text,
    Md,
    Json,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The base profile (`profile --json`), e.g. the stored baseline.
    pub base: PathBuf,
    /// The new profile, compared against the base.
    pub new: PathBuf,
    /// Output format.
    #[arg(long, value_enum, default_value = "text")]
    pub format: DiffFormat,
    /// Gate: fail (exit 5) when the wall time per token is significantly slower by more
    /// than this, e.g. `5%`.
    #[arg(long, value_name = "PERCENT", value_parser = parse_percent)]
    pub max_regress: Option<f64>,
    /// Gate: fail when this op (e.g. `gemv_q4_1`) or label (e.g. `L3.ffn_down`) is
    /// significantly slower per token by more than the given percent. Repeatable.
    #[arg(long, value_name = "OP=PERCENT", value_parser = parse_op_limit)]
    pub max_regress_op: Vec<(String, f64)>,
    /// Gate: fail when any per-token counter (dispatches, syncs, resources created,
    /// bytes moved, ...) grows by more than this (0: any increase fails).
    #[arg(long, value_name = "N")]
    pub max_counter_increase: Option<u64>,
    /// Smallest change that counts as slower or faster (smaller ones are noise).
    #[arg(long, value_name = "PERCENT", default_value = "2%", value_parser = parse_percent)]
    pub min_effect: f64,
    /// Significance level of the Mann-Whitney test.
    #[arg(long, default_value_t = 0.01, value_parser = parse_alpha)]
    pub alpha: f64,
    /// Compare per op (kernel) or per op family (gemv with its weight format, rms_norm,
    /// softmax, rope, attention, ...): `family` compares two engines on the same model,
    /// e.g. llama.cpp under `gpuscope attach` against gpuscope's own decoder.
    #[arg(long, value_enum, default_value = "op")]
    pub by: DiffBy,
    /// Refuse (exit 1) to compare profiles of different models or adapters instead of
    /// warning.
    #[arg(long)]
    pub strict: bool,
}

/// `5%`, `5` (percent) or `0.5%`, as a fraction (0.05).
pub fn parse_percent(s: &str) -> Result<f64, String> {
    let number = s.trim().trim_end_matches('%').trim();
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v / 100.0),
        _ => Err(format!(
            "`{s}` is not a percentage (a number of 0 or more, e.g. 5%)"
        )),
    }
}

fn parse_op_limit(s: &str) -> Result<(String, f64), String> {
    let (op, pct) = s
        .split_once('=')
        .ok_or_else(|| format!("`{s}`: expected OP=PERCENT, e.g. gemv_q4_1=3%"))?;
    if op.trim().is_empty() {
        return Err(format!("`{s}`: the op name is empty"));
    }
    Ok((op.trim().to_string(), parse_percent(pct)?))
}

fn parse_alpha(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(a) if a > 0.0 && a < 1.0 => Ok(a),
        _ => Err(format!("`{s}` is not a significance level between 0 and 1")),
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BenchFormat {
    Md,
    Csv,
    Json,
    Jsonl,
    /// A page with a bar chart per experiment (sweeps only).
    Html,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// A GGUF model file (llama, mistral, qwen2, qwen3, phi3 or gemma3); without one, a
    /// synthetic model of `--preset`.
    #[arg(short = 'm', long)]
    pub model: Option<PathBuf>,
    /// Model shape to synthesize: tiny, smollm2-135m, llama-1b, llama-8b,
    /// gemma3-270m, qwen2.5-0.5b, qwen3-0.6b, mistral-7b, phi3-mini (and tiny-gemma3,
    /// tiny-qwen2, tiny-qwen3, tiny-mistral, tiny-phi3).
    #[arg(long, default_value = "smollm2-135m", conflicts_with = "model")]
    pub preset: String,
    /// Weight format of a synthetic model (see `profile --weights`).
    #[arg(long, default_value = "q8_0", conflicts_with = "model")]
    pub weights: String,
    /// Prompt lengths to test (pp): `512`, `128,512`, `64-512*2`; 0 for none.
    #[arg(short = 'p', long = "n-prompt", value_name = "N", value_parser = parse_int_list)]
    pub n_prompt: Vec<Vec<u32>>,
    /// Generation lengths to test (tg); 0 for none.
    #[arg(short = 'n', long = "n-gen", value_name = "N", value_parser = parse_int_list)]
    pub n_gen: Vec<Vec<u32>>,
    /// Prompt then generation in one test (`-pg 512,128`; repeatable).
    #[arg(long = "pg", value_name = "PP,TG", value_parser = parse_pg)]
    pub pg: Vec<(u32, u32)>,
    /// Repetitions of each test.
    #[arg(short = 'r', long = "repetitions", default_value_t = 5, value_parser = limits::u32_in(1..=1_000_000))]
    pub repetitions: u32,
    /// Output format on stdout.
    #[arg(short = 'o', long = "output", value_enum, default_value = "md")]
    pub output: BenchFormat,
    /// Skip the warm-up run before each test.
    #[arg(long, conflicts_with = "full_warmup")]
    pub no_warmup: bool,
    /// Warm up each test with one untimed run of the whole test instead of llama-bench's
    /// prompt and one token: for GPUs whose first repetition runs slow after that (bench
    /// names such a repetition; docs/bench.md).
    #[arg(long)]
    pub full_warmup: bool,
    /// Seed of the synthetic weights and of the prompt tokens.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Time gemv configurations instead of llama-bench's tests: AXIS=V1,V2 (repeatable),
    /// every combination of the axes at each shape. Axes: shape (ROWSxCOLS; default: the
    /// model's gemv shapes), format, variant, lanes (per row), rows (per lane), wg
    /// (threads per workgroup), fuse (on,off: rms_norm folded into the gemv or its own
    /// dispatch). -r sets the timed steps (10 runs each).
    #[arg(long, value_name = "AXIS=LIST")]
    pub sweep: Vec<String>,
    /// --sweep and --experiment: time the configurations with warm caches (runs back to
    /// back); by default each run follows a write larger than the last-level cache, as
    /// `ops perf` times, since a decoder reads its weights from memory.
    #[arg(long)]
    pub warm_caches: bool,
    /// A built-in gemv experiment at one shape (the first --sweep shape, else the FFN up
    /// projection): memory-vs-compute, quant-overhead, workgroup, tile, or all.
    #[arg(long, value_name = "NAME")]
    pub experiment: Vec<String>,
    /// With --sweep: save the fastest gemv variant per size class (below / from 2^18
    /// weights, summed over the swept shapes) as this adapter's kernel tuning, which
    /// `profile`, `run` and `bench` then use by default (the cache's tuning/ folder;
    /// `--kernel` still overrides it).
    #[arg(long, requires = "sweep")]
    pub save_tuning: bool,
    #[command(flatten)]
    pub kernels: KernelArgs,
    #[command(flatten)]
    pub device: DeviceArgs,
}

/// llama-bench's integer lists: `a`, `a,b`, `first-last`, `first-last+step`,
/// `first-last*factor`.
pub fn parse_int_list(s: &str) -> Result<Vec<u32>, String> {
    let bad = |why: &str| format!("`{s}`: {why} (e.g. 512, 128,512 or 64-512*2)");
    let mut out = Vec::new();
    for part in s.split(',') {
        let number = |t: &str| match t.trim().parse::<u32>() {
            Ok(n) if n <= MAX_TOKENS => Ok(n),
            Ok(_) => Err(bad(&format!("{t} is more than {MAX_TOKENS} tokens"))),
            Err(_) => Err(bad("not a number")),
        };
        let Some((first, rest)) = part.split_once('-') else {
            out.push(number(part)?);
            continue;
        };
        let (last, multiply, step) = match rest.find(['+', '*']) {
            Some(i) => (&rest[..i], &rest[i..i + 1] == "*", number(&rest[i + 1..])?),
            None => (rest, false, 1),
        };
        let (first, last) = (number(first)?, number(last)?);
        // Counted before any entry is made: a range is never expanded past the limit.
        match limits::list_len(first, last, step, multiply) {
            None => return Err(bad("the range does not advance")),
            Some(n) if n + out.len() as u64 > limits::MAX_LIST => {
                return Err(bad(&format!(
                    "more than {} lengths to test",
                    limits::MAX_LIST
                )))
            }
            Some(_) => {}
        }
        let mut i = first;
        while i <= last {
            out.push(i);
            match if multiply {
                i.checked_mul(step)
            } else {
                i.checked_add(step)
            } {
                Some(n) if n > i => i = n,
                _ => break,
            }
        }
    }
    Ok(out)
}

fn parse_pg(s: &str) -> Result<(u32, u32), String> {
    let (p, g) = s
        .split_once(',')
        .ok_or_else(|| format!("`{s}`: expected PP,TG, e.g. 512,128"))?;
    let n = |t: &str| match t.trim().parse::<u32>() {
        Ok(v) if v <= MAX_TOKENS => Ok(v),
        _ => Err(format!(
            "`{s}`: `{t}` is not a number of tokens (0 to {MAX_TOKENS})"
        )),
    };
    Ok((n(p)?, n(g)?))
}

/// llama-bench spells its prompt+generation option `-pg`, which clap would read as `-p g`:
/// within `bench`, a lone `-pg` becomes `--pg`.
pub fn llama_bench_spellings(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let is_bench = args.get(1).is_some_and(|a| a == "bench");
    args.into_iter()
        .map(|a| {
            if is_bench && a == "-pg" {
                "--pg".into()
            } else {
                a
            }
        })
        .collect()
}
