//! Command-line arguments, turned into library options in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use gpuscope_runtime::{GpuOptions, TimingRequest};
use gpuscope_trace::TimingMode;

#[derive(Debug, Parser)]
#[command(name = "gpuscope", version, about = "See where GPU inference time goes, on any wgpu backend.")]
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
    /// List the GPU adapters wgpu can see.
    Devices,
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
pub struct ProfileArgs {
    /// Model shape to synthesize: tiny, smollm2-135m, llama-1b, llama-8b.
    #[arg(long, default_value = "smollm2-135m")]
    pub preset: String,
    /// Weight format of the matrices and embeddings: f32, f16, q8_0, q4_0, q4_1.
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
    #[command(flatten)]
    pub device: DeviceArgs,
}
