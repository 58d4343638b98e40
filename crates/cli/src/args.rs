//! Command-line arguments, turned into library options in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use gpuscope_runtime::{GpuOptions, TimingRequest};
use gpuscope_trace::TimingMode;

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
    /// Print the report of a profile saved with `profile --json`.
    Report {
        /// A profile JSON file.
        file: PathBuf,
    },
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
    /// Measure the device's copy bandwidth and dispatch cost (the roofline's ceilings).
    Peak {
        /// Bytes copied per repetition, in MiB (capped by the device's binding limit).
        #[arg(long, default_value_t = 1024)]
        mib: u64,
        /// Timed repetitions (after 3 warm-ups).
        #[arg(long, default_value_t = 20)]
        repetitions: usize,
        #[command(flatten)]
        device: DeviceArgs,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum TimingArg {
    /// The finest the adapter offers: dispatch, else pass, else off.
    Auto,
    /// Wall-clock per token only (one sync per token, no GPU timestamps).
    Off,
    /// GPU timestamps at each compute pass (one pass per layer).
    Pass,
    /// GPU timestamps between dispatches: per-op times.
    Dispatch,
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
            },
        }
    }
}

#[derive(Debug, Args)]
pub struct RunArgs {
    /// A GGUF model file (Llama family).
    pub model: PathBuf,
    /// The text to continue.
    #[arg(long, short)]
    pub prompt: String,
    /// Tokens to generate.
    #[arg(short = 'n', long = "tokens", default_value_t = 32)]
    pub tokens: u32,
    /// Wrap the prompt in the model's chat format (ChatML models).
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
    #[arg(long, conflicts_with = "cpu")]
    pub capture: Option<PathBuf>,
    /// Also capture every buffer's contents before the first step.
    #[arg(long, requires = "capture")]
    pub capture_data: bool,
    /// Also capture the outputs of every dispatch of these recorded steps (`3..4`; prompt
    /// steps count first), decoded again dispatch by dispatch after the run.
    #[arg(long, value_name = "A..B", requires = "capture_data", value_parser = parse_range)]
    pub capture_tokens: Option<std::ops::Range<u32>>,
    #[command(flatten)]
    pub device: DeviceArgs,
}

#[derive(Debug, Args)]
pub struct ProfileArgs {
    /// A GGUF model file to profile (Llama family); without one, a synthetic model.
    pub model: Option<PathBuf>,
    /// With a model file: a prompt, fed first to measure prompt processing (pp).
    #[arg(long, requires = "model")]
    pub prompt: Option<String>,
    /// Model shape to synthesize: tiny, smollm2-135m, llama-1b, llama-8b.
    #[arg(long, default_value = "smollm2-135m")]
    pub preset: String,
    /// Weight format of the matrices and embeddings: f32, f16, bf16, q8_0, q4_0, q4_1,
    /// q4_k, q5_k, q6_k (tensors whose width is not whole blocks fall back to q8_0).
    #[arg(long, default_value = "q8_0")]
    pub weights: String,
    /// Tokens to decode.
    #[arg(long, default_value_t = 32)]
    pub tokens: u32,
    /// Seed of the synthetic weights.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Token id fed at position 0.
    #[arg(long, default_value_t = 1)]
    pub first_token: u32,
    /// Tokens decoded and discarded before the recorded ones (lazy pipeline compiles,
    /// GPU clock ramp-up).
    #[arg(long, default_value_t = 3)]
    pub warmup: u32,
    /// Tokens in flight: 2 encodes the next token while the GPU runs this one; 1 waits
    /// for each token first (per-token latency instead of throughput).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u8).range(1..=2))]
    pub in_flight: u8,
    /// Also decode with timing off and report what profiling costs.
    #[arg(long)]
    pub overhead: bool,
    /// Write the full profile (versioned JSON) here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Record every GPU command of the recorded tokens to this capture directory
    /// (`gpuscope inspect` / `gpuscope replay` read it).
    #[arg(long, value_name = "DIR")]
    pub capture: Option<PathBuf>,
    /// Also capture every buffer's contents before the first recorded token.
    #[arg(long, requires = "capture")]
    pub capture_data: bool,
    /// Also capture the outputs of every dispatch of these recorded tokens (`3..4`),
    /// decoded again dispatch by dispatch after the timed run.
    #[arg(long, value_name = "A..B", requires = "capture_data", value_parser = parse_range)]
    pub capture_tokens: Option<std::ops::Range<u32>>,
    #[command(flatten)]
    pub device: DeviceArgs,
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
    /// Compare outputs within this relative tolerance on f32 words instead of bitwise.
    #[arg(long)]
    pub tolerance: Option<f32>,
    /// Write the replayed profile (or, with --per-command, the benchmark) as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    #[command(flatten)]
    pub device: DeviceArgs,
}
