//! `gpuscope inspect DIR`: what a capture holds and where its recorded time went.

use std::io::Write;
use std::path::Path;

use gpuscope_report::inspect::inspect;
use gpuscope_report::render::capture::render_inspection;
use gpuscope_trace::capture::read_capture;

use crate::exit::Exit;

pub fn run(dir: &Path, top: usize) -> Result<(), Exit> {
    let capture = read_capture(dir)?;
    let inspection = inspect(&capture, top);
    std::io::stdout().write_all(render_inspection(&inspection).as_bytes())?;
    Ok(())
}
