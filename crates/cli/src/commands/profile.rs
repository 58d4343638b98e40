use std::io::Write;
use std::time::Instant;

use anyhow::{anyhow, Context};
use gpuscope_model::{
    profile_decode_captured, synthetic_weights, CaptureRequest, Preset, ProfileOptions,
};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::capture::{CaptureRecorder, RecordError};
use gpuscope_runtime::Gpu;

use crate::args::ProfileArgs;
use crate::exit::{Exit, PARTIAL_RUN};

pub fn run(args: &ProfileArgs) -> Result<(), Exit> {
    let preset = Preset::parse(&args.preset).ok_or_else(|| {
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        anyhow!(
            "unknown preset `{}`: expected one of {}",
            args.preset,
            names.join(", ")
        )
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
        return Err(anyhow!(
            "--first-token {} is outside the vocabulary ({})",
            args.first_token,
            config.vocab
        )
        .into());
    }
    if let Some(r) = &args.capture_tokens {
        if r.end > args.tokens {
            return Err(anyhow!(
                "--capture-tokens {}..{}: only {} tokens are decoded",
                r.start,
                r.end,
                args.tokens
            )
            .into());
        }
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
    eprintln!(
        "gpuscope: weights made in {:.2} s; decoding {} tokens",
        made.elapsed().as_secs_f64(),
        args.tokens
    );
    let options = ProfileOptions {
        tokens: args.tokens,
        first_token: args.first_token,
        overhead: args.overhead,
        warmup: args.warmup,
        in_flight: args.in_flight as usize,
        prompt: Vec::new(),
    };
    let captured =
        profile_decode_captured(&gpu, &weights, &options, capture_request(args).as_ref())?;
    let run = captured.run;
    let capture_error = write_capture(args.capture.as_deref(), captured.capture);
    // Whatever happened, what was measured is written and shown before the error.
    if let Some(path) = &args.json {
        gpuscope_trace::io::save_profile(path, &run.profile)
            .with_context(|| format!("writing the profile to {}", path.display()))?;
        eprintln!("gpuscope: profile written to {}", path.display());
    }
    std::io::stdout().write_all(gpuscope_trace::render::render_text(&run.profile).as_bytes())?;
    if let (Some(e), None) = (capture_error, &run.error) {
        return Err(e.into());
    }
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

/// What `--capture`, `--capture-data` and `--capture-tokens` ask for.
pub(crate) fn capture_request(args: &ProfileArgs) -> Option<CaptureRequest> {
    args.capture.as_ref().map(|dir| CaptureRequest {
        name: capture_name(dir),
        data: args.capture_data,
        output_tokens: args.capture_tokens.clone(),
    })
}

/// Writes a recorded capture to `dir`; returns the error to report after the profile
/// (the profile is shown either way).
pub(crate) fn write_capture(
    dir: Option<&std::path::Path>,
    capture: Option<Result<CaptureRecorder, RecordError>>,
) -> Option<anyhow::Error> {
    let (dir, capture) = (dir?, capture?);
    match capture.and_then(|rec| rec.write(dir).map(|()| rec)) {
        Ok(rec) => {
            eprintln!(
                "gpuscope: capture of {} tokens written to {}",
                rec.steps(),
                dir.display()
            );
            None
        }
        Err(e) => Some(
            anyhow::Error::new(e).context(format!("recording the capture to {}", dir.display())),
        ),
    }
}

/// The capture's name: its directory's name (the prefix of the candle-style views).
pub(crate) fn capture_name(dir: &std::path::Path) -> String {
    dir.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| !n.is_empty() && n != "." && n != "..")
        .unwrap_or_else(|| "capture".into())
}
