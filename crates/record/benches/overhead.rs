//! What the recorder adds to a program's CPU time per dispatch: encoding a pass of
//! dispatches (set pipeline, set bind group, dispatch) with plain wgpu and through the
//! recorder's pass, timing off and timing on (the device's finest mode), in one step.
//! The difference per dispatch is the wrapper's cost (target: <= 1 us with timing off).
//!
//! `cargo bench -p gpuscope-record --bench overhead` (on lavapipe without a GPU).

use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use gpuscope_record::{Cost, DispatchInfo, Recorder, RecorderOptions, TimingMode, TimingRequest};

const WGSL: &str = "@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&v)) { v[g.x] = v[g.x] + 1.0; } }";

/// Dispatches per measured pass.
const N: u32 = 256;

fn setup(timing: TimingRequest) -> Option<(Recorder, wgpu::ComputePipeline, wgpu::BindGroup)> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default())).ok()?;
    let features = adapter.features() & gpuscope_record::features_for(Default::default());
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: features,
        ..Default::default()
    }))
    .ok()?;
    let rec = Recorder::new(
        &device,
        &queue,
        RecorderOptions {
            timing,
            ..Default::default()
        },
    )
    .ok()?;
    let module = rec.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("add"),
        source: wgpu::ShaderSource::Wgsl(WGSL.into()),
    });
    let pipeline = rec.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("add"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let buffer = rec.create_buffer(&wgpu::BufferDescriptor {
        label: Some("v"),
        size: 256,
        usage: wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    let bind_group = rec.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: buffer.as_entire_binding(),
        }],
    });
    Some((rec, pipeline, bind_group))
}

fn encode(c: &mut Criterion) {
    for (name, timing) in [
        ("off", TimingRequest::Exactly(TimingMode::Off)),
        ("finest", TimingRequest::Auto),
    ] {
        let Some((rec, pipeline, bind_group)) = setup(timing) else {
            eprintln!("no adapter: skipping the overhead benchmark");
            return;
        };
        let info = DispatchInfo {
            op: Some(rec.name("add")),
            label: Some(rec.name("v += 1")),
            layer: None,
            cost: Cost {
                bytes: 512,
                flops: 64,
            },
        };
        let mut group = c.benchmark_group(format!("encode {N} dispatches (timing {name})"));
        // Only the encoding is timed (`iter_custom`): each iteration's command buffer is
        // then submitted and waited for untimed, so steps close and timestamp slots are
        // reused as in a real program.
        let wait = || rec.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        group.bench_function("plain wgpu", |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    let start = Instant::now();
                    let mut encoder = rec.device().create_command_encoder(&Default::default());
                    {
                        let mut pass = encoder.begin_compute_pass(&Default::default());
                        for _ in 0..N {
                            pass.set_pipeline(&pipeline);
                            pass.set_bind_group(0, &bind_group, &[]);
                            pass.dispatch_workgroups(1, 1, 1);
                        }
                    }
                    let commands = encoder.finish();
                    timed += start.elapsed();
                    rec.queue().submit([commands]);
                    wait();
                }
                timed
            })
        });
        group.bench_function("recorder", |b| {
            b.iter_custom(|iters| {
                let mut timed = Duration::ZERO;
                for _ in 0..iters {
                    rec.begin_step("bench").unwrap();
                    let start = Instant::now();
                    let mut encoder = rec.device().create_command_encoder(&Default::default());
                    {
                        let mut pass = rec.begin_compute_pass(&mut encoder, &Default::default());
                        for _ in 0..N {
                            pass.set_dispatch_info(info);
                            pass.set_pipeline(&pipeline);
                            pass.set_bind_group(0, &bind_group, &[]);
                            pass.dispatch_workgroups(1, 1, 1);
                        }
                    }
                    let commands = encoder.finish();
                    timed += start.elapsed();
                    rec.submit([commands]);
                    rec.end_step().unwrap();
                    wait();
                }
                // Keep the profile from growing across iterations (untimed).
                let _ = rec.take_profile();
                timed
            })
        });
        group.finish();
    }
}

criterion_group!(benches, encode);
criterion_main!(benches);
