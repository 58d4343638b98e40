//! What runs beside a long decode: progress on stderr, the notice that an interrupt was
//! seen, and the `--fault` test hook.
//!
//! Progress is an indicatif bar on a terminal; otherwise (a log, a test reading stderr)
//! a plain line as soon as the first token is measured and then every 10 s.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use gpuscope_runtime::capture::ReplayProgress;
use gpuscope_runtime::Gpu;
use indicatif::{ProgressBar, ProgressStyle};

use crate::interrupt::Interrupt;

/// A GPU fault provoked on purpose, to test that a run keeps what it measured
/// (`profile --fault`, a hidden test hook).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// `device-lost-after=N`: the device is destroyed once N tokens are measured.
    DeviceLostAfter(u32),
    /// `oom-after=N` (Linux): once N tokens are measured, the process's address space
    /// is capped at what it uses plus 64 MiB and a buffer of the device's largest size
    /// is allocated: the driver runs out of memory mid-run, as over a real budget.
    OomAfter(u32),
}

impl Fault {
    fn after(self) -> u32 {
        match self {
            Fault::DeviceLostAfter(n) | Fault::OomAfter(n) => n,
        }
    }

    /// Provokes the fault on `gpu`, from a thread beside the decode loop, which
    /// meets it at its next step.
    fn provoke(self, gpu: &Gpu, measured: u32) {
        match self {
            Fault::DeviceLostAfter(_) => {
                eprintln!("gpuscope: --fault: destroying the device after {measured} tokens");
                gpu.device().destroy();
            }
            Fault::OomAfter(_) => {
                eprintln!("gpuscope: --fault: out of memory after {measured} tokens");
                gpuscope_runtime::testing::allocate_over_budget(gpu);
            }
        }
    }

    pub fn parse(s: &str) -> Result<Fault, String> {
        let bad = || format!("`{s}`: expected device-lost-after=N or oom-after=N");
        let (kind, n) = s.split_once('=').ok_or_else(bad)?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        match kind.trim() {
            "device-lost-after" => Ok(Fault::DeviceLostAfter(n)),
            "oom-after" => Ok(Fault::OomAfter(n)),
            _ => Err(bad()),
        }
    }
}

/// Runs `replay` with a watchdog: when no new unit of work starts in `progress` for
/// `timeout` seconds (0: never), says what was running and exits 4 at once. A GPU stuck
/// in a kernel cannot be cancelled, and the device cannot be dropped while it runs, so
/// the process ends without its destructors.
pub fn watchdog<T>(progress: &ReplayProgress, timeout: f64, replay: impl FnOnce() -> T) -> T {
    if timeout <= 0.0 {
        return replay();
    }
    let limit = Duration::from_secs_f64(timeout);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            let (mut seen, mut since) = (progress.units(), Instant::now());
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(TICK);
                let units = progress.units();
                if units != seen {
                    (seen, since) = (units, Instant::now());
                } else if units > 0 && since.elapsed() >= limit {
                    eprintln!(
                        "error: {} did not finish within {timeout} s (--timeout): stopped",
                        progress.now()
                    );
                    signal_hook::low_level::exit(crate::exit::PARTIAL_RUN);
                }
            }
        });
        let result = replay();
        done.store(true, Ordering::Relaxed);
        result
    })
}

const LINE_EVERY: Duration = Duration::from_secs(10);
const TICK: Duration = Duration::from_millis(5);

/// Runs `decode` (which counts measured tokens in `measured`) with progress, the
/// interrupt notice and `fault` handled on a second thread.
pub fn decoding<T>(
    gpu: &Gpu,
    total: u32,
    measured: &AtomicU32,
    interrupt: &Interrupt,
    fault: Option<Fault>,
    decode: impl FnOnce() -> T,
) -> T {
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| watch(gpu, total, measured, interrupt, fault, &done));
        let result = decode();
        done.store(true, Ordering::Relaxed);
        result
    })
}

fn watch(
    gpu: &Gpu,
    total: u32,
    measured: &AtomicU32,
    interrupt: &Interrupt,
    mut fault: Option<Fault>,
    done: &AtomicBool,
) {
    let terminal = std::io::stderr().is_terminal();
    let bar = terminal.then(|| {
        ProgressBar::new(total as u64).with_style(
            ProgressStyle::with_template("{msg} [{bar:30}] {pos}/{len} tokens, {elapsed}")
                .expect("a valid template")
                .progress_chars("=> "),
        )
    });
    let mut last_line: Option<Instant> = None;
    let mut told_interrupt = false;
    while !done.load(Ordering::Relaxed) {
        let n = measured.load(Ordering::Relaxed);
        if let Some(bar) = &bar {
            bar.set_position(n as u64);
        } else if n > 0 && last_line.is_none_or(|t| t.elapsed() >= LINE_EVERY) {
            eprintln!("gpuscope: {n} of {total} tokens measured");
            last_line = Some(Instant::now());
        }
        if let (Some(caught), false) = (interrupt.caught(), told_interrupt) {
            let say = format!(
                "gpuscope: {}: stopping after the tokens in flight; again to quit at once",
                caught.name()
            );
            match &bar {
                Some(bar) => bar.println(say),
                None => eprintln!("{say}"),
            }
            told_interrupt = true;
        }
        if let Some(f) = fault.filter(|f| n >= f.after()) {
            f.provoke(gpu, n);
            fault = None;
        }
        std::thread::sleep(TICK);
    }
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
}
