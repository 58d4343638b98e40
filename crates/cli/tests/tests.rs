//! The CLI test binary: the `gpuscope` executable run as a user would.
mod cli;
