//! The CLI test binary: the `gpuscope` executable run as a user would.
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
// `layout` (crate layers, module cycles, function lengths) joins once the tree passes it.
mod peak;
mod sweep;
mod viewers;
