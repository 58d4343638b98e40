//! Exit codes (documented in the README) and CPU-span logging setup.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (a closed stdout pipe counts as success) |
//! | 1 | error (bad input, I/O, GPU validation) |
//! | 2 | usage error (from clap; `report`: an unknown `--format`, or `html`/`perfetto` without `-o`) |
//! | 3 | no usable GPU: no adapter, a missing feature, a device limit exceeded |
//! | 4 | the run failed part-way; what was measured was still printed and written |
//! | 5 | a verdict was negative: the `diff` gate found a significant regression beyond a limit or a counter increase; `check` or `ops test` found a result past its threshold; `replay`'s outputs differ from the recorded ones |
//! | 130, 143 | interrupted by SIGINT, SIGTERM (`crate::interrupt`); what was measured was still printed and written |

use gpuscope_model::check::CheckError;
use gpuscope_model::ModelError;
use gpuscope_runtime::GpuError;
use gpuscope_trace::capture::OverBudget;

/// A usage error found after parsing (clap exits with the same code for its own).
pub const USAGE: i32 = 2;
pub const GPU_UNAVAILABLE: i32 = 3;
pub const PARTIAL_RUN: i32 = 4;
/// `check` / `ops test`: a result past its threshold. Shares 5 with [`GATE_FAILED`]:
/// one code for "the tool ran and its verdict was negative", as CI scripts test it.
pub const CHECK_FAILED: i32 = 5;
/// `diff` with limits: a regression.
pub const GATE_FAILED: i32 = 5;

/// An error that carries its exit code.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub error: anyhow::Error,
}

/// The attached program's own end: `attach` exits as the program did, printing nothing.
#[derive(Debug, thiserror::Error)]
#[error("the program exited with {0}")]
pub struct ProgramExit(pub i32);

impl Exit {
    /// Exit as the program `attach` ran did: its code, or 128 + the signal that ended it.
    pub fn program(status: std::process::ExitStatus) -> Exit {
        #[cfg(unix)]
        let code = {
            use std::os::unix::process::ExitStatusExt;
            status
                .code()
                .or(status.signal().map(|s| 128 + s))
                .unwrap_or(1)
        };
        #[cfg(not(unix))]
        let code = status.code().unwrap_or(1);
        Exit {
            code,
            error: ProgramExit(code).into(),
        }
    }
}

impl<E: Into<anyhow::Error>> From<E> for Exit {
    fn from(e: E) -> Exit {
        let error: anyhow::Error = e.into();
        let code = classify(&error);
        Exit { code, error }
    }
}

fn model_gpu(m: &ModelError) -> Option<&GpuError> {
    match m {
        ModelError::Gpu(g) => Some(g),
        _ => None,
    }
}

fn classify(error: &anyhow::Error) -> i32 {
    if let Some(o) = error.downcast_ref::<OverBudget>() {
        return if o.device_limit { GPU_UNAVAILABLE } else { 1 };
    }
    if let Some(ModelError::KvCacheTooLarge { .. }) = error.downcast_ref::<ModelError>() {
        return GPU_UNAVAILABLE;
    }
    let gpu = error
        .downcast_ref::<GpuError>()
        .or_else(|| error.downcast_ref::<ModelError>().and_then(model_gpu))
        .or_else(|| match error.downcast_ref::<CheckError>() {
            Some(CheckError::Gpu(g)) => Some(g),
            Some(CheckError::Model(m)) => model_gpu(m),
            _ => None,
        });
    match gpu {
        Some(
            GpuError::NoAdapter { .. }
            | GpuError::MissingFeature { .. }
            | GpuError::BufferTooLarge { .. },
        ) => GPU_UNAVAILABLE,
        _ => 1,
    }
}

/// A command line clap refused: printed as one line (its message up to the first blank
/// line, folded: the usage and "try --help" lines that follow say nothing the message
/// does not), exit 2. `--help` and `--version` print in full, exit 0.
pub fn usage(e: clap::Error) -> i32 {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        let _ = e.print();
        return 0;
    }
    let rendered = e.render().to_string();
    let message: Vec<&str> = rendered
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    eprintln!("{}", message.join(" "));
    USAGE
}

pub fn code(result: Result<(), Exit>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) if is_broken_pipe(&e.error) => 0,
        Err(e) if e.error.downcast_ref::<ProgramExit>().is_some() => e.code,
        Err(e) => {
            eprintln!("error: {}", one_line(&e.error));
            e.code
        }
    }
}

/// The error and its causes on one line, each cause shown once: library errors often
/// quote their source in their own message (`cannot write x: Is a directory`), and
/// anyhow's `{:#}` would then print it again. A message that spans lines itself
/// (wgpu's "Caused by:" chains) is folded onto the line.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = fold(&error.to_string());
    for cause in error.chain().skip(1) {
        let text = fold(&cause.to_string());
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// A multi-line message as one line: its non-empty lines, trimmed, joined by ": ", with
/// the "Caused by:" headings wgpu puts between them left out.
fn fold(message: &str) -> String {
    message
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && *l != "Caused by:")
        .collect::<Vec<_>>()
        .join(": ")
}

fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// CPU spans (buffer and bind group creation, encoding, submit, waits) are `tracing`
/// spans, compiled into release builds; `GPUSCOPE_LOG=info` prints them as they close.
pub fn init_tracing() {
    if let Ok(filter) = std::env::var("GPUSCOPE_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
            .with_writer(std::io::stderr)
            .init();
    }
}
