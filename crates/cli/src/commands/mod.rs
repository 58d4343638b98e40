//! One module per subcommand.

mod devices;
mod inspect;
mod peak;
mod profile;
mod replay;
mod report;
mod run;

use crate::args::{Cli, Command};
use crate::exit::Exit;

pub fn run(cli: Cli) -> Result<(), Exit> {
    match cli.command {
        Command::Profile(args) => match &args.model {
            Some(model) => run::profile_model(&args, model),
            None => profile::run(&args),
        },
        Command::Run(args) => run::run(&args),
        Command::Report { file } => report::run(&file),
        Command::Devices => devices::run(),
        Command::Inspect { dir, top } => inspect::run(&dir, top),
        Command::Replay(args) => replay::run(&args),
        Command::Peak {
            mib,
            repetitions,
            device,
        } => peak::run(mib, repetitions, &device),
    }
}
