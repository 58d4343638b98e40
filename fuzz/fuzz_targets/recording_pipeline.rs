//! The Vulkan layer's recording (`gpuscope attach`) through everything downstream of
//! it, fuzzed: any bytes as `recording.jsonl` must give a recording or an error, a
//! recording a consistent profile, and the profile a report, never a panic.

#![no_main]

use std::path::Path;

use gpuscope_trace::recording::read_records;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = read_records(data, Path::new("<fuzz>")) else {
        return;
    };
    let p = r.to_profile();
    if gpuscope_trace::consistency::check(&p).is_ok() {
        let _ = gpuscope_report::render::render_text(&p);
        let _ = gpuscope_report::render::perfetto::write_perfetto(&p, None, std::io::sink());
    }
});
