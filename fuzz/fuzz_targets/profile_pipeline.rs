//! The whole pipeline a profile file goes through, fuzzed: any bytes (JSON or the
//! compact encoding, the content tells) must give a profile or an error, and a profile
//! must go through every analysis, every renderer (text, Markdown, HTML, Perfetto), the
//! diff against itself and the gate, without a panic (fuzz builds check overflow) and
//! without allocating what the input did not pay for (`-malloc_limit_mb`).

#![no_main]

use std::path::Path;

use gpuscope_report::analysis::{analyze, diff, gate, DiffOptions, GateOptions};
use gpuscope_report::render;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = gpuscope_trace::io::profile_from_bytes(data.to_vec(), Path::new("<fuzz>")) else {
        return;
    };
    let a = analyze(&p);
    let _ = render::render_analysis_text(&p, &a);
    let _ = render::render_analysis_markdown(&p, &a);
    let _ = render::render_analysis_html(&p, &a);
    let _ = render::perfetto::write_perfetto(&p, None, std::io::sink());
    if let Ok(d) = diff(&p, &p, &DiffOptions::default()) {
        let limits = GateOptions {
            max_regress: Some(0.05),
            max_regress_op: Vec::new(),
            max_counter_increase: Some(0),
        };
        let g = gate(&d, &limits).ok();
        let _ = render::render_diff_text(&d, g.as_ref());
        let _ = render::render_diff_md(&d, g.as_ref());
        let _ = render::diff::json(&d, g.as_ref());
    }
});
