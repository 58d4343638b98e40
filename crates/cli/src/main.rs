//! The `gpuscope` binary: parse arguments, run the command, map errors to exit codes.

mod args;
mod commands;
mod exit;

use clap::Parser;

fn main() {
    exit::init_tracing();
    let cli = args::Cli::parse();
    std::process::exit(exit::code(commands::run(cli)));
}
