//! The `gpuscope` binary: parse arguments, run the command, map errors to exit codes.

mod args;
mod commands;
mod exit;
mod interrupt;
mod watch;

use clap::Parser;

fn main() {
    quiet_mesa_device_select();
    exit::init_tracing();
    let args = args::llama_bench_spellings(std::env::args_os().collect());
    let cli = match args::Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => std::process::exit(exit::usage(e)),
    };
    std::process::exit(exit::code(commands::run(cli)));
}

/// Mesa's `VK_LAYER_MESA_device_select` implicit layer orders Vulkan devices by asking the
/// window system; on a headless machine with libwayland installed it prints
/// "error: XDG_RUNTIME_DIR is invalid or not set" to stderr once per instance, which reads
/// like gpuscope's own one-line errors. gpuscope picks its adapter itself, so the layer has
/// nothing to add: turn it off unless the user set `NODEVICE_SELECT` themselves.
fn quiet_mesa_device_select() {
    if std::env::var_os("NODEVICE_SELECT").is_none() {
        // Safe: called first thing in main, before any thread exists.
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}
