//! The CLI test binary: the `gpuscope` executable run as a user would.
mod arch;
mod attach;
mod bench;
mod check;
mod cli;
mod common;
mod diff;
mod errors;
mod example;
#[cfg(unix)]
mod faults;
mod layout;
mod peak;
mod sampling;
mod sweep;
mod viewers;
