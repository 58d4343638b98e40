//! A small MLP on plain wgpu (three tiled matrix products with bias and ReLU, a new
//! input batch every step, the output read back after each step), twice: `mlp_plain.rs`
//! knows nothing of gpuscope; `mlp.rs` is the same program instrumented with
//! gpuscope-record in 15 changed lines (the diff is in docs/instrument-your-program.md).
//! The instrumented one writes `OUT/profile.json` and `OUT/capture/` and prints the
//! report; `gpuscope report`, `inspect` and `replay --per-command` read them.
//!
//! Run: `cargo run --example mlp_plain -- [STEPS]` or
//! `cargo run --example mlp -- [STEPS] [OUT]`

const WGSL: &str = include_str!("mlp.wgsl");
/// Input width, two hidden widths, output width; rows per batch.
const DIMS: [u32; 4] = [256, 512, 512, 128];
const BATCH: u32 = 32;

/// Deterministic values in [-0.5, 0.5): never benchmark on zeros.
fn values(n: u32, seed: u32) -> Vec<f32> {
    let mut x = seed.wrapping_mul(2654435761).wrapping_add(1);
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            (x >> 8) as f32 / (1 << 24) as f32 - 0.5
        })
        .collect()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let checksum = run(&std::env::args().skip(1).collect::<Vec<_>>())?;
    println!("output checksum {checksum:.6}");
    Ok(())
}

/// Runs `args[0]` steps (default 8); returns the sum of every output read back.
/// (Not rustfmt-formatted, so the diff between the two files is the instrumented lines.)
#[rustfmt::skip]
pub fn run(args: &[String]) -> Result<f64, Box<dyn std::error::Error>> {
    use gpuscope_record::{Cost, Recorder, RecorderOptions};
    let steps: u32 = args.first().map(|s| s.parse()).transpose()?.unwrap_or(8);
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter = pollster::block_on(instance.request_adapter(&Default::default()))?;
    // Timestamps where the adapter has them (a profiler can then time each dispatch).
    let timestamps =
        wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: adapter.features() & timestamps,
        ..Default::default()
    }))?;
    let rec = Recorder::new(&device, &queue, RecorderOptions::with_capture("mlp"))?;
    let module = rec.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("mlp"),
        source: wgpu::ShaderSource::Wgsl(WGSL.into()),
    });
    let storage =
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC | wgpu::BufferUsages::COPY_DST;
    let buffer = |label: &str, data: &[f32]| {
        let b = rec.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size: 4 * data.len() as u64,
            usage: storage,
            mapped_at_creation: false,
        });
        queue.write_buffer(&b, 0, bytemuck::cast_slice(data));
        b
    };
    let input = buffer("input", &values(BATCH * DIMS[0], 0));
    let mut activations = vec![input];
    let mut layers = Vec::new();
    for (l, k_n) in DIMS.windows(2).enumerate() {
        let (k, n) = (k_n[0], k_n[1]);
        let w = buffer(&format!("w{l}"), &values(k * n, 10 + l as u32));
        let bias = buffer(&format!("b{l}"), &values(n, 20 + l as u32));
        let y = buffer(&format!("h{l}"), &vec![0.0; (BATCH * n) as usize]);
        let constants = [
            ("K", k as f64),
            ("N", n as f64),
            ("RELU", (l + 2 < DIMS.len()) as u32 as f64),
        ];
        let pipeline = rec.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
            label: Some("linear"),
            layout: None,
            module: &module,
            entry_point: Some("main"),
            compilation_options: wgpu::PipelineCompilationOptions {
                constants: &constants,
                zero_initialize_workgroup_memory: true,
            },
            cache: None,
        });
        let entries: Vec<wgpu::BindGroupEntry> = [activations.last().unwrap(), &w, &bias, &y]
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: b.as_entire_binding(),
            })
            .collect();
        let bind_group = rec.create_bind_group(&wgpu::BindGroupDescriptor {
            label: None,
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        layers.push((pipeline, bind_group, n, k));
        activations.push(y);
    }
    let out_bytes = 4 * (BATCH * DIMS[3]) as u64;
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: out_bytes,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut checksum = 0.0f64;
    let pass_desc = wgpu::ComputePassDescriptor {
        label: Some("mlp"),
        timestamp_writes: None,
    };
    for step in 0..steps {
        let input = values(BATCH * DIMS[0], step);
        rec.begin_step(&format!("step {step}"))?;
        rec.write_buffer(&activations[0], 0, bytemuck::cast_slice(&input));
        let mut encoder = device.create_command_encoder(&Default::default());
        {
            let mut pass = rec.begin_compute_pass(&mut encoder, &pass_desc);
            for (l, (pipeline, bind_group, n, k)) in layers.iter().enumerate() {
                pass.describe("linear", &format!("L{l}"), None, Cost::matmul(BATCH, *k, *n, 4));
                pass.set_pipeline(pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups(n.div_ceil(16), BATCH.div_ceil(16), 1);
            }
        }
        encoder.copy_buffer_to_buffer(activations.last().unwrap(), 0, &staging, 0, out_bytes);
        rec.submit([encoder.finish()]);
        staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
        rec.poll(wgpu::PollType::wait_indefinitely())?;
        let out: Vec<f32> = bytemuck::pod_collect_to_vec(&staging.slice(..).get_mapped_range()?);
        staging.unmap();
        checksum += out.iter().map(|&v| v as f64).sum::<f64>();
        rec.end_step()?;
    }
    rec.finish_into(std::path::Path::new(args.get(1).map_or("mlp-out", String::as_str)))?;
    Ok(checksum)
}
