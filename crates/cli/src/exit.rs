//! Exit codes (documented in the README) and CPU-span logging setup.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success (a closed stdout pipe counts as success) |
//! | 1 | error (bad input, I/O, GPU validation) |
//! | 2 | usage error (from clap) |
//! | 3 | no usable GPU: no adapter, a missing feature, a device limit exceeded |
//! | 4 | the run failed part-way; what was measured was still printed and written |

use gpuscope_model::ModelError;
use gpuscope_runtime::GpuError;

pub const GPU_UNAVAILABLE: i32 = 3;
pub const PARTIAL_RUN: i32 = 4;

/// An error that carries its exit code.
#[derive(Debug)]
pub struct Exit {
    pub code: i32,
    pub error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Exit {
    fn from(e: E) -> Exit {
        let error: anyhow::Error = e.into();
        let code = classify(&error);
        Exit { code, error }
    }
}

fn classify(error: &anyhow::Error) -> i32 {
    let gpu =
        error
            .downcast_ref::<GpuError>()
            .or_else(|| match error.downcast_ref::<ModelError>() {
                Some(ModelError::Gpu(g)) => Some(g),
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

pub fn code(result: Result<(), Exit>) -> i32 {
    match result {
        Ok(()) => 0,
        Err(e) if is_broken_pipe(&e.error) => 0,
        Err(e) => {
            eprintln!("error: {:#}", e.error);
            e.code
        }
    }
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
