//! `replay --per-command`: each unique command (pipeline, bind group, workgroups) timed
//! alone, slowest total first — candle's replay benchmark, with GPU timestamps.
//!
//! Each sample is one dispatch alone in a compute pass whose start and end timestamps
//! bound it, so the time excludes submit and barrier costs of the real stream; batches
//! of [`BenchOptions::batch`] such passes share one submit and one readback. After
//! [`BenchOptions::warmup_batches`] discarded batches, batches continue until the
//! median of all samples moves less than [`BenchOptions::settle`] (relative) from one
//! batch to the next with at least [`BenchOptions::min_samples`], or
//! [`BenchOptions::max_samples`] / [`BenchOptions::max_seconds`] is reached. Zero and
//! negative spans are counted as rejected, not averaged in.
//!
//! Commands run on the replayed buffers and overwrite them (an accumulating gemv adds
//! to its output again on every sample): run output comparisons before this. Without
//! timestamp support the clock is wall time around submit and wait, and says so.

use std::time::Instant;

use gpuscope_trace::capture::{Capture, CommandBench, PerCommandReport, TimingClock};
use gpuscope_trace::stats::percentile;

use crate::capture::error::ReplayError;
use crate::capture::progress::ReplayProgress;
use crate::capture::rebuild::rebuild;
use crate::capture::substitute::Substitution;
use crate::device::{AtomicCounters, Gpu};
use crate::resources::{BindGroup, Pipeline};

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub warmup_batches: u32,
    pub batch: u32,
    pub min_samples: u32,
    pub max_samples: u32,
    /// Relative change of the median that counts as settled (0.02 = 2%).
    pub settle: f64,
    /// Per command.
    pub max_seconds: f64,
}

impl Default for BenchOptions {
    fn default() -> Self {
        BenchOptions {
            warmup_batches: 1,
            batch: 8,
            min_samples: 16,
            max_samples: 256,
            settle: 0.02,
            max_seconds: 2.0,
        }
    }
}

/// Benchmarks every unique command of `capture` on `gpu`.
pub fn bench_commands(
    gpu: &Gpu,
    capture: &Capture,
    subs: &[Substitution],
    opts: &BenchOptions,
    progress: &ReplayProgress,
) -> Result<PerCommandReport, ReplayError> {
    let rebuilt = rebuild(gpu, capture, subs, true)?;
    let clock = if gpu.features().contains(wgpu::Features::TIMESTAMP_QUERY) {
        TimingClock::GpuTimestamps
    } else {
        TimingClock::WallClockWithSync
    };
    let mut timer = Timer::new(gpu, clock, opts.batch.max(1));
    let counts = capture.command_counts();
    let mut commands = Vec::with_capacity(counts.len());
    for ((p, bg, wg), count, d) in counts {
        let pipeline = &capture.commands.pipelines[p];
        let shader = &capture.commands.shaders[pipeline.shader].name;
        let substituted = subs.iter().any(|s| &s.shader == shader);
        progress.enter(format!(
            "benchmarking `{}` ({}{})",
            d.label,
            pipeline.name,
            if substituted {
                ", a substituted kernel"
            } else {
                ""
            }
        ));
        let (samples, rejected, stable) = timer.measure(
            gpu,
            &rebuilt.pipelines[p],
            &rebuilt.bind_groups[bg],
            wg,
            opts,
        )?;
        let mut sorted = samples.clone();
        sorted.sort_unstable();
        let median = percentile(&sorted, 50.0).unwrap_or(0);
        commands.push(CommandBench {
            pipeline: capture.commands.pipelines[p].name.clone(),
            op: d.op.clone(),
            label: d.label.clone(),
            bind_group: bg,
            workgroups: wg,
            count,
            samples: samples.len() as u32,
            rejected,
            median_ns: median,
            p10_ns: percentile(&sorted, 10.0).unwrap_or(0),
            p90_ns: percentile(&sorted, 90.0).unwrap_or(0),
            min_ns: sorted.first().copied().unwrap_or(0),
            max_ns: sorted.last().copied().unwrap_or(0),
            stable,
            total_ns: median * count,
            share_percent: 0.0,
        });
    }
    timer.release(gpu);
    let total: u64 = commands.iter().map(|c| c.total_ns).sum();
    for c in &mut commands {
        c.share_percent = if total > 0 {
            100.0 * c.total_ns as f64 / total as f64
        } else {
            0.0
        };
    }
    commands.sort_by(|a, b| {
        b.total_ns
            .cmp(&a.total_ns)
            .then(a.pipeline.cmp(&b.pipeline))
    });
    Ok(PerCommandReport {
        capture: capture.root().display().to_string(),
        adapter: gpu.adapter_desc(),
        clock,
        stream_dispatches: capture.stream.dispatch_count() as u64,
        total_ns: total,
        method: format!(
            "{} warm-up batch(es) of {}; then batches until the median moves < {:.0}% with >= {} samples, at most {} samples or {:.1} s per command",
            opts.warmup_batches,
            opts.batch,
            opts.settle * 100.0,
            opts.min_samples,
            opts.max_samples,
            opts.max_seconds
        ),
        commands,
    })
}

/// Query set, resolve and staging buffers for one batch, made once for all commands.
struct Timer {
    clock: TimingClock,
    batch: u32,
    queries: Option<(wgpu::QuerySet, wgpu::Buffer)>,
    staging: Option<wgpu::Buffer>,
    period_ns: f64,
}

impl Timer {
    fn new(gpu: &Gpu, clock: TimingClock, batch: u32) -> Timer {
        let bytes = 16 * batch as u64;
        let (queries, staging) = match clock {
            TimingClock::GpuTimestamps => {
                let qs = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
                    label: Some("gpuscope.bench_timestamps"),
                    ty: wgpu::QueryType::Timestamp,
                    count: 2 * batch,
                });
                let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("gpuscope.bench_resolve"),
                    size: bytes,
                    usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                });
                AtomicCounters::add(&gpu.counters.buffers_created, 1);
                (Some((qs, resolve)), Some(gpu.staging_buffer(bytes)))
            }
            TimingClock::WallClockWithSync => (None, None),
        };
        Timer {
            clock,
            batch,
            queries,
            staging,
            period_ns: gpu.queue.get_timestamp_period() as f64,
        }
    }

    fn release(self, gpu: &Gpu) {
        if let Some(s) = self.staging {
            gpu.staging.give(s);
        }
    }

    /// One batch: `batch` samples in ns (None for a rejected span).
    fn batch(
        &self,
        gpu: &Gpu,
        p: &Pipeline,
        bg: &BindGroup,
        wg: [u32; 3],
    ) -> Result<Vec<Option<u64>>, ReplayError> {
        let mut encoder = gpu.device.create_command_encoder(&Default::default());
        let start = Instant::now();
        for i in 0..self.batch {
            let timestamp_writes =
                self.queries
                    .as_ref()
                    .map(|(qs, _)| wgpu::ComputePassTimestampWrites {
                        query_set: qs,
                        beginning_of_pass_write_index: Some(2 * i),
                        end_of_pass_write_index: Some(2 * i + 1),
                    });
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("gpuscope.bench"),
                timestamp_writes,
            });
            pass.set_pipeline(p.raw());
            pass.set_bind_group(0, bg.raw(), &[]);
            pass.dispatch_workgroups(wg[0], wg[1], wg[2]);
        }
        AtomicCounters::add(&gpu.counters.passes, self.batch as u64);
        AtomicCounters::add(&gpu.counters.dispatches, self.batch as u64);
        let bytes = 16 * self.batch as u64;
        if let (Some((qs, resolve)), Some(staging)) = (&self.queries, &self.staging) {
            encoder.resolve_query_set(qs, 0..2 * self.batch, resolve, 0);
            encoder.copy_buffer_to_buffer(resolve, 0, staging, 0, bytes);
        }
        gpu.queue.submit([encoder.finish()]);
        AtomicCounters::add(&gpu.counters.submits, 1);
        match (self.clock, &self.staging) {
            (TimingClock::GpuTimestamps, Some(staging)) => {
                let raw = gpu.map_read(staging, bytes, "benchmark timestamps")?;
                let ticks: Vec<u64> = raw
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
                    .collect();
                Ok(ticks
                    .chunks_exact(2)
                    .map(|t| match (t[0], t[1]) {
                        (s, e) if s == 0 || e == 0 || e <= s => None,
                        (s, e) => Some(((e - s) as f64 * self.period_ns) as u64),
                    })
                    .collect())
            }
            _ => {
                gpu.wait_idle()?;
                let per = start.elapsed().as_nanos() as u64 / self.batch as u64;
                Ok(vec![Some(per); self.batch as usize])
            }
        }
    }

    /// Samples (ns), rejected count, and whether the median settled.
    fn measure(
        &mut self,
        gpu: &Gpu,
        p: &Pipeline,
        bg: &BindGroup,
        wg: [u32; 3],
        o: &BenchOptions,
    ) -> Result<(Vec<u64>, u32, bool), ReplayError> {
        for _ in 0..o.warmup_batches {
            self.batch(gpu, p, bg, wg)?;
        }
        let start = Instant::now();
        let mut samples = Vec::new();
        let mut rejected = 0u32;
        let mut previous: Option<u64> = None;
        loop {
            for s in self.batch(gpu, p, bg, wg)? {
                match s {
                    Some(ns) => samples.push(ns),
                    None => rejected += 1,
                }
            }
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            let median = percentile(&sorted, 50.0);
            if samples.len() as u32 >= o.min_samples {
                if let (Some(m), Some(prev)) = (median, previous) {
                    let moved = (m as f64 - prev as f64).abs() / (prev.max(1) as f64);
                    if moved < o.settle {
                        return Ok((samples, rejected, true));
                    }
                }
            }
            if samples.len() as u32 + rejected >= o.max_samples
                || start.elapsed().as_secs_f64() > o.max_seconds
            {
                return Ok((samples, rejected, false));
            }
            previous = median;
        }
    }
}
