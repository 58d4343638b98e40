//! `gpuscope replay DIR`: the capture rebuilt on the chosen adapter; outputs compared
//! when the capture holds them, then the whole stream replayed (the profile report) or
//! each unique command benchmarked (`--per-command`, and always for a capture of one
//! dispatch, such as `check --break-at` writes: a decode report of one step of one
//! dispatch would print tokens per second of nothing). Outputs that differ exit 5, the
//! code of a negative verdict, apart from bad input's 1.

use std::io::Write;

use anyhow::{anyhow, Context};
use gpuscope_report::render::capture as render;
use gpuscope_runtime::capture::{
    bench_commands, compare_outputs, replay_limits, replay_stream, BenchOptions, ReplayProgress,
    Substitution,
};
use gpuscope_runtime::Gpu;
use gpuscope_trace::atomic::write_atomic;
use gpuscope_trace::capture::{check_budget, read_capture, Capture};

use crate::args::ReplayArgs;
use crate::exit::Exit;
use crate::watch::watchdog;

pub fn run(args: &ReplayArgs) -> Result<(), Exit> {
    let capture = read_capture(&args.dir)?;
    let subs = args
        .substitute
        .iter()
        .map(|s| Substitution::from_arg(s))
        .collect::<Result<Vec<_>, _>>()?;
    // Refuse a mismatching kernel before opening a device.
    for s in &subs {
        gpuscope_runtime::capture::replay::check_substitution(&capture, s)?;
    }
    let gpu = Gpu::new(&args.device.gpu_options())?;
    let has_outputs = capture.data.as_ref().is_some_and(|d| !d.outputs.is_empty());
    // Every size and count the capture claims, checked before anything is allocated.
    check_budget(&capture, &replay_limits(&gpu, args.max_memory), has_outputs)
        .with_context(|| format!("replaying {}", args.dir.display()))?;
    if let Some(why) = &capture.manifest.incomplete {
        eprintln!(
            "gpuscope: the capture is incomplete ({why}): replaying the {} steps it holds",
            capture.stream.steps.len()
        );
    }
    let progress = ReplayProgress::default();
    watchdog(&progress, args.timeout, || {
        replay(args, &gpu, &capture, &subs, has_outputs, &progress)
    })
}

fn replay(
    args: &ReplayArgs,
    gpu: &Gpu,
    capture: &Capture,
    subs: &[Substitution],
    has_outputs: bool,
    progress: &ReplayProgress,
) -> Result<(), Exit> {
    let mut out = std::io::stdout();
    let mut mismatch = None;
    if has_outputs {
        let cmp = compare_outputs(gpu, capture, subs, args.tolerance, progress)?;
        out.write_all(render::render_comparison(&cmp).as_bytes())?;
        out.write_all(b"\n")?;
        if let Some(m) = &cmp.first_mismatch {
            mismatch = Some(Exit {
                code: crate::exit::CHECK_FAILED,
                error: anyhow!(
                    "replayed outputs differ from the recorded ones, first at step {} dispatch {} ({})",
                    m.step,
                    m.dispatch,
                    m.label
                ),
            });
        }
    }
    if args.per_command || capture.stream.dispatch_count() == 1 {
        let report = bench_commands(gpu, capture, subs, &BenchOptions::default(), progress)?;
        if let Some(path) = &args.json {
            let json = serde_json::to_string_pretty(&report)?;
            write_atomic(path, (json + "\n").as_bytes())?;
            eprintln!(
                "gpuscope: per-command benchmark written to {}",
                path.display()
            );
        }
        out.write_all(render::render_per_command(&report).as_bytes())?;
    } else {
        let mut profile = replay_stream(gpu, capture, subs, progress)?;
        if let Some(why) = &capture.manifest.incomplete {
            profile.incomplete = Some(format!("replay of an incomplete capture: {why}"));
        }
        super::ceilings::embed(&mut profile);
        if let Some(path) = &args.json {
            gpuscope_trace::io::save_profile(path, &profile)?;
            eprintln!("gpuscope: replayed profile written to {}", path.display());
        }
        out.write_all(gpuscope_report::render::render_text(&profile).as_bytes())?;
    }
    match mismatch {
        Some(e) => Err(e),
        None => Ok(()),
    }
}
