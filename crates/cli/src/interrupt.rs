//! SIGINT and SIGTERM (Ctrl-C; on Windows the C runtime's Ctrl-C and Ctrl-Break): the
//! first asks the command to stop at the next step boundary, after which it writes and
//! prints what was measured and exits 128 + the signal (130, 143). A second exits at
//! once with that code, writing nothing more.
//!
//! The handler only touches atomics and calls `_exit` (async-signal-safe); the decode
//! loop reads the flag between steps ([`gpuscope_model::GenerateOptions::stop`]).

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;

use anyhow::Context;
use signal_hook::consts::{SIGINT, SIGTERM};

use crate::exit::Exit;

/// The stop flag the handlers set, and which signal set it.
pub struct Interrupt {
    stop: Arc<AtomicBool>,
    signal: Arc<AtomicI32>,
}

/// The signal that stopped a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caught(i32);

impl Caught {
    pub fn name(self) -> &'static str {
        match self.0 {
            SIGINT => "SIGINT",
            SIGTERM => "SIGTERM",
            _ => "a signal",
        }
    }

    /// The shell's convention: 128 + the signal number.
    pub fn exit_code(self) -> i32 {
        128 + self.0
    }

    /// The exit for a run this signal stopped; `what` says what was kept.
    pub fn exit(self, what: &str) -> Exit {
        Exit {
            code: self.exit_code(),
            error: anyhow::anyhow!("interrupted by {}: {what}", self.name()),
        }
    }
}

impl Interrupt {
    /// Installs the handlers for the rest of the process.
    pub fn install() -> Result<Interrupt, Exit> {
        let stop = Arc::new(AtomicBool::new(false));
        let signal = Arc::new(AtomicI32::new(0));
        for sig in [SIGINT, SIGTERM] {
            let (stop, signal) = (stop.clone(), signal.clone());
            // SAFETY: the closure only uses atomics and `_exit`, which are
            // async-signal-safe, and allocates nothing.
            unsafe {
                signal_hook::low_level::register(sig, move || {
                    if signal
                        .compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst)
                        .is_err()
                    {
                        signal_hook::low_level::exit(128 + sig);
                    }
                    stop.store(true, Ordering::SeqCst);
                })
            }
            .context("installing the SIGINT/SIGTERM handler")?;
        }
        Ok(Interrupt { stop, signal })
    }

    /// The flag to hand to the decode loop.
    pub fn flag(&self) -> Arc<AtomicBool> {
        self.stop.clone()
    }

    /// The signal received, if any.
    pub fn caught(&self) -> Option<Caught> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            sig => Some(Caught(sig)),
        }
    }
}
