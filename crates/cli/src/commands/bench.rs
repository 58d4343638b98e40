//! `gpuscope bench`: llama-bench's tests (pp, tg, pg) with its options and output
//! fields, on the GPU decoder (see `gpuscope_model::bench` for what each test times).

use std::io::Write;
use std::time::SystemTime;

use anyhow::anyhow;
use gpuscope_model::{
    bench_decoder, load_gguf, run_bench_test, synthetic_weights, BenchTest, ModelWeights,
    PREFILL_BATCH,
};
use gpuscope_report::render::bench::{
    render_bench_csv, render_bench_json, render_bench_jsonl, render_bench_md,
};
use gpuscope_runtime::Gpu;
use gpuscope_trace::bench::{BenchContext, BenchRecord};
use indicatif::{ProgressBar, ProgressStyle};

use crate::args::{limits, BenchArgs, BenchFormat, KernelArgs};
use crate::exit::Exit;
use crate::interrupt::Interrupt;

/// llama-bench's defaults for `-p` and `-n` when they are not given.
const DEFAULT_N_PROMPT: u32 = 512;
const DEFAULT_N_GEN: u32 = 128;

/// The tests in llama-bench's order: every pp, every tg, every pg; zeros skipped.
fn tests(args: &BenchArgs) -> Vec<BenchTest> {
    let list = |given: &[Vec<u32>], default: u32| -> Vec<u32> {
        if given.is_empty() {
            vec![default]
        } else {
            given.concat()
        }
    };
    let pp = list(&args.n_prompt, DEFAULT_N_PROMPT)
        .into_iter()
        .map(|n| BenchTest {
            n_prompt: n,
            n_gen: 0,
        });
    let tg = list(&args.n_gen, DEFAULT_N_GEN)
        .into_iter()
        .map(|n| BenchTest {
            n_prompt: 0,
            n_gen: n,
        });
    let pg = args.pg.iter().map(|&(p, g)| BenchTest {
        n_prompt: p,
        n_gen: g,
    });
    pp.chain(tg)
        .chain(pg)
        .filter(|t| t.n_prompt + t.n_gen > 0)
        .collect()
}

/// The weights, what describes them, and the token a prompt starts with (BOS).
fn model(args: &BenchArgs) -> Result<(ModelWeights, BenchContext, u32), Exit> {
    if let Some(path) = &args.model {
        let m = load_gguf(path).map_err(|e| anyhow!("loading {}: {e}", path.display()))?;
        for w in &m.info.warnings {
            eprintln!("gpuscope: warning: {w}");
        }
        let bos = m
            .gguf
            .file
            .metadata
            .get_u64("tokenizer.ggml.bos_token_id")
            .map_or(0, |b| b as u32);
        let ctx = context(
            &m.weights,
            &m.info.architecture,
            &path.display().to_string(),
            "mmap",
        );
        return Ok((m.weights, ctx, bos));
    }
    let preset = super::common::preset(&args.preset)?;
    let format = args
        .weights
        .parse()
        .map_err(|e| anyhow!("--weights {}: {e}", args.weights))?;
    let weights = synthetic_weights(&preset.config(), format, args.seed, preset.name());
    // The architecture as a file of these weights names it (`gpuscope synth`), as
    // llama-bench prints it for that file.
    let ctx = context(
        &weights,
        gpuscope_model::synth::arch_name(&weights.config),
        &format!("preset:{}", preset.name()),
        "none",
    );
    Ok((weights, ctx, 1))
}

/// What describes the model (the device's fields are filled in once it is open).
fn context(w: &ModelWeights, arch: &str, filename: &str, load_mode: &str) -> BenchContext {
    let params = w.config.params();
    let size = match params {
        n if n >= 1_000_000_000 => format!("{:.1}B", n as f64 / 1e9),
        n if n >= 1_000_000 => format!("{:.0}M", n as f64 / 1e6),
        n => format!("{:.0}K", n as f64 / 1e3),
    };
    // The most common format, as llama.cpp names a file by its main type.
    let summary = w.format_summary();
    let main_format = summary
        .split([' ', ','])
        .next()
        .unwrap_or("")
        .to_uppercase();
    BenchContext {
        build_commit: env!("GPUSCOPE_BUILD_COMMIT").to_string(),
        build_number: env!("GPUSCOPE_BUILD_NUMBER").parse().unwrap_or(0),
        cpu_info: cpu_info(),
        gpu_info: String::new(),
        backends: String::new(),
        model_filename: filename.to_string(),
        model_type: format!("{arch} {size} {main_format}"),
        model_size: w.weight_bytes(),
        model_n_params: params,
        n_batch: PREFILL_BATCH,
        n_gpu_layers: w.config.n_layers + 1,
        devices: String::new(),
        load_mode: load_mode.to_string(),
    }
}

/// The CPU's model name (Linux), as llama-bench's `cpu_info`.
fn cpu_info() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_default()
}

/// The warm-up each test gets, in words.
fn warmup_said(args: &BenchArgs) -> &'static str {
    if args.no_warmup {
        "no warm-up"
    } else if args.full_warmup {
        "each after a warm-up run of the whole test"
    } else {
        "each after a warm-up of the prompt and one token (as llama-bench)"
    }
}

/// A note on stderr for each test whose first repetition ran slower than the others
/// ([`BenchRecord::slow_first`]): its mean includes a GPU not yet at its steady speed.
fn note_slow_first(records: &[BenchRecord], args: &BenchArgs) {
    for r in records {
        if let Some((first, median)) = r.slow_first() {
            eprintln!(
                "gpuscope: note: {}: repetition 1 ran at {first:.1} tok/s, the others at {median:.1} (median); the mean includes it. The GPU was not yet at its steady speed after {} (on NVIDIA, its clock still rising from idle after the load: docs/bench.md); compare engines on every repetition (-o jsonl) or --full-warmup",
                r.name(),
                if args.full_warmup || args.no_warmup {
                    "the warm-up asked for"
                } else {
                    "llama-bench's warm-up (the prompt and one token)"
                }
            );
        }
    }
}

/// One configuration of a `bench` run: its `--kernel` choices, and the label naming the
/// listed ones (`None` where nothing was listed).
type Configuration = (Vec<String>, Option<String>);

/// `--kernel` entries with lists (`attention=groups,split`) expanded into
/// configurations, every combination in the order given (llama-bench's parameter
/// instances, as `-fa 0,1`); each with its label naming the listed choices, `None`
/// where nothing was listed.
fn configurations(kernels: &[String]) -> Result<Vec<Configuration>, Exit> {
    // Each entry's choices: `op=v` per listed value, else the entry itself (a malformed
    // one is refused by name when the plan is made).
    let choices: Vec<Vec<String>> = kernels
        .iter()
        .map(|k| match k.split_once('=') {
            Some((op, list)) if list.contains(',') => {
                list.split(',').map(|v| format!("{op}={v}")).collect()
            }
            _ => vec![k.clone()],
        })
        .collect();
    // Counted before any is made: lists multiply.
    let count = choices.iter().try_fold(1u64, |n, c| {
        n.checked_mul(c.len() as u64)
            .filter(|&n| n <= limits::MAX_CONFIGURATIONS)
    });
    if count.is_none() {
        return Err(Exit {
            code: 2,
            error: anyhow!(
                "--kernel: the lists make more than {} configurations to compare",
                limits::MAX_CONFIGURATIONS
            ),
        });
    }
    let mut out: Vec<(Vec<String>, Vec<String>)> = vec![(Vec::new(), Vec::new())];
    for c in &choices {
        let listed = c.len() > 1;
        out = out
            .into_iter()
            .flat_map(|(ks, labels)| {
                c.iter().map(move |choice| {
                    let (mut ks, mut labels) = (ks.clone(), labels.clone());
                    ks.push(choice.clone());
                    if listed {
                        labels.push(choice.clone());
                    }
                    (ks, labels)
                })
            })
            .collect();
    }
    let listed = choices.iter().any(|c| c.len() > 1);
    Ok(out
        .into_iter()
        .map(|(ks, labels)| (ks, listed.then(|| labels.join(" "))))
        .collect())
}

/// What every configuration's run shares.
struct Measure<'a> {
    tests: &'a [BenchTest],
    args: &'a BenchArgs,
    first_token: u32,
    progress: &'a ProgressBar,
    interrupt: &'a Interrupt,
}

impl Measure<'_> {
    /// Every test with `plan`'s kernels, its records pushed (labelled `variant`);
    /// `false` once interrupted (the test under way kept with the repetitions it has).
    fn configuration(
        &self,
        gpu: &Gpu,
        weights: &ModelWeights,
        plan: gpuscope_model::KernelPlan,
        variant: Option<String>,
        warmups: u32,
        records: &mut Vec<BenchRecord>,
    ) -> Result<bool, Exit> {
        let mut decoder = bench_decoder(gpu, weights, self.tests, plan)?;
        let settings = decoder.decoder().settings();
        let said: Vec<String> = settings.iter().map(|(k, v)| format!("{k} = {v}")).collect();
        eprintln!("gpuscope: kernels: {}", said.join("; "));
        let decode_fused = settings
            .get("attention")
            .is_some_and(|a| !a.starts_with("unfused"));
        let args = self.args;
        for &test in self.tests {
            if self.interrupt.caught().is_some() {
                return Ok(false);
            }
            let mut record = BenchRecord {
                n_prompt: test.n_prompt,
                n_gen: test.n_gen,
                test_time: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
                samples_ns: Vec::new(),
                // A prompt runs the batched attention kernel, always fused.
                flash_attn: test.n_gen == 0 || decode_fused,
                variant: variant.clone(),
            };
            self.progress.set_message(record.name());
            // llama-bench warms up with the whole prompt and one generated token;
            // `--full-warmup` with the whole test.
            if warmups > 0 {
                let warm = BenchTest {
                    n_prompt: test.n_prompt,
                    n_gen: if args.full_warmup {
                        test.n_gen
                    } else {
                        test.n_gen.min(1)
                    },
                };
                run_bench_test(&mut decoder, warm, self.first_token, args.seed)?;
                self.progress.inc(1);
            }
            for rep in 0..args.repetitions {
                let seed = args.seed.wrapping_add(rep as u64 + 1);
                record
                    .samples_ns
                    .push(run_bench_test(&mut decoder, test, self.first_token, seed)?);
                self.progress.inc(1);
                if self.interrupt.caught().is_some() {
                    records.push(record);
                    return Ok(false);
                }
            }
            records.push(record);
        }
        Ok(true)
    }
}

pub fn run(args: &BenchArgs) -> Result<(), Exit> {
    if !args.sweep.is_empty() || !args.experiment.is_empty() {
        return super::sweep::run(args);
    }
    if matches!(args.output, BenchFormat::Html) {
        return Err(anyhow!("-o html draws sweeps (--sweep, --experiment); llama-bench's tests print md, csv, json or jsonl").into());
    }
    let tests = tests(args);
    if tests.is_empty() {
        return Err(anyhow!("nothing to run: every -p, -n and -pg is 0").into());
    }
    let configs = configurations(&args.kernels.kernels)?;
    let (weights, mut ctx, first_token) = model(args)?;
    let gpu = Gpu::new(&super::common::untimed_gpu_options(&args.device))?;
    // An interrupt ends the run between repetitions: the tests measured so far are
    // printed, then the exit says so.
    let interrupt = Interrupt::install()?;
    let adapter = gpu.adapter_desc();
    ctx.gpu_info = adapter.name.clone();
    ctx.backends = format!("wgpu-{}", adapter.backend);
    ctx.devices = args.device.adapter.clone().unwrap_or_else(|| "auto".into());
    eprintln!(
        "gpuscope: bench {} on {} ({}), GPU timing {}; {} tests x {} repetitions, {}",
        ctx.model_type,
        adapter.name,
        adapter.backend,
        gpu.timing(),
        tests.len(),
        args.repetitions,
        warmup_said(args)
    );
    let total_tests = configs.len() * tests.len();
    let warmups = if args.no_warmup { 0 } else { 1 };
    let runs = total_tests * (args.repetitions + warmups) as usize;
    let progress = ProgressBar::new(runs as u64).with_style(
        ProgressStyle::with_template("{msg:>20} [{bar:30}] {pos}/{len} runs, {elapsed}")
            .expect("a valid template")
            .progress_chars("=> "),
    );
    // Every configuration's plan before any measurement: a bad choice is refused at once.
    let plans = configs
        .into_iter()
        .map(|(kernels, variant)| {
            let chosen = KernelArgs {
                kernels,
                fuse: args.kernels.fuse.clone(),
            };
            Ok((chosen.plan(&gpu)?, variant))
        })
        .collect::<Result<Vec<_>, Exit>>()?;
    let mut records = Vec::new();
    // A configuration that fails mid-run (its graph refused) ends the run after the
    // records measured so far are printed.
    let mut failed = None;
    let run = Measure {
        tests: &tests,
        args,
        first_token,
        progress: &progress,
        interrupt: &interrupt,
    };
    for (plan, variant) in plans {
        match run.configuration(&gpu, &weights, plan, variant, warmups, &mut records) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => {
                failed = Some(e);
                break;
            }
        }
    }
    progress.finish_and_clear();
    note_slow_first(&records, args);
    let out = match args.output {
        BenchFormat::Md => render_bench_md(&ctx, &records),
        BenchFormat::Csv => render_bench_csv(&ctx, &records),
        BenchFormat::Json => render_bench_json(&ctx, &records),
        BenchFormat::Jsonl => render_bench_jsonl(&ctx, &records),
        BenchFormat::Html => unreachable!("refused above"),
    };
    std::io::stdout().write_all(out.as_bytes())?;
    if let Some(e) = failed {
        return Err(e);
    }
    match interrupt.caught() {
        Some(caught) => Err(caught.exit(&format!(
            "stopped after {} of {} tests; the repetitions measured are printed",
            records.len(),
            total_tests
        ))),
        None => Ok(()),
    }
}
