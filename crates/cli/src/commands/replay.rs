//! `gpuscope replay DIR`: the capture rebuilt on the chosen adapter; outputs compared
//! when the capture holds them, then the whole stream replayed (the profile report) or
//! each unique command benchmarked (`--per-command`).

use std::io::Write;

use anyhow::{anyhow, Context};
use gpuscope_runtime::capture::{
    bench_commands, compare_outputs, replay_stream, BenchOptions, Substitution,
};
use gpuscope_runtime::Gpu;
use gpuscope_trace::capture::{read_capture, render};

use crate::args::ReplayArgs;
use crate::exit::Exit;

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
    let mut out = std::io::stdout();
    let has_outputs = capture.data.as_ref().is_some_and(|d| !d.outputs.is_empty());
    let mut mismatch = None;
    if has_outputs {
        let cmp = compare_outputs(&gpu, &capture, &subs, args.tolerance)?;
        out.write_all(render::render_comparison(&cmp).as_bytes())?;
        out.write_all(b"\n")?;
        if let Some(m) = &cmp.first_mismatch {
            mismatch = Some(anyhow!(
                "replayed outputs differ from the recorded ones, first at step {} dispatch {} ({})",
                m.step,
                m.dispatch,
                m.label
            ));
        }
    }
    if args.per_command {
        let report = bench_commands(&gpu, &capture, &subs, &BenchOptions::default())?;
        if let Some(path) = &args.json {
            let json = serde_json::to_string_pretty(&report)?;
            std::fs::write(path, json + "\n")
                .with_context(|| format!("writing {}", path.display()))?;
            eprintln!(
                "gpuscope: per-command benchmark written to {}",
                path.display()
            );
        }
        out.write_all(render::render_per_command(&report).as_bytes())?;
    } else {
        let profile = replay_stream(&gpu, &capture, &subs)?;
        if let Some(path) = &args.json {
            gpuscope_trace::io::save_profile(path, &profile)
                .with_context(|| format!("writing the profile to {}", path.display()))?;
            eprintln!("gpuscope: replayed profile written to {}", path.display());
        }
        out.write_all(gpuscope_trace::render::render_text(&profile).as_bytes())?;
    }
    match mismatch {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}
