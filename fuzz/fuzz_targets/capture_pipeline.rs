//! The whole pipeline a capture goes through before a GPU is touched, fuzzed: read,
//! inspect (and its report), the replay budget against a device's limits, every blob's
//! check and every upload's slice. Any bytes must give a capture or an error, never a
//! panic, and never an allocation the input did not pay for.
//!
//! The input is a capture's files packed into one byte string
//! ([`gpuscope_trace::capture::packed`]: manifest, commands, stream, data, one shader,
//! one blob); the manifest's file list is made to match the parts, so mutations reach
//! parsing and reference validation.

#![no_main]

use std::path::Path;

use gpuscope_report::inspect::inspect;
use gpuscope_report::render::capture::render_inspection;
use gpuscope_trace::capture::{check_budget, packed, read_capture_from, ReplayLimits};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let files = packed::unpack(data);
    let Ok(capture) = read_capture_from(Box::new(files), Path::new("<fuzz>")) else {
        return;
    };
    let _ = render_inspection(&inspect(&capture, 10));
    // An H100's limits, 16 GiB of replay memory (the default of --max-memory).
    let limits = ReplayLimits {
        max_buffer_size: 1 << 32,
        max_storage_buffer_binding_size: (1 << 31) - 4,
        min_storage_buffer_offset_alignment: 16,
        max_compute_workgroups_per_dimension: 65535,
        timestamps: Some((1, 1)),
        max_memory: 16 << 30,
    };
    let _ = check_budget(&capture, &limits, true);
    let _ = capture.verify_blobs();
    for step in &capture.stream.steps {
        for u in &step.uploads {
            let _ = capture.blob(&u.data);
        }
    }
});
