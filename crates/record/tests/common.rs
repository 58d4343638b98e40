//! A device of the test's own on the best adapter (lavapipe without a GPU), opened as a
//! program would: with the timestamp features the adapter offers.

pub struct Device {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
}

/// `None` (with the reason printed) on a developer machine without an adapter; with `CI`
/// set a missing adapter fails the test instead.
pub fn device(features: wgpu::Features) -> Option<Device> {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle_from_env());
    let adapter =
        match pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
        {
            Ok(a) => a,
            Err(e) => {
                if std::env::var_os("CI").is_some() {
                    panic!("no GPU adapter in CI: {e}");
                }
                skipped(&format!("no adapter: {e}"));
                return None;
            }
        };
    let features = features & adapter.features();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_features: features,
        required_limits: adapter.limits(),
        ..Default::default()
    }))
    .expect("device");
    Some(Device { device, queue })
}

/// Prints and counts a skipped GPU test as `gpuscope_runtime::testing::skipped` does
/// (this crate sits below the runtime): a line in `$GPUSCOPE_SKIP_LOG` when set.
pub fn skipped(why: &str) {
    use std::io::Write;
    eprintln!("skipped: {why}");
    if let Some(path) = std::env::var_os("GPUSCOPE_SKIP_LOG") {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path);
        file.and_then(|mut f| writeln!(f, "gpuscope-record test: {why}"))
            .expect("counting a skipped test");
    }
}

pub const ALL_TIMESTAMPS: wgpu::Features =
    wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

/// A chain of kernels over one vector: `add_one` (read-write), `copy` (reads a, writes b)
/// and `scale` (reads b, writes a).
pub const WGSL: &str = r#"
@group(0) @binding(0) var<storage, read_write> a: array<f32>;
@group(0) @binding(1) var<storage, read_write> b: array<f32>;
@group(1) @binding(0) var<storage, read> k: array<f32>;
@compute @workgroup_size(64) fn add_one(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&a)) { a[g.x] = a[g.x] + 1.0; }
}
@compute @workgroup_size(64) fn copy(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&a)) { b[g.x] = a[g.x] * k[0]; }
}
"#;

pub const SCALE_WGSL: &str = r#"
@group(0) @binding(0) var<storage, read> src: array<f32>;
@group(0) @binding(1) var<storage, read_write> dst: array<f32>;
override FACTOR: f32 = 2.0;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < arrayLength(&dst)) { dst[g.x] = FACTOR * src[g.x]; }
}
"#;

/// A three-kernel program on one vector, made through the recorder:
/// `add_one(a)`, `copy(a -> b, times k)`, `scale(b -> a)`.
pub struct Program {
    pub add_one: wgpu::ComputePipeline,
    pub copy: wgpu::ComputePipeline,
    pub scale: wgpu::ComputePipeline,
    pub a: wgpu::Buffer,
    pub bg_add: wgpu::BindGroup,
    pub bg_copy: wgpu::BindGroup,
    pub bg_k: wgpu::BindGroup,
    pub bg_scale: wgpu::BindGroup,
}

pub const N: u64 = 1024;

impl Program {
    pub fn new(rec: &gpuscope_record::Recorder) -> Program {
        let chain = rec.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("chain"),
            source: wgpu::ShaderSource::Wgsl(WGSL.into()),
        });
        let scale_module = rec.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("scale"),
            source: wgpu::ShaderSource::Wgsl(SCALE_WGSL.into()),
        });
        let pipeline =
            |module: &wgpu::ShaderModule, entry: &str, label: &str, constants: &[(&str, f64)]| {
                rec.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(label),
                    layout: None,
                    module,
                    entry_point: Some(entry),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        constants,
                        zero_initialize_workgroup_memory: true,
                    },
                    cache: None,
                })
            };
        let add_one = pipeline(&chain, "add_one", "add_one", &[]);
        let copy = pipeline(&chain, "copy", "copy", &[]);
        let scale = pipeline(&scale_module, "main", "scale", &[("FACTOR", 0.5)]);
        let buffer = |label: &str, n: u64| {
            rec.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: 4 * n,
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::COPY_SRC
                    | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        };
        let a = buffer("a", N);
        let b = buffer("b", N);
        let k = buffer("k", 1);
        let data: Vec<f32> = (0..N).map(|i| i as f32).collect();
        rec.write_buffer(&a, 0, bytemuck::cast_slice(&data));
        rec.write_buffer(&k, 0, bytemuck::bytes_of(&3.0f32));
        let group = |p: &wgpu::ComputePipeline, index: u32, bufs: &[&wgpu::Buffer]| {
            let entries: Vec<wgpu::BindGroupEntry> = bufs
                .iter()
                .enumerate()
                .map(|(i, b)| wgpu::BindGroupEntry {
                    binding: i as u32,
                    resource: b.as_entire_binding(),
                })
                .collect();
            rec.create_bind_group(&wgpu::BindGroupDescriptor {
                label: None,
                layout: &p.get_bind_group_layout(index),
                entries: &entries,
            })
        };
        Program {
            bg_add: group(&add_one, 0, &[&a]),
            bg_copy: group(&copy, 0, &[&a, &b]),
            bg_k: group(&copy, 1, &[&k]),
            bg_scale: group(&scale, 0, &[&b, &a]),
            add_one,
            copy,
            scale,
            a,
        }
    }

    /// One pass of the three dispatches, described for the profile.
    pub fn encode(&self, rec: &gpuscope_record::Recorder, encoder: &mut wgpu::CommandEncoder) {
        let wg = (N as u32).div_ceil(64);
        let cost = gpuscope_record::Cost {
            bytes: 8 * N,
            flops: N,
        };
        let mut pass = rec.begin_compute_pass(
            encoder,
            &wgpu::ComputePassDescriptor {
                label: Some("chain"),
                timestamp_writes: None,
            },
        );
        pass.set_pipeline(&self.add_one);
        pass.set_bind_group(0, &self.bg_add, &[]);
        pass.describe("add_one", "a += 1", Some(0), cost);
        pass.dispatch_workgroups(wg, 1, 1);
        pass.set_pipeline(&self.copy);
        pass.set_bind_group(0, &self.bg_copy, &[]);
        pass.set_bind_group(1, &self.bg_k, &[]);
        pass.describe("copy", "b = a * k", Some(0), cost);
        pass.dispatch_workgroups(wg, 1, 1);
        pass.set_pipeline(&self.scale);
        pass.set_bind_group(0, &self.bg_scale, &[]);
        pass.describe("scale", "a = b / 2", Some(0), cost);
        pass.dispatch_workgroups(wg, 1, 1);
    }

    /// `steps` steps of one pass, one submit and one wait each.
    pub fn run(&self, rec: &gpuscope_record::Recorder, steps: u32) {
        for i in 0..steps {
            rec.begin_step(&format!("step {i}")).unwrap();
            let mut encoder = rec.device().create_command_encoder(&Default::default());
            self.encode(rec, &mut encoder);
            rec.submit([encoder.finish()]);
            rec.poll(wgpu::PollType::wait_indefinitely()).unwrap();
            rec.end_step().unwrap();
        }
    }
}
