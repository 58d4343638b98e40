use std::io::Write;

use crate::exit::Exit;

pub fn run() -> Result<(), Exit> {
    let mut out = std::io::stdout().lock();
    let adapters = gpuscope_runtime::list_adapters();
    if adapters.is_empty() {
        writeln!(out, "no GPU adapters found (on a machine without a GPU: apt-get install mesa-vulkan-drivers)")?;
    }
    for a in adapters {
        writeln!(out, "{a}")?;
    }
    Ok(())
}
