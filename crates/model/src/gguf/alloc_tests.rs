//! Memory the reader takes, whatever a header claims: measured with a counting
//! allocator (per thread, so tests running beside it do not count).
//!
//! Every count and length is checked against the bytes left before it sizes anything
//! (`Cursor::count`, `Cursor::capacity_for`), so what the reader holds grows only with
//! items actually found in the file. Parsed items take more memory than their smallest
//! encoding (an empty nested array: 12 bytes in the file, a 56-byte `MetaArray` in
//! memory; a tensor info: 24 bytes and a 100-byte struct plus its index entry), so the
//! bound is a multiple of the file size: [`HEAP_PER_FILE_BYTE`] × size + [`HEAP_SLACK`],
//! reached only by files made of nothing but minimal entries (a real model's header is
//! a few MB next to gigabytes of tensor data, which stay in the memory map).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use super::*;

/// The multiple of the file size the parse may hold at its peak. Measured worst cases
/// (these tests print them): about 13.7 for a file of nothing but one-byte metadata
/// values under 5-byte keys (18 bytes each in the file; in memory the entry, its key,
/// the index's copy of the key, and the vector's and hash table's growth), 12 for one
/// array of empty arrays (12 bytes each in the file, 56 in memory, plus the vector's
/// doubling); 1 for strings and numbers.
pub const HEAP_PER_FILE_BYTE: usize = 16;
/// Fixed allocations (hash map seeds, error strings).
pub const HEAP_SLACK: usize = 64 << 10;

struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.with(|l| {
            l.set(l.get() + layout.size());
            l.get()
        });
        PEAK.with(|p| p.set(p.get().max(live)));
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.with(|l| l.set(l.get().saturating_sub(layout.size())));
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Peak bytes allocated on this thread while parsing `bytes`.
fn parse_peak(bytes: &[u8]) -> usize {
    let before = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(before));
    let result = parse_gguf(bytes);
    let peak = PEAK.with(Cell::get) - before;
    drop(result);
    peak
}

fn header(tensors: u64, kvs: u64) -> Vec<u8> {
    let mut b = b"GGUF".to_vec();
    b.extend_from_slice(&3u32.to_le_bytes());
    b.extend_from_slice(&tensors.to_le_bytes());
    b.extend_from_slice(&kvs.to_le_bytes());
    b
}

fn assert_bounded(what: &str, bytes: &[u8]) -> usize {
    let peak = parse_peak(bytes);
    eprintln!(
        "{what}: {peak} bytes of heap for a {}-byte file ({:.2} per byte)",
        bytes.len(),
        peak as f64 / bytes.len() as f64
    );
    let bound = HEAP_PER_FILE_BYTE * bytes.len() + HEAP_SLACK;
    assert!(
        peak <= bound,
        "{what}: parsing {} bytes took {peak} bytes of heap at its peak, more than {bound}",
        bytes.len()
    );
    peak
}

#[test]
fn counts_that_claim_the_whole_rest_of_the_file_reserve_no_more_than_it() {
    let size = 1 << 20;
    // The largest counts the reader accepts, over zeros: the first tensor info (empty
    // name, no dims) is valid, the second repeats its name.
    let mut b = header((size as u64 - 24) / 24, 0);
    b.resize(size, 0);
    let peak = assert_bounded("tensor count", &b);
    assert!(
        peak <= size + HEAP_SLACK,
        "the claimed count reserved more than the file's size: {peak} bytes"
    );
    // A nested array claiming every remaining byte as empty arrays.
    let mut b = header(0, 1);
    b.extend_from_slice(&1u64.to_le_bytes());
    b.push(b'k');
    b.extend_from_slice(&value::type_id::ARRAY.to_le_bytes());
    b.extend_from_slice(&value::type_id::ARRAY.to_le_bytes());
    let n = (size - b.len() - 8) as u64 / 12;
    b.extend_from_slice(&n.to_le_bytes());
    b.resize(size, 0);
    assert_bounded("array of arrays", &b);
    // Strings claiming lengths past the end.
    let mut b = header(0, 1);
    b.extend_from_slice(&u64::MAX.to_le_bytes());
    b.resize(size, 0);
    assert!(parse_peak(&b) < HEAP_SLACK);
}

#[test]
fn files_made_of_minimal_entries_stay_within_the_bound() {
    // Many tensor infos with short unique names: the densest valid tensor section.
    let mut w = GgufWriter::new();
    for i in 0..20_000u32 {
        w.tensor(&format!("{i}"), &[1], 0, vec![0; 4]);
    }
    let bytes = w.to_bytes();
    parse_gguf(&bytes).expect("valid");
    assert_bounded("tensor infos", &bytes);
    // Many metadata entries of one byte each.
    let mut w = GgufWriter::new();
    for i in 0..20_000u32 {
        w.meta(&format!("{i}"), MetaValue::U8(1));
    }
    let bytes = w.to_bytes();
    parse_gguf(&bytes).expect("valid");
    assert_bounded("metadata entries", &bytes);
    // String arrays of empty strings.
    let mut w = GgufWriter::new();
    w.meta(
        "s",
        MetaValue::Array(MetaArray::String(
            std::iter::repeat_n(String::new(), 100_000).collect(),
        )),
    );
    let bytes = w.to_bytes();
    parse_gguf(&bytes).expect("valid");
    assert_bounded("empty strings", &bytes);
}
