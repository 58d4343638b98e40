//! Nothing is allocated per dispatch: the recorder's share of the allocations made while
//! encoding a pass does not grow with the number of dispatches (its own binary: the
//! counting allocator sees every allocation of the process).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};

struct Counting;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static A: Counting = Counting;

#[path = "common.rs"]
// The alloc test uses only part of the shared test program.
#[allow(dead_code)]
mod common;

use gpuscope_record::{Cost, DispatchInfo, Recorder, RecorderOptions, TimingMode, TimingRequest};

/// Allocations made while encoding `n` dispatches, plain or through the recorder (in a
/// step, timing off, after a first step has warmed every cache).
fn allocations(rec: &Recorder, p: &common::Program, n: u32, wrapped: bool) -> u64 {
    let info = DispatchInfo {
        op: Some(rec.name("add_one")),
        label: Some(rec.name("a += 1")),
        layer: Some(0),
        cost: Cost { bytes: 8, flops: 1 },
    };
    rec.begin_step("s").unwrap();
    let mut encoder = rec.device().create_command_encoder(&Default::default());
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    if wrapped {
        let mut pass = rec.begin_compute_pass(&mut encoder, &Default::default());
        for _ in 0..n {
            pass.set_dispatch_info(info);
            pass.set_pipeline(&p.add_one);
            pass.set_bind_group(0, &p.bg_add, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
    } else {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        for _ in 0..n {
            pass.set_pipeline(&p.add_one);
            pass.set_bind_group(0, &p.bg_add, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    drop(encoder);
    rec.end_step().unwrap();
    after - before
}

#[test]
fn the_recorder_allocates_nothing_per_dispatch() {
    let Some(d) = common::device(wgpu::Features::empty()) else {
        return;
    };
    let rec = Recorder::new(
        &d.device,
        &d.queue,
        RecorderOptions {
            timing: TimingRequest::Exactly(TimingMode::Off),
            ..Default::default()
        },
    )
    .unwrap();
    let p = common::Program::new(&rec);
    // Warm every cache (names, access lists, the step's vectors grow once).
    allocations(&rec, &p, 4000, true);
    let extra = |n| allocations(&rec, &p, n, true).saturating_sub(allocations(&rec, &p, n, false));
    let (small, large) = (extra(200), extra(2000));
    // The step's dispatch list grows by doubling: a handful of reallocations, not one
    // per dispatch.
    assert!(
        large <= small + 8,
        "the recorder's allocations grow with dispatches: {small} extra for 200, {large} for 2000"
    );
}
