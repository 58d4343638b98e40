use std::io::Write;
use std::path::Path;

use crate::exit::Exit;

pub fn run(file: &Path) -> Result<(), Exit> {
    let profile = gpuscope_trace::io::load_profile(file)?;
    std::io::stdout().write_all(gpuscope_trace::render::render_text(&profile).as_bytes())?;
    Ok(())
}
