//! Size laws (issue 24): reading a profile and reporting it takes memory at most a fixed
//! multiple of the file's size plus a constant, and time at most n log n in its
//! dispatches, checked at 10^4, 10^5 and 10^6 dispatches. A quadratic step (a label
//! looked up in a list, a vector sized by an index read from the file) breaks them.
//!
//! Its own test binary: the counting allocator below sees every allocation of the
//! process, so no other test may run beside it.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use gpuscope_report::render::perfetto::write_perfetto;
use gpuscope_report::render::render_text;
use gpuscope_trace::fixtures;
use gpuscope_trace::io::{load_profile, save_profile};

/// The system allocator, counting the bytes live and their peak.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call goes to `System` unchanged; only the counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            grew(l.size());
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        System.dealloc(p, l);
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = System.realloc(p, l, new);
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            grew(new);
        }
        q
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The tests take turns: the counters are the process's.
static ALONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Layers per token of the profiles measured (each a dispatch with its own label).
const LAYERS: u32 = 100;

struct Cost {
    dispatches: usize,
    file_bytes: u64,
    peak_bytes: usize,
    time: Duration,
}

/// Reads back a profile of `dispatches` and renders the text report and the Perfetto
/// trace from it: the peak of the bytes allocated meanwhile, the time (the best of
/// `tries`).
fn cost(dispatches: usize, tries: usize) -> Cost {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p.json");
    save_profile(&path, &fixtures::long(dispatches as u32 / LAYERS, LAYERS)).unwrap();
    let file_bytes = std::fs::metadata(&path).unwrap().len();
    measured(dispatches, file_bytes, tries, || {
        let p = load_profile(&path).unwrap();
        let text = render_text(&p);
        let mut trace = Vec::new();
        write_perfetto(&p, None, &mut trace).unwrap();
        assert!(text.contains("Ops") && !trace.is_empty());
        drop((p, text, trace));
    })
}

#[test]
fn a_profile_takes_memory_linear_in_its_file_and_time_n_log_n_in_its_dispatches() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    check_laws(
        "profile",
        &[cost(10_000, 3), cost(100_000, 2), cost(1_000_000, 1)],
    );
}

#[test]
fn a_capture_takes_memory_linear_in_its_files_and_time_n_log_n_in_its_dispatches() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    check_laws(
        "capture",
        &[
            capture_cost(10_000, 3),
            capture_cost(100_000, 2),
            capture_cost(1_000_000, 1),
        ],
    );
}

/// Reads back a capture of `dispatches` (100 constant sets of one shader, a dispatch of
/// each per step) and inspects it, as `gpuscope inspect` does.
fn capture_cost(dispatches: usize, tries: usize) -> Cost {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cap");
    fixtures::write_capture(&path, 100, (dispatches / 100) as u32);
    let file_bytes = dir_bytes(&path);
    measured(dispatches, file_bytes, tries, || {
        let c = gpuscope_trace::capture::read_capture(&path).unwrap();
        let i = gpuscope_report::inspect::inspect(&c, 10);
        assert_eq!(c.stream.dispatch_count(), dispatches);
        drop((c, i));
    })
}

fn dir_bytes(dir: &std::path::Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            match e.file_type().unwrap().is_dir() {
                true => dir_bytes(&e.path()),
                false => e.metadata().unwrap().len(),
            }
        })
        .sum()
}

/// The best time of `tries` runs of `work` and the largest peak of bytes allocated.
fn measured(dispatches: usize, file_bytes: u64, tries: usize, work: impl Fn()) -> Cost {
    let mut best = Cost {
        dispatches,
        file_bytes,
        peak_bytes: 0,
        time: Duration::MAX,
    };
    for _ in 0..tries {
        let before = LIVE.load(Ordering::Relaxed);
        PEAK.store(before, Ordering::Relaxed);
        let start = Instant::now();
        work();
        best.time = best.time.min(start.elapsed());
        best.peak_bytes = best
            .peak_bytes
            .max(PEAK.load(Ordering::Relaxed).saturating_sub(before));
    }
    best
}

fn check_laws(what: &str, costs: &[Cost]) {
    for c in costs {
        eprintln!(
            "{what}, {} dispatches: files {} MB, peak {} MB ({:.2}x), {:.3} s",
            c.dispatches,
            c.file_bytes >> 20,
            c.peak_bytes >> 20,
            c.peak_bytes as f64 / c.file_bytes as f64,
            c.time.as_secs_f64()
        );
        // Everything held at once, about one and a half times the JSON read, plus a
        // constant for what any profile takes.
        assert!(
            (c.peak_bytes as u64) <= 3 * c.file_bytes + (16 << 20),
            "{what}, {} dispatches: peak {} bytes for files of {}",
            c.dispatches,
            c.peak_bytes,
            c.file_bytes
        );
    }
    for w in costs.windows(2) {
        let (a, b) = (&w[0], &w[1]);
        let n = |c: &Cost| c.dispatches as f64 * (c.dispatches as f64).ln();
        // n log n grows 12x from 10^5 to 10^6 (11.5x from 10^4); three times that
        // leaves room for a loaded machine and caches, not for a quadratic step (100x).
        let allowed = 3.0 * n(b) / n(a);
        let grew = b.time.as_secs_f64() / a.time.as_secs_f64().max(1e-4);
        assert!(
            grew <= allowed,
            "{what}, {} -> {} dispatches: time grew {grew:.1}x, n log n allows {allowed:.1}x",
            a.dispatches,
            b.dispatches
        );
    }
}
