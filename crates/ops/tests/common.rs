//! Shared test setup: one GPU device for the whole test binary, seeded random inputs.
#![allow(dead_code)]

use gpuscope_ops::gemv::{GemvTuning, GemvVariant, MAX_ROWS_PER_THREAD};
use gpuscope_runtime::{Dispatch, Gpu, GpuBuffer, Graph, Section};
use rand::{rngs::StdRng, Rng, SeedableRng};
use rand_distr::{Distribution, Normal};

/// The test binary's GPU, or `None` on a developer machine with no adapter
/// (panics in CI; see `gpuscope_runtime::testing::shared_gpu`).
pub fn gpu() -> Option<&'static Gpu> {
    gpuscope_runtime::testing::shared_gpu()
}

pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// `variant`'s tunings with every lane count up to `max_lanes` (1, 2, 4, ...) and every
/// rows-per-lane, each at least once ([`each_choice`]).
pub fn tunings(variant: GemvVariant, max_lanes: u32) -> Vec<GemvTuning> {
    let lanes: Vec<u32> = std::iter::successors(Some(1u32), |t| t.checked_mul(2))
        .take_while(|&t| t <= max_lanes)
        .collect();
    let rows: Vec<u32> = (1..=MAX_ROWS_PER_THREAD).collect();
    each_choice(&lanes, &rows)
        .into_iter()
        .map(|(threads_per_row, rows_per_thread)| GemvTuning {
            variant,
            threads_per_row,
            rows_per_thread,
        })
        .collect()
}

/// Every value of `a` and every value of `b`, each at least once, in pairs (as many as
/// the longer list has values), rather than their full product. A kernel's shape and
/// tuning are override constants, so each distinct pair is a pipeline compiled: half a
/// second to a few seconds each on lavapipe with its shader cache cold (a fresh CI
/// machine), where the ops tests took 428 s with the products against 60 s warm. The
/// pairs keep every boundary case of each dimension (one row, a workgroup partly past
/// the end, one block, odd widths); what they drop is the product of independent ones.
pub fn each_choice<A: Copy, B: Copy>(a: &[A], b: &[B]) -> Vec<(A, B)> {
    let n = a.len().max(b.len());
    if a.is_empty() || b.is_empty() {
        return Vec::new();
    }
    (0..n).map(|i| (a[i % a.len()], b[i % b.len()])).collect()
}

/// Weights at the scale of a trained LLM (σ ≈ 0.02) with an occasional 8× outlier, so
/// blocks have uneven ranges as real ones do. Never all zeros.
pub fn weights(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let normal = Normal::new(0.0f32, 0.02).unwrap();
    (0..n)
        .map(|_| {
            let v = normal.sample(rng);
            if rng.random_range(0..64) == 0 {
                v * 8.0
            } else {
                v
            }
        })
        .collect()
}

/// Activations after rms_norm: unit scale.
pub fn activations(rng: &mut StdRng, n: usize) -> Vec<f32> {
    let normal = Normal::new(0.0f32, 1.0).unwrap();
    (0..n).map(|_| normal.sample(rng)).collect()
}

pub fn f32_bytes(v: &[f32]) -> Vec<u8> {
    bytemuck::cast_slice(v).to_vec()
}

pub fn read_f32(gpu: &Gpu, buf: &GpuBuffer) -> Vec<f32> {
    let bytes = gpu.read_buffer(buf).expect("readback");
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// Runs `dispatches` as one pass and waits.
pub fn run(gpu: &Gpu, dispatches: Vec<Dispatch>) {
    let graph = Graph {
        sections: vec![Section::new("test", None, dispatches)],
    };
    gpu.run_once(&graph).expect("run_once");
}
