//! `gpuscope run MODEL.gguf`: generate text from a real model, printing it as it comes,
//! then load time and prompt-processing and generation speed.
//!
//! On the GPU a [`gpuscope_model::session`] generates (the prompt batched where the
//! kernel plan can, steps in flight, the capture owned by the session); `--cpu` steps
//! the CPU reference one token at a time. The printed method says how the prompt went.

use std::io::Write;
use std::time::Instant;

use gpuscope_model::session::{Generation, GenerationRequest, Interrupted, Workload};
use gpuscope_model::{CpuDecoder, Flow, LoadedModel, Tokenizer};
use gpuscope_runtime::Gpu;
use gpuscope_trace::stats::percentile_f64;

use super::common;
use crate::args::RunArgs;
use crate::exit::{Exit, PARTIAL_RUN};
use crate::interrupt::Interrupt;

pub fn run(args: &RunArgs) -> Result<(), Exit> {
    let capture = common::capture_target(
        args.capture.as_deref(),
        args.force,
        args.capture_data,
        args.capture_tokens.clone(),
    )?;
    let (model, tokenizer, load_secs) = common::load(&args.model)?;
    let prompt = common::prompt_ids(&tokenizer, &args.prompt, args.chat)?;
    common::warn_past_context(&model, prompt.len(), args.tokens);
    if args.cpu {
        return run_cpu(args, &model, &tokenizer, &prompt, load_secs);
    }
    let interrupt = Interrupt::install()?;
    let setup = Instant::now();
    let gpu = Gpu::new(&common::untimed_gpu_options(&args.device))?;
    let request = GenerationRequest {
        prompt: &prompt,
        tokens: args.tokens,
        plan: args.kernels.plan(&gpu)?,
        capture,
        stop: Some(interrupt.flag()),
    };
    let a = gpu.adapter_desc();
    eprintln!("gpuscope: on {} ({})", a.name, a.backend);
    let gpu_setup_secs = setup.elapsed().as_secs_f64();
    let mut printer = Printer::new(&tokenizer, args.ignore_eos);
    let generation = gpuscope_model::generate(
        &gpu,
        &Workload::file(&model, &args.model),
        request,
        |token| printer.take(token),
    )?;
    printer.end()?;
    report(
        args,
        &prompt,
        load_secs,
        gpu_setup_secs,
        generation,
        printer,
        &interrupt,
    )
}

/// Prints each token as it comes, until the end of text; keeps its I/O error and the
/// intervals between tokens.
struct Printer<'t> {
    tokenizer: &'t Tokenizer,
    stream: gpuscope_model::tokenizer::TextStream<'t>,
    ignore_eos: bool,
    stop: Option<&'static str>,
    io_error: Option<std::io::Error>,
    intervals: TokenIntervals,
}

impl<'t> Printer<'t> {
    fn new(tokenizer: &'t Tokenizer, ignore_eos: bool) -> Printer<'t> {
        Printer {
            tokenizer,
            stream: tokenizer.stream(),
            ignore_eos,
            stop: None,
            io_error: None,
            intervals: TokenIntervals::new(Instant::now()),
        }
    }

    /// Prints `token` unless it ends the text; says whether to go on.
    fn take(&mut self, token: u32) -> Flow {
        if self.tokenizer.is_end(token) && !self.ignore_eos {
            self.stop = Some("end-of-sequence token");
            return Flow::Stop;
        }
        let printed = self
            .stream
            .push(token)
            .map_err(std::io::Error::other)
            .and_then(|text| {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())?;
                out.flush()
            });
        match printed {
            Ok(()) => {
                self.intervals.tick();
                Flow::Continue
            }
            Err(e) => {
                self.io_error = Some(e);
                Flow::Stop
            }
        }
    }

    fn end(&mut self) -> Result<(), Exit> {
        if let Some(e) = self.io_error.take() {
            return Err(e.into());
        }
        writeln!(std::io::stdout().lock())?;
        Ok(())
    }
}

/// The speeds, the capture's outcome, and the exit the run ended with.
fn report(
    args: &RunArgs,
    prompt: &[u32],
    load_secs: f64,
    gpu_setup_secs: f64,
    g: Generation,
    printer: Printer,
    interrupt: &Interrupt,
) -> Result<(), Exit> {
    let capture_error = common::capture_result(g.capture);
    if g.interrupted == Some(Interrupted::DuringPrompt) {
        if let Some(caught) = interrupt.caught() {
            return Err(caught.exit("stopped during the prompt, before any token was generated"));
        }
    }
    print_speeds(
        load_secs,
        gpu_setup_secs + g.setup_ns as f64 / 1e9,
        "GPU",
        prompt.len(),
        g.prompt_ns as f64 / 1e9,
        &g.method,
        g.generated,
        g.generation_ns as f64 / 1e9,
        &printer.intervals,
        printer.stop,
    );
    if let Some(e) = g.error {
        return Err(Exit {
            code: PARTIAL_RUN,
            error: anyhow::Error::new(e)
                .context(format!("generation stopped after {} tokens", g.generated)),
        });
    }
    if let (Some(_), Some(caught)) = (g.interrupted, interrupt.caught()) {
        return Err(caught.exit(&format!(
            "stopped after {} of {} tokens",
            g.generated, args.tokens
        )));
    }
    match capture_error {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// `run --cpu`: the CPU reference, one token per step.
fn run_cpu(
    args: &RunArgs,
    model: &LoadedModel,
    tokenizer: &Tokenizer,
    prompt: &[u32],
    load_secs: f64,
) -> Result<(), Exit> {
    let interrupt = Interrupt::install()?;
    let setup = Instant::now();
    let mut d = CpuDecoder::new(
        &model.weights,
        (prompt.len() as u32).saturating_add(args.tokens),
    )?;
    let setup_secs = setup.elapsed().as_secs_f64();
    let pp_start = Instant::now();
    let mut next = 0;
    for &t in prompt {
        if let Some(caught) = interrupt.caught() {
            return Err(caught.exit("stopped during the prompt, before any token was generated"));
        }
        next = d.step(t)?.token;
    }
    let pp_secs = pp_start.elapsed().as_secs_f64();
    let mut out = std::io::stdout().lock();
    let mut stream = tokenizer.stream();
    let tg_start = Instant::now();
    let mut intervals = TokenIntervals::new(tg_start);
    let mut generated = 0u32;
    let mut stop = None;
    loop {
        if tokenizer.is_end(next) && !args.ignore_eos {
            stop = Some("end-of-sequence token");
            break;
        }
        out.write_all(stream.push(next)?.as_bytes())?;
        out.flush()?;
        generated += 1;
        intervals.tick();
        if generated >= args.tokens || interrupt.caught().is_some() {
            break;
        }
        next = d
            .step(next)
            .map_err(|e| Exit {
                code: PARTIAL_RUN,
                error: anyhow::Error::new(e)
                    .context(format!("generation stopped after {generated} tokens")),
            })?
            .token;
    }
    writeln!(out)?;
    let tg_secs = tg_start.elapsed().as_secs_f64();
    print_speeds(
        load_secs,
        setup_secs,
        "CPU reference",
        prompt.len(),
        pp_secs,
        "one token per step",
        generated,
        tg_secs,
        &intervals,
        stop,
    );
    match interrupt.caught() {
        Some(caught) => Err(caught.exit(&format!(
            "stopped after {generated} of {} tokens",
            args.tokens
        ))),
        None => Ok(()),
    }
}

#[allow(clippy::too_many_arguments)]
fn print_speeds(
    load_secs: f64,
    setup_secs: f64,
    backend: &str,
    prompt_tokens: usize,
    pp_secs: f64,
    method: &str,
    generated: u32,
    tg_secs: f64,
    intervals: &TokenIntervals,
    stop: Option<&str>,
) {
    let rate = |n: usize, s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    eprintln!(
        "gpuscope: load {:.2} s (file {:.2} s, {backend} setup {:.2} s)",
        load_secs + setup_secs,
        load_secs,
        setup_secs
    );
    eprintln!(
        "gpuscope: prompt processing {prompt_tokens} tokens in {pp_secs:.2} s: {:.1} tok/s ({method})",
        rate(prompt_tokens, pp_secs),
    );
    // Each generated token but the first cost one decode step (the first came from the
    // prompt's last step), so the rate counts the steps taken.
    let steps = generated.saturating_sub(1) as usize;
    eprintln!(
        "gpuscope: generation {generated} tokens in {tg_secs:.2} s: {:.1} tok/s ({steps} decode steps, wall clock){}",
        rate(steps, tg_secs),
        stop.map(|s| format!("; stopped at the {s}")).unwrap_or_default()
    );
    if let Some(line) = intervals.summary() {
        eprintln!("gpuscope: {line}");
    }
}

/// When each generated token was printed: the wall-clock rate above counts every pause
/// (a GPU still raising its clocks, the process descheduled), the median interval
/// between tokens does not, so it is the figure to set beside `profile`'s steady rate
/// (its median token), and the longest interval says where a slow run lost its time.
struct TokenIntervals {
    last: Instant,
    /// Seconds from each token to the next (the first measured from generation's start).
    secs: Vec<f64>,
}

impl TokenIntervals {
    fn new(start: Instant) -> Self {
        TokenIntervals {
            last: start,
            secs: Vec::new(),
        }
    }

    fn tick(&mut self) {
        let now = Instant::now();
        self.secs.push((now - self.last).as_secs_f64());
        self.last = now;
    }

    /// `token interval median 0.80 ms (1250.0 tok/s), p90 0.84 ms, max 41.20 ms (before
    /// token 37)` over the decode steps' tokens (the first token, from the prompt, is
    /// left out); `None` with fewer than two of them.
    fn summary(&self) -> Option<String> {
        let steps = self.secs.get(1..)?;
        if steps.len() < 2 {
            return None;
        }
        let (max_at, max) = steps
            .iter()
            .copied()
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
        let mut sorted = steps.to_vec();
        let median = percentile_f64(&mut sorted, 50.0)?;
        let p90 = percentile_f64(&mut sorted, 90.0)?;
        Some(format!(
            "token interval median {:.3} ms ({:.1} tok/s), p90 {:.3} ms, max {:.3} ms (before token {}), {} intervals",
            median * 1e3,
            if median > 0.0 { 1.0 / median } else { 0.0 },
            p90 * 1e3,
            max * 1e3,
            max_at + 2,
            steps.len()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn intervals(ms: &[f64]) -> TokenIntervals {
        TokenIntervals {
            last: Instant::now(),
            secs: ms.iter().map(|m| m / 1e3).collect(),
        }
    }

    #[test]
    fn token_intervals_leave_out_the_first_token_and_name_the_longest() {
        // Token 1 came from the prompt (50 ms after generation began: not a decode step);
        // the 9 ms pause came before token 4.
        let line = intervals(&[50.0, 1.0, 2.0, 9.0, 1.0, 2.0])
            .summary()
            .unwrap();
        assert!(line.contains("median 2.000 ms (500.0 tok/s)"), "{line}");
        assert!(line.contains("max 9.000 ms (before token 4)"), "{line}");
        assert!(line.ends_with("5 intervals"), "{line}");
        assert_eq!(intervals(&[50.0, 1.0]).summary(), None);
    }
}
