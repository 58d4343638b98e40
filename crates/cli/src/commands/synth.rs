//! `gpuscope synth --preset P --weights F -o FILE.gguf`: a synthetic model as a GGUF
//! file (see `gpuscope_model::synth`).

use std::time::Instant;

use gpuscope_model::synthetic_weights;

use crate::args::SynthArgs;
use crate::exit::Exit;

pub fn run(args: &SynthArgs) -> Result<(), Exit> {
    let (preset, format) = super::common::synthetic_shape(&args.preset, &args.weights)?;
    let start = Instant::now();
    let config = preset.config();
    let weights = synthetic_weights(&config, format, args.seed, preset.name());
    let name = format!(
        "{} {} (gpuscope synthetic, seed {})",
        preset.name(),
        format.name(),
        args.seed
    );
    gpuscope_model::synth::write_gguf(&weights, &name, &args.output)?;
    let bytes = std::fs::metadata(&args.output).map_or(0, |m| m.len());
    eprintln!(
        "gpuscope: {} written ({}, {:.0}M params, {:.2} GB) in {:.1} s",
        args.output.display(),
        name,
        config.params() as f64 / 1e6,
        bytes as f64 / 1e9,
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
