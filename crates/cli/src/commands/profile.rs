use std::io::Write;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{anyhow, Context};
use gpuscope_model::{
    profile_decode_captured, synthetic_weights, CaptureRequest, CapturedRun, ModelError, Preset,
    ProfileOptions,
};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::capture::{CaptureRecordError, CaptureRecorder};
use gpuscope_runtime::Gpu;
use gpuscope_trace::capture::check_target;

use crate::args::{on_existing, ProfileArgs};
use crate::exit::{Exit, PARTIAL_RUN};
use crate::interrupt::{Caught, Interrupt};

/// The preset named `name`, or an error listing the known ones.
pub(crate) fn preset(name: &str) -> anyhow::Result<Preset> {
    Preset::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Preset::ALL.iter().map(|p| p.name()).collect();
        anyhow!(
            "unknown preset `{name}`: expected one of {}",
            names.join(", ")
        )
    })
}

/// `--preset` and `--weights` of a synthetic model.
pub(crate) fn synthetic_shape(
    preset_name: &str,
    weights: &str,
) -> Result<(Preset, WeightFormat), Exit> {
    let p = preset(preset_name)?;
    let format: WeightFormat = weights
        .parse()
        .map_err(|e| anyhow!("--weights {weights}: {e}"))?;
    Ok((p, format))
}

pub fn run(args: &ProfileArgs) -> Result<(), Exit> {
    let (preset, format) = synthetic_shape(&args.preset, &args.weights)?;
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
    check_outputs(args)?;
    let gpu = Gpu::new(&args.device.gpu_options())?;
    let plan = args.kernels.plan(&gpu)?;
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
        prompt: synthetic_prompt(args.prompt_tokens.unwrap_or(0), config.vocab),
        plan: Some(plan),
        planted_slowdown: args.plant_slowdown.clone(),
        ..Default::default()
    };
    let captured = decode(args, &gpu, options, |options| {
        profile_decode_captured(&gpu, &weights, options, capture_request(args).as_ref())
    })?;
    finish(args, captured)
}

/// Runs a profile's decode with an interrupt handler installed (the run stops at the
/// next token and keeps what it measured), progress and the `--fault` hook beside it.
pub(crate) fn decode(
    args: &ProfileArgs,
    gpu: &Gpu,
    mut options: ProfileOptions,
    run: impl FnOnce(&ProfileOptions) -> Result<CapturedRun, ModelError>,
) -> Result<(CapturedRun, Option<Caught>), Exit> {
    let interrupt = Interrupt::install()?;
    let measured = Arc::new(AtomicU32::new(0));
    options.stop = Some(interrupt.flag());
    options.progress = Some(measured.clone());
    let captured =
        crate::watch::decoding(gpu, args.tokens, &measured, &interrupt, args.fault, || {
            run(&options)
        })?;
    Ok((captured, interrupt.caught()))
}

/// Writes what a profile run measured (the capture, marked incomplete when the run
/// stopped early; `--json`, `--compact`; the report), then exits as the run ended: 4
/// after a GPU fault, 128 + the signal after an interrupt, 1 when the capture could not
/// be written.
pub(crate) fn finish(
    args: &ProfileArgs,
    (captured, caught): (CapturedRun, Option<Caught>),
) -> Result<(), Exit> {
    let mut run = captured.run;
    let mut capture = captured.capture;
    if let (Some(why), Some(Ok(rec))) = (&run.profile.incomplete, &mut capture) {
        if let Err(e) = rec.mark_incomplete(why) {
            capture = Some(Err(e));
        }
    }
    let capture_error = write_capture(args.capture.as_deref(), args.force, capture);
    // Whatever happened, what was measured is written and shown before the error.
    save_and_print(args, &mut run.profile)?;
    let measured = format!(
        "after {} of {} tokens",
        run.profile.tokens.len(),
        args.tokens
    );
    let capture_error = match capture_error {
        // The run's own end is the error; the capture's is said on its own line.
        Some(c) if run.error.is_some() || caught.is_some() => {
            eprintln!(
                "gpuscope: no capture written: {}",
                crate::exit::one_line(&c)
            );
            None
        }
        other => other,
    };
    if let Some(e) = run.error {
        return Err(Exit {
            code: PARTIAL_RUN,
            error: anyhow::Error::new(e).context(format!("the run stopped {measured}")),
        });
    }
    if let Some(caught) = caught {
        return Err(caught.exit(&format!(
            "stopped {measured}; what was measured is written and shown"
        )));
    }
    match capture_error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Embeds this machine's measured ceilings, writes `--json` / `--compact`, and prints
/// the report.
pub(crate) fn save_and_print(
    args: &ProfileArgs,
    profile: &mut gpuscope_trace::Profile,
) -> Result<(), Exit> {
    super::ceilings::embed(profile);
    if let Some(path) = &args.json {
        gpuscope_trace::io::save_profile(path, profile)?;
        eprintln!("gpuscope: profile written to {}", path.display());
    }
    if let Some(path) = &args.compact {
        gpuscope_trace::compact::save(path, profile)?;
        eprintln!("gpuscope: compact profile written to {}", path.display());
    }
    if let Some(path) = &args.trace {
        super::report::write_trace(path, profile, None)?;
    }
    std::io::stdout().write_all(gpuscope_report::render::render_text(profile).as_bytes())?;
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

/// Checks before a run that `--capture` may be written (an existing capture needs
/// `--force`; a directory of the user's is never written among). Output files were
/// checked as the command line was read (`args::output_file`).
pub(crate) fn check_outputs(args: &ProfileArgs) -> Result<(), Exit> {
    if let Some(dir) = &args.capture {
        check_target(dir, on_existing(args.force)).context("--capture")?;
    }
    Ok(())
}

/// Writes a recorded capture to `dir`; returns the error to report after the profile
/// (the profile is shown either way).
pub(crate) fn write_capture(
    dir: Option<&std::path::Path>,
    force: bool,
    capture: Option<Result<CaptureRecorder, CaptureRecordError>>,
) -> Option<anyhow::Error> {
    let (dir, capture) = (dir?, capture?);
    match capture.and_then(|rec| rec.write(dir, on_existing(force)).map(|()| rec)) {
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

/// `n` prompt token ids spread over the vocabulary (never 0, which some tokenizers keep
/// for padding), the same for every run.
fn synthetic_prompt(n: u32, vocab: u32) -> Vec<u32> {
    (0..n)
        .map(|i| 1 + (u64::from(i) * 7919 % u64::from(vocab - 1)) as u32)
        .collect()
}
