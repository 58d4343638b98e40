//! llama-bench's tests on the GPU decoder, timed on the wall clock with GPU timing off:
//!
//! - `pp N`: N prompt tokens through batched prefill (what `run` and `profile --prompt`
//!   do with a prompt), from an empty KV cache;
//! - `tg N`: N tokens generated one step at a time with two steps in flight, the decode
//!   loop `profile` records;
//! - `pg P,N`: both, the generation continuing from the prompt's cache.
//!
//! Each repetition starts from position 0 and is timed from its first upload to its last
//! readback. Prompts are seeded pseudo-random tokens, as llama-bench's are random.

use std::time::Instant;

use rand::{Rng, SeedableRng};

use crate::decoder::{DecoderOptions, GpuDecoder};
use crate::error::ModelError;
use crate::generate::{Flow, GenerateOptions, Generator};
use crate::plan::KernelPlan;
use crate::weights::ModelWeights;
use gpuscope_runtime::Gpu;

/// One llama-bench test: prompt tokens, then generated tokens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BenchTest {
    pub n_prompt: u32,
    pub n_gen: u32,
}

/// The generation loop with a decoder of `plan`'s kernels sized for every test of a run:
/// KV cache for the longest, prefill for the largest prompt chunk. Its steps are not recorded into a
/// profile (a benchmark keeps only wall times).
pub fn bench_decoder<'g>(
    gpu: &'g Gpu,
    weights: &ModelWeights,
    tests: &[BenchTest],
    plan: KernelPlan,
) -> Result<Generator<'g>, ModelError> {
    let max_ctx = tests
        .iter()
        .map(|t| t.n_prompt + t.n_gen)
        .max()
        .unwrap_or(1)
        .max(1);
    let batch = tests.iter().map(|t| t.n_prompt).max().unwrap_or(0);
    let decoder = GpuDecoder::with_plan(
        gpu,
        weights,
        DecoderOptions {
            max_ctx,
            read_logits: false,
        },
        plan,
    )?;
    let mut gen = Generator::from_decoder(
        gpu,
        decoder,
        GenerateOptions {
            prefill_batch: crate::PREFILL_BATCH,
            ..Default::default()
        },
        batch,
    )?;
    gen.decoder_mut().set_recorded(false);
    Ok(gen)
}

/// Runs `test` once, from position 0; returns its wall time in ns.
pub fn run_bench_test(
    gen: &mut Generator,
    test: BenchTest,
    first_token: u32,
    seed: u64,
) -> Result<u64, ModelError> {
    let vocab = gen.decoder().config().vocab;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    // The first prompt token is the one `first_token` names (llama-bench: BOS).
    let prompt: Vec<u32> = (0..test.n_prompt)
        .map(|i| {
            if i == 0 {
                first_token
            } else {
                rng.random_range(0..vocab)
            }
        })
        .collect();
    gen.decoder_mut().reset();
    let start = Instant::now();
    if test.n_prompt > 0 {
        gen.prompt(&prompt, |_| Ok(()))?;
    }
    if test.n_gen > 0 {
        // After a prompt the GPU's own last token feeds generation.
        let first = (test.n_prompt == 0).then_some(first_token);
        gen.decode(first, test.n_gen, |_| Ok(Flow::Continue))?;
    }
    Ok(start.elapsed().as_nanos() as u64)
}
