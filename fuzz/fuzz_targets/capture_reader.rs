//! Fuzzes the capture reader: any bytes must give a capture or an error, never a panic.
//!
//! The input is a capture's files packed into one byte string
//! ([`gpuscope_trace::capture::packed`]: manifest, commands, stream, data, one shader,
//! one blob); the manifest's file list is made to match the parts, so mutations reach
//! parsing and reference validation. A capture that reads goes on to `inspect`, every
//! blob's check and every upload's slice, as `gpuscope inspect` and `replay` use them.

#![no_main]

use std::path::Path;

use gpuscope_trace::capture::{inspect, packed, read_capture_from};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let files = packed::unpack(data);
    if let Ok(capture) = read_capture_from(Box::new(files), Path::new("<fuzz>")) {
        let _ = inspect(&capture, 10);
        let _ = capture.verify_blobs();
        for step in &capture.stream.steps {
            for u in &step.uploads {
                let _ = capture.blob(&u.data);
            }
        }
    }
});
