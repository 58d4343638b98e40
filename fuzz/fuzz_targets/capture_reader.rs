//! Fuzzes the capture reader: any bytes must give a capture or an error, never a panic.
//!
//! The input is split on `\0\0` into the files of a capture (manifest, commands, stream,
//! data, one shader, one blob). When the first part is a JSON object, its `files` list is
//! rewritten with the other parts' true lengths and hashes, so the fuzzer gets past the
//! integrity checks and reaches parsing and reference validation; otherwise the
//! manifest is read as given.

#![no_main]

use std::path::Path;

use gpuscope_trace::capture::{fnv1a64, inspect, read_capture_from, MemSource};
use libfuzzer_sys::fuzz_target;

const NAMES: [(&str, &str); 5] = [
    ("commands.json", "commands"),
    ("stream.json", "stream"),
    ("data.json", "data"),
    ("shaders/s.wgsl", "shader"),
    ("blobs/b.bin", "blob"),
];

fuzz_target!(|data: &[u8]| {
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut rest = data;
    while let Some(i) = rest.windows(2).position(|w| w == b"\0\0") {
        parts.push(&rest[..i]);
        rest = &rest[i + 2..];
    }
    parts.push(rest);
    let mut files = MemSource::default();
    let mut listed = Vec::new();
    for (part, (name, role)) in parts.iter().skip(1).zip(NAMES) {
        files.0.insert(name.to_string(), part.to_vec());
        listed.push(serde_json::json!({"path": name, "role": role, "bytes": part.len(), "hash": fnv1a64(part)}));
    }
    let manifest = match serde_json::from_slice::<serde_json::Value>(parts[0]) {
        Ok(serde_json::Value::Object(mut m)) => {
            m.insert("files".into(), serde_json::Value::Array(listed));
            serde_json::to_vec(&m).unwrap()
        }
        _ => parts[0].to_vec(),
    };
    files.0.insert("manifest.json".into(), manifest);
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
