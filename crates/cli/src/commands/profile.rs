use std::io::Write;
use std::time::Instant;

use anyhow::{anyhow, Context};
use gpuscope_model::{profile_decode, synthetic_weights, Preset, ProfileOptions};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::Gpu;

use crate::args::ProfileArgs;
use crate::exit::{Exit, PARTIAL_RUN};

pub fn run(args: &ProfileArgs) -> Result<(), Exit> {
    let preset = Preset::parse(&args.preset).ok_or_else(|| {
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        anyhow!("unknown preset `{}`: expected one of {}", args.preset, names.join(", "))
    })?;
    let format: WeightFormat = args
        .weights
        .parse()
        .map_err(|e| anyhow!("--weights {}: {e}", args.weights))?;
    if args.tokens == 0 {
        return Err(anyhow!("--tokens must be at least 1").into());
    }
    let config = preset.config();
    if args.first_token >= config.vocab {
        return Err(anyhow!("--first-token {} is outside the vocabulary ({})", args.first_token, config.vocab).into());
    }
    let gpu = Gpu::new(&args.device.gpu_options())?;
    eprintln!(
        "gpuscope: {} weights of {} ({} params), seed {} ...",
        format.name(),
        preset.name(),
        config.params(),
        args.seed
    );
    let made = Instant::now();
    let weights = synthetic_weights(&config, format, args.seed, preset.name());
    eprintln!("gpuscope: weights made in {:.2} s; decoding {} tokens", made.elapsed().as_secs_f64(), args.tokens);
    let options = ProfileOptions {
        tokens: args.tokens,
        first_token: args.first_token,
        overhead: args.overhead,
        warmup: args.warmup,
        in_flight: args.in_flight as usize,
    };
    let run = profile_decode(&gpu, &weights, &options)?;
    // Whatever happened, what was measured is written and shown before the error.
    if let Some(path) = &args.json {
        gpuscope_trace::io::save_profile(path, &run.profile)
            .with_context(|| format!("writing the profile to {}", path.display()))?;
        eprintln!("gpuscope: profile written to {}", path.display());
    }
    std::io::stdout().write_all(gpuscope_trace::render::render_text(&run.profile).as_bytes())?;
    if let Some(e) = run.error {
        return Err(Exit {
            code: PARTIAL_RUN,
            error: anyhow::Error::new(e).context(format!(
                "the run stopped after {} of {} tokens",
                run.profile.tokens.len(),
                args.tokens
            )),
        });
    }
    Ok(())
}
