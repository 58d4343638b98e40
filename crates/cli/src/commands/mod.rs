//! One module per subcommand.

mod devices;
mod peak;
mod profile;
mod report;

use crate::args::{Cli, Command};
use crate::exit::Exit;

pub fn run(cli: Cli) -> Result<(), Exit> {
    match cli.command {
        Command::Profile(args) => profile::run(&args),
        Command::Report { file } => report::run(&file),
        Command::Devices => devices::run(),
        Command::Peak { mib, repetitions, device } => peak::run(mib, repetitions, &device),
    }
}
