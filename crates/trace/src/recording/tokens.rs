//! Steps to tokens. The layer ends a step at each sync (a fence wait, a queue wait); a
//! program that syncs more than once per token (llama.cpp's Vulkan backend syncs twice:
//! a short step and the long one) would otherwise show two "tokens" per token, with
//! half of them flagged as outliers by the steady-state detection; on NVIDIA it also
//! syncs its transfer queue, a step of its own, for each token's inputs. When the
//! steps' queues and dispatch counts repeat with a period of 2 to [`MAX_PERIOD`] and
//! not of 1, that many consecutive steps make one token (on one device: each device's
//! steps stay on their own clock and track).

use super::StepRecord;

/// The longest period looked for: more syncs per token than this is not a pattern.
pub const MAX_PERIOD: usize = 8;

/// Share of steps that must repeat the step one period before them.
const FIT: f64 = 0.8;

/// How the steps group into tokens: `period` steps each, a token ending after the steps
/// whose index is `phase` modulo the period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grouping {
    pub period: usize,
    pub phase: usize,
}

/// The steps' period, if they have one other than 1; the phase puts each token's end
/// where the program spends the longest off the GPU between steps (its sampling and
/// graph building happen between tokens, not between a token's own syncs).
pub fn detect(steps: &[StepRecord]) -> Option<Grouping> {
    let counts: Vec<(u32, usize)> = steps.iter().map(|s| (s.queue, dispatches(s))).collect();
    if fit(&counts, 1) >= FIT {
        return None;
    }
    let period = (2..=MAX_PERIOD).find(|&p| fit(&counts, p) >= FIT)?;
    let gap_after = |i: usize| host_gap(&steps[i], &steps[i + 1]);
    let phase = (0..period)
        .max_by_key(|&r| {
            let gaps: Vec<u64> = (r..steps.len() - 1)
                .step_by(period)
                .map(gap_after)
                .collect();
            crate::stats::median(gaps).unwrap_or(0)
        })
        .unwrap_or(period - 1);
    Some(Grouping { period, phase })
}

/// The steps in tokens: consecutive runs ending after each step `phase` modulo `period`
/// (the first and the last token may be shorter).
pub fn group(steps: &[StepRecord], g: Grouping) -> Vec<&[StepRecord]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 0..steps.len() {
        if i % g.period == g.phase || i + 1 == steps.len() {
            out.push(&steps[start..=i]);
            start = i + 1;
        }
    }
    out
}

/// Several steps as one: their command buffers, counters and CPU spans together, from
/// the first one's start to the last one's end, on the queue of the step with the most
/// dispatches (the compute queue, not the one that uploaded the inputs).
pub fn merge(steps: &[StepRecord]) -> StepRecord {
    let (first, last) = (&steps[0], &steps[steps.len() - 1]);
    let busiest = steps.iter().max_by_key(|s| dispatches(s)).unwrap_or(first);
    let mut merged = StepRecord {
        index: first.index,
        queue: busiest.queue,
        cpu_start_ns: first.cpu_start_ns,
        cpu_end_ns: last.cpu_end_ns,
        // The token's name says which steps it took in.
        ended_by: format!("{}; steps {}-{}", last.ended_by, first.index, last.index),
        ..Default::default()
    };
    for s in steps {
        merged
            .command_buffers
            .extend(s.command_buffers.iter().cloned());
        merged.cpu_spans.extend(s.cpu_spans.iter().cloned());
        for (k, v) in &s.counters {
            *merged.counters.entry(k.clone()).or_insert(0) += v;
        }
    }
    merged
}

/// The token of step `step`, given each token's first step in order (the last token
/// that starts at or before it; 0 before the first). A buffer's record names the step in
/// progress when it was made; a program that syncs twice a token has two steps a token.
pub fn token_of_step(first_steps: &[u32], step: u32) -> u32 {
    first_steps
        .partition_point(|&f| f <= step)
        .saturating_sub(1) as u32
}

fn dispatches(s: &StepRecord) -> usize {
    s.command_buffers.iter().map(|c| c.dispatches.len()).sum()
}

/// Share of steps (from the `period`-th) whose dispatch count equals the one `period`
/// steps before; 0 with fewer than eight periods of steps to judge from.
fn fit(counts: &[(u32, usize)], period: usize) -> f64 {
    if counts.len() < 8 * period {
        return 0.0;
    }
    let same = (period..counts.len())
        .filter(|&i| counts[i] == counts[i - period])
        .count();
    same as f64 / (counts.len() - period) as f64
}

/// CPU time from `a`'s sync returning to `b`'s first span (its first submit).
fn host_gap(a: &StepRecord, b: &StepRecord) -> u64 {
    let b_start = b
        .cpu_spans
        .iter()
        .map(|s| s.start_ns)
        .min()
        .unwrap_or(b.cpu_start_ns);
    b_start.saturating_sub(a.cpu_end_ns)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recording::{CommandBufferRecord, DispatchRecord, RecordedSpan};

    #[test]
    fn a_step_is_in_the_token_that_starts_at_or_before_it() {
        // Tokens of two steps from step 1 on (the first token is step 0 alone).
        let first_steps = [0, 1, 3, 5];
        let tokens: Vec<u32> = (0..8).map(|s| token_of_step(&first_steps, s)).collect();
        assert_eq!(tokens, [0, 1, 1, 2, 2, 3, 3, 3]);
        assert_eq!(token_of_step(&[], 4), 0);
    }

    /// A step of `n` dispatches from `start` to `end`, its submit at `submit`.
    fn step(index: u32, n: usize, submit: u64, end: u64) -> StepRecord {
        StepRecord {
            index,
            cpu_start_ns: submit,
            cpu_end_ns: end,
            command_buffers: vec![CommandBufferRecord {
                dispatches: vec![DispatchRecord::default(); n],
                ..Default::default()
            }],
            cpu_spans: vec![RecordedSpan {
                name: "submit".into(),
                thread: 1,
                start_ns: submit,
                end_ns: submit + 1,
            }],
            counters: [("submits".to_string(), 1)].into(),
            ..Default::default()
        }
    }

    /// llama.cpp's pattern: a short step (3 dispatches), 10 µs of host work, a long
    /// step (90 dispatches), 200 µs of host work before the next token.
    fn alternating(tokens: u32) -> Vec<StepRecord> {
        let mut t = 0;
        let mut steps = Vec::new();
        for i in 0..tokens {
            steps.push(step(2 * i, 3, t, t + 50));
            t += 60;
            steps.push(step(2 * i + 1, 90, t, t + 1000));
            t += 1200;
        }
        steps
    }

    #[test]
    fn two_syncs_per_token_make_one_token_ending_at_the_long_host_gap() {
        let steps = alternating(20);
        let g = detect(&steps).expect("a period of 2");
        assert_eq!(
            g,
            Grouping {
                period: 2,
                phase: 1
            }
        );
        let tokens = group(&steps, g);
        assert_eq!(tokens.len(), 20);
        let t = merge(tokens[3]);
        assert_eq!(t.index, 6);
        assert_eq!(dispatches(&t), 93);
        assert_eq!(t.counters["submits"], 2);
        assert_eq!((t.cpu_start_ns, t.cpu_end_ns), (3 * 1260, 3 * 1260 + 1060));
    }

    #[test]
    fn a_transfer_queue_step_per_token_joins_the_compute_step_on_its_queue() {
        let steps: Vec<StepRecord> = alternating(20)
            .into_iter()
            .enumerate()
            .map(|(i, mut s)| {
                if i % 2 == 0 {
                    s.queue = 1;
                    s.command_buffers[0].dispatches.clear();
                }
                s
            })
            .collect();
        let g = detect(&steps).expect("a period of 2");
        let t = merge(group(&steps, g)[5]);
        assert_eq!((t.queue, dispatches(&t)), (0, 90));
    }

    #[test]
    fn one_sync_per_token_is_left_alone() {
        let steps: Vec<_> = (0..40)
            .map(|i| step(i, 90, i as u64 * 100, i as u64 * 100 + 80))
            .collect();
        assert_eq!(detect(&steps), None);
    }

    #[test]
    fn too_few_steps_or_no_pattern_are_left_alone() {
        assert_eq!(detect(&alternating(3)), None);
        let irregular: Vec<_> = (0..40)
            .map(|i| {
                step(
                    i,
                    (i as usize * 7919) % 13,
                    i as u64 * 100,
                    i as u64 * 100 + 80,
                )
            })
            .collect();
        assert_eq!(detect(&irregular), None);
    }

    #[test]
    fn a_prompt_step_before_the_pattern_is_its_own_short_token() {
        let mut steps = vec![step(0, 400, 0, 10)];
        steps.extend(alternating(20).into_iter().map(|mut s| {
            s.index += 1;
            s.cpu_start_ns += 100;
            s.cpu_end_ns += 100;
            s.cpu_spans[0].start_ns += 100;
            s
        }));
        let g = detect(&steps).expect("a period of 2");
        let tokens = group(&steps, g);
        assert_eq!(tokens[0].len(), 1, "the prompt alone");
        assert!(tokens[1..tokens.len()].iter().all(|t| t.len() == 2));
    }
}
