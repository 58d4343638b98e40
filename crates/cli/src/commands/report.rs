use std::io::Write;
use std::path::Path;

use anyhow::Context;
use gpuscope_report::analysis::{analyze_with, choose_ceilings, CeilingsUsed, RooflineCeilings};
use gpuscope_report::render;
use gpuscope_report::render::perfetto::{GpuClock, PerfettoSummary};
use gpuscope_trace::{Ceilings, Profile};

use crate::args::{ReportArgs, ReportFormat};
use crate::exit::{Exit, USAGE};

/// Prints (or writes with `-o`) the report of a saved profile in the chosen format,
/// with the ceilings it carries, else this machine's cached ones when they are of the
/// same adapter and driver (the report says whose it used).
pub fn run(args: &ReportArgs) -> Result<(), Exit> {
    let usage = |error: anyhow::Error| Exit { code: USAGE, error };
    let format = ReportFormat::parse(&args.format).map_err(|e| usage(anyhow::anyhow!(e)))?;
    if format.needs_file() && args.output.is_none() {
        return Err(usage(anyhow::anyhow!(
            "--format {} writes a file: give it with -o FILE",
            format.name()
        )));
    }
    let profile = gpuscope_trace::io::load_profile(&args.file)?;
    let local = super::ceilings::cached(&profile.adapter, false);
    let used = choose_ceilings(&profile, local.as_ref().map(|(c, p)| (c, p.as_str())));
    if matches!(used, CeilingsUsed::Absent { .. })
        && !matches!(format, ReportFormat::Json | ReportFormat::Compact)
    {
        // Say what was wrong with the cache only when it mattered.
        super::ceilings::cached(&profile.adapter, true);
    }
    let result = match format {
        ReportFormat::Perfetto => {
            let path = args.output.as_deref().expect("checked above");
            write_trace(path, &profile, used.ceilings()).map(|_| ())
        }
        ReportFormat::Json => {
            let json = gpuscope_trace::io::profile_to_json(&profile)?;
            emit(args.output.as_deref(), json.as_bytes(), format)
        }
        ReportFormat::Compact => {
            let bytes = gpuscope_trace::compact::encode(&profile)?;
            emit(args.output.as_deref(), &bytes, format)
        }
        _ => {
            let analysis = analyze_with(&profile, used);
            let text = match format {
                ReportFormat::Md => render::render_analysis_markdown(&profile, &analysis),
                ReportFormat::Html => render::render_analysis_html(&profile, &analysis),
                _ => render::render_analysis_text(&profile, &analysis),
            };
            let r = emit(args.output.as_deref(), text.as_bytes(), format);
            std::mem::forget(analysis);
            r
        }
    };
    // A long profile holds millions of small allocations; the process is about to
    // exit and the OS takes the memory back at once, so they are not freed one by one.
    std::mem::forget(profile);
    result
}

/// Writes `bytes` to `output` atomically, else to stdout.
fn emit(output: Option<&Path>, bytes: &[u8], format: ReportFormat) -> Result<(), Exit> {
    match output {
        Some(path) => {
            gpuscope_trace::atomic::write_atomic(path, bytes).with_context(|| {
                format!("writing the {} report to {}", format.name(), path.display())
            })?;
            eprintln!(
                "gpuscope: {} report written to {}",
                format.name(),
                path.display()
            );
        }
        None => std::io::stdout().write_all(bytes)?,
    }
    Ok(())
}

/// Writes the Perfetto trace of `profile` to `path` (atomically) and says what it
/// holds, and how the GPU clock was placed.
pub fn write_trace(
    path: &Path,
    profile: &Profile,
    ceilings: Option<&Ceilings>,
) -> Result<PerfettoSummary, Exit> {
    let ceilings = match ceilings {
        Some(c) => Some(c.clone()),
        None => choose_ceilings(profile, None).ceilings().cloned(),
    };
    let roofline = ceilings.as_ref().and_then(RooflineCeilings::from);
    let summary = render::perfetto::save_perfetto(path, profile, roofline.as_ref())
        .with_context(|| format!("writing the Perfetto trace to {}", path.display()))?;
    let clock = match &summary.clock {
        GpuClock::Aligned(a) => format!(
            "GPU clock aligned to the CPU's (offset {} ns{})",
            a.offset_ns,
            a.slack_ns
                .map_or(String::new(), |s| format!(", within {s} ns"))
        ),
        GpuClock::Unaligned(why) => format!("GPU clock not aligned: {why}"),
        GpuClock::None => "no GPU timestamps".into(),
    };
    eprintln!(
        "gpuscope: Perfetto trace written to {} ({} GPU slices, {} CPU slices, {} flows, {} counter samples; {clock}); open it at ui.perfetto.dev",
        path.display(),
        summary.gpu_slices,
        summary.cpu_slices,
        summary.flows,
        summary.counter_samples
    );
    Ok(summary)
}
