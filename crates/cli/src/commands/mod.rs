//! One module per subcommand.

mod attach;
mod bench;
mod ceilings;
mod check;
mod common;
mod devices;
mod diff;
mod inspect;
mod ops;
mod peak;
mod plan_kernels;
mod profile;
mod replay;
mod report;
mod run;
mod sweep;
mod synth;

use crate::args::{Cli, Command};
use crate::exit::Exit;

pub fn run(cli: Cli) -> Result<(), Exit> {
    match cli.command {
        Command::Profile(args) => profile::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Report(args) => report::run(&args),
        Command::Devices => devices::run(),
        Command::Inspect { dir, top } => inspect::run(&dir, top),
        Command::Replay(args) => replay::run(&args),
        Command::Diff(args) => diff::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Ops { mode } => ops::run(&mode),
        Command::Peak(args) => peak::run(&args),
        Command::Attach(args) => attach::run(&args),
        Command::Synth(args) => synth::run(&args),
    }
}
