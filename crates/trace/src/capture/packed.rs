//! A capture's files packed into one byte string: the input of the `capture_pipeline` fuzz
//! target, and how its seed corpus is made from a real capture (one way to pack and
//! unpack, so the seeds and the target always agree).
//!
//! Parts are separated by `\0\0` (which JSON and WGSL never contain): the manifest, then
//! `commands.json`, `stream.json`, `data.json`, one shader ([`SHADER`]) and one blob
//! ([`BLOB`]), which takes the rest of the input (binary data may hold `\0\0`). When the
//! manifest is a JSON object, [`unpack`] rewrites its `files` list with the other parts'
//! true lengths and hashes, so a fuzzer's mutations get past the integrity checks to
//! parsing and reference validation; otherwise the manifest is read as given.

use crate::capture::blob::fnv1a64;
use crate::capture::files;
use crate::capture::source::MemSource;

/// The path of the one shader a packed capture holds.
pub const SHADER: &str = "shaders/s.wgsl";
/// The path of the one blob a packed capture holds.
pub const BLOB: &str = "blobs/b.bin";

/// The files after the manifest, in packing order, with their manifest roles.
const PARTS: [(&str, &str); 5] = [
    (files::COMMANDS, "commands"),
    (files::STREAM, "stream"),
    (files::DATA, "data"),
    (SHADER, "shader"),
    (BLOB, "blob"),
];

const SEPARATOR: &[u8] = b"\0\0";

/// Packs a manifest and up to five files (in `PARTS` order; absent ones end the list).
pub fn pack(manifest: &[u8], parts: &[&[u8]]) -> Vec<u8> {
    let mut out = manifest.to_vec();
    for p in parts.iter().take(PARTS.len()) {
        out.extend_from_slice(SEPARATOR);
        out.extend_from_slice(p);
    }
    out
}

/// The files of a packed capture, with the manifest's file list made to match them.
pub fn unpack(data: &[u8]) -> MemSource {
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut rest = data;
    while parts.len() < PARTS.len() {
        let Some(i) = rest.windows(2).position(|w| w == SEPARATOR) else {
            break;
        };
        parts.push(&rest[..i]);
        rest = &rest[i + 2..];
    }
    parts.push(rest);
    let mut source = MemSource::default();
    let mut listed = Vec::new();
    for (part, (name, role)) in parts.iter().skip(1).zip(PARTS) {
        source.0.insert(name.to_string(), part.to_vec());
        listed.push(serde_json::json!({
            "path": name, "role": role, "bytes": part.len(), "hash": fnv1a64(part)
        }));
    }
    let manifest = match serde_json::from_slice::<serde_json::Value>(parts[0]) {
        Ok(serde_json::Value::Object(mut m)) => {
            m.insert("files".into(), serde_json::Value::Array(listed));
            serde_json::to_vec(&m).expect("a JSON value serializes")
        }
        _ => parts[0].to_vec(),
    };
    source.0.insert(files::MANIFEST.into(), manifest);
    source
}
