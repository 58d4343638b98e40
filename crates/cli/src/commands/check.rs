//! `gpuscope check`: arguments to [`gpuscope_model::check::CheckOptions`], the report to
//! stdout (and `--json`), exit code 5 when a threshold is crossed.

use std::io::Write;

use anyhow::{anyhow, Context};
use gpuscope_model::check::{check, Against, BreakAt, CheckOptions, Fault, Filter, Precision};
use gpuscope_model::{synthetic_weights, ModelWeights, Workload};
use gpuscope_report::analysis::divergence::verdict;
use gpuscope_runtime::{Gpu, GpuOptions, TimingRequest};
use gpuscope_trace::compare::Thresholds;
use gpuscope_trace::TimingMode;

use crate::args::CheckArgs;
use crate::exit::{Exit, CHECK_FAILED};

fn against(args: &CheckArgs) -> Against {
    let a = args.against.trim();
    match a.to_ascii_lowercase().as_str() {
        "cpu" => Against::Cpu,
        "serial" => Against::Serial,
        b @ ("vulkan" | "vk" | "gl" | "gles" | "opengl" | "metal" | "dx12" | "d3d12") => {
            Against::Gpu(GpuOptions {
                adapter: None,
                backend: Some(b.to_string()),
                timing: TimingRequest::Exactly(TimingMode::Off),
                validate: args.device.validate,
            })
        }
        _ => Against::Gpu(GpuOptions {
            adapter: Some(a.to_string()),
            backend: None,
            timing: TimingRequest::Exactly(TimingMode::Off),
            validate: args.device.validate,
        }),
    }
}

fn parse_fault(s: &str) -> Result<Fault, Exit> {
    match s.split_once('=') {
        Some(("corrupt", n)) => Ok(Fault::CorruptOutput {
            seq: n
                .trim()
                .parse()
                .map_err(|_| anyhow!("--inject-fault {s}: `{n}` is not a dispatch number"))?,
        }),
        _ => Err(anyhow!("--inject-fault {s}: expected corrupt=N").into()),
    }
}

pub fn run(args: &CheckArgs) -> Result<(), Exit> {
    let mut thresholds = Thresholds::default();
    for t in &args.threshold {
        thresholds.set(t).map_err(|e| anyhow!(e))?;
    }
    let filter = args
        .filter
        .as_deref()
        .map(Filter::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let break_at = args
        .break_at
        .as_deref()
        .map(BreakAt::parse)
        .transpose()
        .map_err(|e| anyhow!(e))?;
    let fault = args.inject_fault.as_deref().map(parse_fault).transpose()?;
    let precision = match args.precision.as_str() {
        "f64" => Precision::F64,
        _ => Precision::F32,
    };
    // The model: a file (and its tokenizer for --prompt) or a synthetic preset, named
    // as the session names it.
    let loaded;
    let synthetic: ModelWeights;
    let (workload, prompt) = match &args.model {
        Some(path) => {
            let (m, tokenizer, _) = super::common::load(path)?;
            loaded = m;
            let prompt = match &args.prompt {
                Some(p) => super::common::prompt_ids(&tokenizer, p, false)?,
                None => vec![args.first_token],
            };
            (Workload::file(&loaded, path), prompt)
        }
        None => {
            let (preset, format) = super::common::synthetic_shape(&args.preset, &args.weights)?;
            synthetic = synthetic_weights(&preset.config(), format, args.seed, preset.name());
            (Workload::synthetic(&synthetic), vec![args.first_token])
        }
    };
    let mut device = args.device.gpu_options();
    device.timing = TimingRequest::Exactly(TimingMode::Off);
    let gpu = Gpu::new(&device)?;
    let opts = CheckOptions {
        model: workload.name.clone(),
        prompt,
        tokens: args.tokens,
        max_ctx: args.tokens.max(1),
        against: against(args),
        precision,
        thresholds,
        serial: args.serial,
        validate: args.device.validate,
        trace_dir: args.trace_tensors.clone(),
        filter,
        break_at,
        fault,
        plan: Some(args.kernels.plan(&gpu)?),
    };
    eprintln!(
        "gpuscope: checking {} token(s) of {} dispatch by dispatch against {} ...",
        opts.tokens, opts.model, args.against
    );
    let run = check(&gpu, workload.weights, &opts)?;
    let text = gpuscope_report::render::render_check(&run.report);
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&run.report)?;
        gpuscope_trace::atomic::write_atomic(path, (json + "\n").as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("gpuscope: comparison written to {}", path.display());
    }
    std::io::stdout().write_all(text.as_bytes())?;
    if let Some(dir) = &run.trace_dir {
        eprintln!(
            "gpuscope: tensors written to {} (index.json lists them)",
            dir.display()
        );
    }
    if let Some(dir) = &run.capture_dir {
        eprintln!(
            "gpuscope: one-dispatch capture written to {}; run it alone with `gpuscope replay {}` (add --substitute SHADER=FILE.wgsl to try a fixed kernel)",
            dir.display(),
            dir.display()
        );
    }
    let v = verdict(&run.report);
    if !v.passed() {
        let d = v.first().expect("a failed verdict names a dispatch");
        let dc = &run.report.dispatches[d.dispatch];
        return Err(Exit {
            code: CHECK_FAILED,
            error: anyhow!(
                "check failed at dispatch {} (token {}, {}, op {}): {}",
                dc.seq,
                dc.token,
                dc.label,
                dc.op,
                d.reason
            ),
        });
    }
    Ok(())
}
