//! The compact profile encoding: the same [`Profile`] as the JSON format, with its
//! per-event tables stored as columns of fixed-width integers and names interned once.
//!
//! JSON spends ~400 bytes and a parse of a dozen fields per dispatch event; a profile
//! of a million dispatches is ~400 MB of text that takes seconds to read. This
//! encoding spends ~80 bytes per dispatch, decodes with no parsing, and is what
//! `gpuscope profile --compact FILE` writes; `gpuscope report` reads either (the magic
//! bytes tell them apart).
//!
//! # Layout (all integers little-endian)
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic `GPUPROF\0` |
//! | 2 + 2 | encoding version major, minor ([`COMPACT_FORMAT`]) |
//! | 8 + n | header: length, then the profile as JSON with `dispatches` and `passes` empty (it carries the profile format version, checked as the JSON reader checks it) |
//! | 4 + … | string table: count, then per string its length (4) and UTF-8 bytes |
//! | 8 + … | dispatches: count `n`, then the columns `token`, `index`, `op`, `label`, `layer`, `pass`, `pipeline`, `wg_x`, `wg_y`, `wg_z` (u32 × n each; names are string-table indices, `layer` is `u32::MAX` for none), `bytes`, `flops`, `cpu_encode_ns`, `gpu_start_ns`, `gpu_end_ns` (u64 × n each), `flags` (u8 × n) |
//! | 8 + … | passes: count `m`, then `token`, `index`, `name`, `layer`, `dispatches` (u32 × m), `gpu_start_ns`, `gpu_end_ns` (u64 × m), `flags` (u8 × m) |
//! | 8 | FNV-1a 64 of every byte before it |
//!
//! `flags`: bit 0 set when the event has a GPU span; bits 1-2 its timestamp issue (0
//! none, 1 zero, 2 negative, 3 out of order).
//!
//! # Changelog
//!
//! - 1.0: first version.
//!
//! A reader accepts the same major version (a newer minor may append sections, which
//! it ignores) and refuses another with a message naming both. The same holds for the
//! profile format version in the header ([`crate::version`]).

use std::collections::HashMap;
use std::hash::Hasher;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::name::Name;
use crate::profile::{DispatchEvent, GpuSpan, PassEvent, Profile, TimestampIssue, PROFILE_FORMAT};
use crate::version::{FormatHeader, VersionError};
use crate::FormatVersion;

/// The first bytes of every compact profile.
pub const MAGIC: &[u8; 8] = b"GPUPROF\0";
/// The encoding version this build writes.
pub const COMPACT_FORMAT: FormatVersion = FormatVersion { major: 1, minor: 0 };

/// What is wrong with a compact profile, and where.
#[derive(Debug, thiserror::Error)]
pub enum CompactError {
    #[error("not a compact gpuscope profile (no `GPUPROF` magic bytes)")]
    NotCompact,
    #[error("compact profile encoding {found} cannot be read by this build, which reads {}.x", supported.major)]
    Version {
        found: FormatVersion,
        supported: FormatVersion,
    },
    #[error("truncated: {what} needs {needed} bytes at byte {at}, the file has {len}")]
    Truncated {
        what: String,
        at: usize,
        needed: usize,
        len: usize,
    },
    #[error(
        "checksum mismatch: the file is corrupt (stored {stored:016x}, computed {computed:016x})"
    )]
    Checksum { stored: u64, computed: u64 },
    #[error("{what}: string {id} is out of the string table ({count} strings)")]
    StringId { what: String, id: u32, count: usize },
    #[error("string {index} of the string table is not UTF-8")]
    Utf8 { index: usize },
    #[error("{what}: flags {flags:#04x} are not a valid combination")]
    Flags { what: String, flags: u8 },
    #[error("header: {0}")]
    Header(serde_json::Error),
    /// The profile inside has a format version this build does not read (the encoding
    /// around it may be fine).
    #[error("header: profile {0}")]
    ProfileVersion(VersionError),
}

/// Encodes `p` (see the module docs).
pub fn encode(p: &Profile) -> Result<Vec<u8>, serde_json::Error> {
    let header_json = serde_json::to_vec(&without_events(p))?;
    let mut strings = Interner::default();
    let d = &p.dispatches;
    let ops: Vec<u32> = d.iter().map(|e| strings.id(&e.op)).collect();
    let labels: Vec<u32> = d.iter().map(|e| strings.id(&e.label)).collect();
    let pipelines: Vec<u32> = d.iter().map(|e| strings.id(&e.pipeline)).collect();
    let pass_names: Vec<u32> = p.passes.iter().map(|e| strings.id(&e.name)).collect();

    let mut out = Vec::with_capacity(64 + header_json.len() + d.len() * 82);
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&(COMPACT_FORMAT.major as u16).to_le_bytes());
    out.extend_from_slice(&(COMPACT_FORMAT.minor as u16).to_le_bytes());
    out.extend_from_slice(&(header_json.len() as u64).to_le_bytes());
    out.extend_from_slice(&header_json);
    out.extend_from_slice(&(strings.list.len() as u32).to_le_bytes());
    for s in &strings.list {
        out.extend_from_slice(&(s.len() as u32).to_le_bytes());
        out.extend_from_slice(s.as_bytes());
    }
    let u32s = |out: &mut Vec<u8>, v: &mut dyn Iterator<Item = u32>| {
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    };
    let u64s = |out: &mut Vec<u8>, v: &mut dyn Iterator<Item = u64>| {
        for x in v {
            out.extend_from_slice(&x.to_le_bytes());
        }
    };
    out.extend_from_slice(&(d.len() as u64).to_le_bytes());
    u32s(&mut out, &mut d.iter().map(|e| e.token));
    u32s(&mut out, &mut d.iter().map(|e| e.index));
    u32s(&mut out, &mut ops.into_iter());
    u32s(&mut out, &mut labels.into_iter());
    u32s(&mut out, &mut d.iter().map(|e| e.layer.unwrap_or(u32::MAX)));
    u32s(&mut out, &mut d.iter().map(|e| e.pass));
    u32s(&mut out, &mut pipelines.into_iter());
    for axis in 0..3 {
        u32s(&mut out, &mut d.iter().map(|e| e.workgroups[axis]));
    }
    u64s(&mut out, &mut d.iter().map(|e| e.bytes));
    u64s(&mut out, &mut d.iter().map(|e| e.flops));
    u64s(&mut out, &mut d.iter().map(|e| e.cpu_encode_ns));
    u64s(
        &mut out,
        &mut d.iter().map(|e| e.gpu.map_or(0, |s| s.start_ns)),
    );
    u64s(
        &mut out,
        &mut d.iter().map(|e| e.gpu.map_or(0, |s| s.end_ns)),
    );
    out.extend(d.iter().map(|e| flags(e.gpu, e.timestamp_issue)));
    let s = &p.passes;
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    u32s(&mut out, &mut s.iter().map(|e| e.token));
    u32s(&mut out, &mut s.iter().map(|e| e.index));
    u32s(&mut out, &mut pass_names.into_iter());
    u32s(&mut out, &mut s.iter().map(|e| e.layer.unwrap_or(u32::MAX)));
    u32s(&mut out, &mut s.iter().map(|e| e.dispatches));
    u64s(
        &mut out,
        &mut s.iter().map(|e| e.gpu.map_or(0, |g| g.start_ns)),
    );
    u64s(
        &mut out,
        &mut s.iter().map(|e| e.gpu.map_or(0, |g| g.end_ns)),
    );
    out.extend(s.iter().map(|e| flags(e.gpu, e.timestamp_issue)));
    let sum = checksum(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

/// Whether `bytes` start like a compact profile.
pub fn is_compact(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Decodes a compact profile (see the module docs).
pub fn decode(bytes: &[u8]) -> Result<Profile, CompactError> {
    let mut r = open(bytes)?;
    let mut p = read_header(&mut r)?;
    let strings = read_strings(&mut r)?;
    p.dispatches = read_dispatches(&mut r, &strings)?;
    p.passes = read_passes(&mut r, &strings)?;
    Ok(p)
}

/// Checks the magic bytes, the encoding version and the checksum, in that order, and
/// returns a reader of the body just past the version.
fn open(bytes: &[u8]) -> Result<Reader<'_>, CompactError> {
    if !is_compact(bytes) {
        return Err(CompactError::NotCompact);
    }
    if bytes.len() < MAGIC.len() + 4 + 8 {
        return Err(CompactError::Truncated {
            what: "the version".into(),
            at: MAGIC.len(),
            needed: 4,
            len: bytes.len(),
        });
    }
    let mut r = Reader {
        bytes: &bytes[..bytes.len() - 8],
        at: MAGIC.len(),
        len: bytes.len(),
    };
    let found = FormatVersion {
        major: r.u16("the version")? as u32,
        minor: r.u16("the version")? as u32,
    };
    if found.major != COMPACT_FORMAT.major {
        return Err(CompactError::Version {
            found,
            supported: COMPACT_FORMAT,
        });
    }
    let stored = u64::from_le_bytes(bytes[bytes.len() - 8..].try_into().expect("8 bytes"));
    let computed = checksum(&bytes[..bytes.len() - 8]);
    if stored != computed {
        return Err(CompactError::Checksum { stored, computed });
    }
    Ok(r)
}

/// The profile without its events. Its own format version is checked first, as the
/// JSON reader checks it ([`crate::version`]).
fn read_header(r: &mut Reader<'_>) -> Result<Profile, CompactError> {
    let header_len = r.u64("the header length")? as usize;
    let header = r.take(header_len, "the header")?;
    let version: FormatHeader = serde_json::from_slice(header).map_err(CompactError::Header)?;
    version
        .check(PROFILE_FORMAT)
        .map_err(CompactError::ProfileVersion)?;
    serde_json::from_slice(header).map_err(CompactError::Header)
}

fn read_strings(r: &mut Reader<'_>) -> Result<Vec<Name>, CompactError> {
    let count = r.u32("the string table")? as usize;
    let mut strings = Vec::with_capacity(count.min(r.remaining() / 4));
    for index in 0..count {
        let len = r.u32("a string's length")? as usize;
        let s = std::str::from_utf8(r.take(len, "a string")?)
            .map_err(|_| CompactError::Utf8 { index })?;
        strings.push(Name::from(s));
    }
    Ok(strings)
}

fn read_dispatches(
    r: &mut Reader<'_>,
    strings: &[Name],
) -> Result<Vec<DispatchEvent>, CompactError> {
    let n = r.u64("the dispatch count")? as usize;
    // Every dispatch takes 81 bytes: a count beyond what the file holds is truncation,
    // found before any allocation sized by it. Columns are read in place.
    r.need(n.saturating_mul(81), "the dispatch columns")?;
    let token = r.u32s(n, "dispatches.token")?;
    let index = r.u32s(n, "dispatches.index")?;
    let op = r.u32s(n, "dispatches.op")?;
    let label = r.u32s(n, "dispatches.label")?;
    let layer = r.u32s(n, "dispatches.layer")?;
    let pass = r.u32s(n, "dispatches.pass")?;
    let pipeline = r.u32s(n, "dispatches.pipeline")?;
    let wg = [
        r.u32s(n, "dispatches.wg_x")?,
        r.u32s(n, "dispatches.wg_y")?,
        r.u32s(n, "dispatches.wg_z")?,
    ];
    let bytes_col = r.u64s(n, "dispatches.bytes")?;
    let flops = r.u64s(n, "dispatches.flops")?;
    let encode = r.u64s(n, "dispatches.cpu_encode_ns")?;
    let start = r.u64s(n, "dispatches.gpu_start_ns")?;
    let end = r.u64s(n, "dispatches.gpu_end_ns")?;
    let fl = r.take(n, "dispatches.flags")?;
    // Check every id and flag first, so that building the events cannot fail and runs
    // on every core, in place (names are shared: a reference count each).
    let count = strings.len() as u32;
    for (i, &flag) in fl.iter().enumerate().take(n) {
        for (what, col) in [("op", &op), ("label", &label), ("pipeline", &pipeline)] {
            if col.get(i) >= count {
                return Err(CompactError::StringId {
                    what: format!("dispatches[{i}].{what}"),
                    id: col.get(i),
                    count: strings.len(),
                });
            }
        }
        unflags(flag, 0, 0, || format!("dispatches[{i}]"))?;
    }
    let s = |id: u32| strings[id as usize].clone();
    let mut dispatches = Vec::new();
    (0..n)
        .into_par_iter()
        .map(|i| {
            let (gpu, timestamp_issue) =
                unflags(fl[i], start.get(i), end.get(i), String::new).expect("checked above");
            let layer = layer.get(i);
            DispatchEvent {
                token: token.get(i),
                index: index.get(i),
                op: s(op.get(i)),
                label: s(label.get(i)),
                layer: (layer != u32::MAX).then_some(layer),
                pass: pass.get(i),
                pipeline: s(pipeline.get(i)),
                workgroups: [wg[0].get(i), wg[1].get(i), wg[2].get(i)],
                bytes: bytes_col.get(i),
                flops: flops.get(i),
                cpu_encode_ns: encode.get(i),
                gpu,
                timestamp_issue,
            }
        })
        .collect_into_vec(&mut dispatches);
    Ok(dispatches)
}

fn read_passes(r: &mut Reader<'_>, strings: &[Name]) -> Result<Vec<PassEvent>, CompactError> {
    // `what` is only formatted for an error: a million events must not format names.
    let name = |what: &dyn Fn() -> String, id: u32| -> Result<Name, CompactError> {
        strings
            .get(id as usize)
            .cloned()
            .ok_or_else(|| CompactError::StringId {
                what: what(),
                id,
                count: strings.len(),
            })
    };
    let m = r.u64("the pass count")? as usize;
    r.need(m.saturating_mul(37), "the pass columns")?;
    let token = r.u32s(m, "passes.token")?;
    let index = r.u32s(m, "passes.index")?;
    let names = r.u32s(m, "passes.name")?;
    let layer = r.u32s(m, "passes.layer")?;
    let dispatches = r.u32s(m, "passes.dispatches")?;
    let start = r.u64s(m, "passes.gpu_start_ns")?;
    let end = r.u64s(m, "passes.gpu_end_ns")?;
    let fl = r.take(m, "passes.flags")?;
    let mut passes = Vec::with_capacity(m);
    for (i, &flag) in fl.iter().enumerate().take(m) {
        let (gpu, timestamp_issue) =
            unflags(flag, start.get(i), end.get(i), || format!("passes[{i}]"))?;
        let layer = layer.get(i);
        passes.push(PassEvent {
            token: token.get(i),
            index: index.get(i),
            name: name(&|| format!("passes[{i}].name"), names.get(i))?,
            layer: (layer != u32::MAX).then_some(layer),
            dispatches: dispatches.get(i),
            gpu,
            timestamp_issue,
        });
    }
    Ok(passes)
}

/// Why a compact profile could not be written.
#[derive(Debug, thiserror::Error)]
pub enum CompactWriteError {
    #[error("cannot encode the profile for {}: {source}", path.display())]
    Encode {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Write(#[from] crate::atomic::OutputError),
}

/// Writes `p` compactly to `path`, atomically (a temporary file beside it, renamed).
pub fn save(path: &Path, p: &Profile) -> Result<(), CompactWriteError> {
    let bytes = encode(p).map_err(|source| CompactWriteError::Encode {
        path: path.to_path_buf(),
        source,
    })?;
    Ok(crate::atomic::write_atomic(path, &bytes)?)
}

/// A copy of `p` without its dispatch and pass events. The pattern names every field,
/// so a field added to [`Profile`] does not compile until it is handled here.
fn without_events(p: &Profile) -> Profile {
    let Profile {
        format,
        tool,
        adapter,
        timing,
        workload,
        setup,
        setup_wall_ns,
        tokens,
        dispatches: _,
        passes: _,
        overhead,
        prompt,
        commit,
        incomplete,
        threads,
        gpu_tracks,
        cpu_spans,
        buffers,
        instrumentation,
        notes,
        ceilings,
        graph,
        warmup_tokens,
    } = p;
    Profile {
        format: *format,
        tool: tool.clone(),
        adapter: adapter.clone(),
        timing: timing.clone(),
        workload: workload.clone(),
        setup: *setup,
        setup_wall_ns: *setup_wall_ns,
        tokens: tokens.clone(),
        dispatches: Vec::new(),
        passes: Vec::new(),
        overhead: overhead.clone(),
        prompt: prompt.clone(),
        commit: commit.clone(),
        incomplete: incomplete.clone(),
        threads: threads.clone(),
        gpu_tracks: gpu_tracks.clone(),
        cpu_spans: cpu_spans.clone(),
        buffers: buffers.clone(),
        instrumentation: instrumentation.clone(),
        notes: notes.clone(),
        ceilings: ceilings.clone(),
        graph: graph.clone(),
        warmup_tokens: *warmup_tokens,
    }
}

fn flags(gpu: Option<GpuSpan>, issue: Option<TimestampIssue>) -> u8 {
    let issue = match issue {
        None => 0,
        Some(TimestampIssue::Zero) => 1,
        Some(TimestampIssue::Negative) => 2,
        Some(TimestampIssue::OutOfOrder) => 3,
    };
    u8::from(gpu.is_some()) | issue << 1
}

type Unflagged = (Option<GpuSpan>, Option<TimestampIssue>);

fn unflags(
    f: u8,
    start_ns: u64,
    end_ns: u64,
    what: impl Fn() -> String,
) -> Result<Unflagged, CompactError> {
    if f > 7 {
        return Err(CompactError::Flags {
            what: what(),
            flags: f,
        });
    }
    let gpu = (f & 1 == 1).then_some(GpuSpan { start_ns, end_ns });
    let issue = match f >> 1 {
        0 => None,
        1 => Some(TimestampIssue::Zero),
        2 => Some(TimestampIssue::Negative),
        _ => Some(TimestampIssue::OutOfOrder),
    };
    Ok((gpu, issue))
}

fn checksum(bytes: &[u8]) -> u64 {
    let mut h = fnv::FnvHasher::default();
    h.write(bytes);
    h.finish()
}

#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    list: Vec<String>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.list.len() as u32;
        self.ids.insert(s.to_string(), id);
        self.list.push(s.to_string());
        id
    }
}

struct Reader<'a> {
    /// The body (without the checksum).
    bytes: &'a [u8],
    at: usize,
    /// The whole file's length, for messages.
    len: usize,
}

impl<'a> Reader<'a> {
    fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    fn need(&self, n: usize, what: &str) -> Result<(), CompactError> {
        if n > self.remaining() {
            return Err(CompactError::Truncated {
                what: what.to_string(),
                at: self.at,
                needed: n,
                len: self.len,
            });
        }
        Ok(())
    }

    fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8], CompactError> {
        self.need(n, what)?;
        let s = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(s)
    }

    fn u16(&mut self, what: &str) -> Result<u16, CompactError> {
        Ok(u16::from_le_bytes(
            self.take(2, what)?.try_into().expect("2"),
        ))
    }

    fn u32(&mut self, what: &str) -> Result<u32, CompactError> {
        Ok(u32::from_le_bytes(
            self.take(4, what)?.try_into().expect("4"),
        ))
    }

    fn u64(&mut self, what: &str) -> Result<u64, CompactError> {
        Ok(u64::from_le_bytes(
            self.take(8, what)?.try_into().expect("8"),
        ))
    }

    fn u32s(&mut self, n: usize, what: &str) -> Result<Column<'a, 4>, CompactError> {
        Ok(Column(self.take(n.saturating_mul(4), what)?))
    }

    fn u64s(&mut self, n: usize, what: &str) -> Result<Column<'a, 8>, CompactError> {
        Ok(Column(self.take(n.saturating_mul(8), what)?))
    }
}

/// A column of `W`-byte little-endian integers, read in place.
struct Column<'a, const W: usize>(&'a [u8]);

impl Column<'_, 4> {
    fn get(&self, i: usize) -> u32 {
        u32::from_le_bytes(self.0[4 * i..4 * i + 4].try_into().expect("4 bytes"))
    }
}

impl Column<'_, 8> {
    fn get(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.0[8 * i..8 * i + 8].try_into().expect("8 bytes"))
    }
}
