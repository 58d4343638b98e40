//! A small Vulkan compute program written directly against `ash`, with work counted by
//! hand, for the `attach` tests: run under `gpuscope attach`, the profile must show
//! exactly these counts.
//!
//! Setup (before the first step): 1 shader module, 1 pipeline, 2 buffers, 2 memory
//! allocations, 1 descriptor write. Then `--steps N` steps, each one command buffer of:
//!
//! | command | per step |
//! |---|---|
//! | `vkCmdFillBuffer` (256 bytes) | 1 |
//! | `vkCmdPipelineBarrier` with 1 buffer barrier | 3 (before each dispatch) |
//! | `vkCmdDispatch` (4 workgroups) | 3 |
//! | `vkCmdCopyBuffer` (256 bytes) | 1 |
//! | `vkQueueSubmit` with a fence, then `vkWaitForFences` | 1, 1 |
//!
//! Options: `--steps N` (default 3), `--sleep-ms M` between steps, `--exit-code C` (exit
//! with C after the work), `--named` (name the pipeline `counted_add` and label each
//! dispatch `add.N` with VK_EXT_debug_utils), `--dispatches K` (K barriers and
//! dispatches a command buffer in place of 3), `--threads T` (each step records T
//! command buffers at once, one per thread and command pool, labels `tI.add.N`, all in
//! the step's one submit), `--interleave` (with `--threads T`, one thread records the T
//! command buffers a command at a time, round-robin: legal in Vulkan, and a layer
//! that caches "the buffer this thread records" must not get lost).

use ash::vk;

const WGSL: &str = "@group(0) @binding(0) var<storage, read_write> v: array<u32>;
@compute @workgroup_size(16) fn main(@builtin(global_invocation_id) i: vec3<u32>) {
    if i.x < arrayLength(&v) { v[i.x] = v[i.x] + 1u; }
}";

const BYTES: u64 = 256;

struct Options {
    steps: u32,
    sleep_ms: u64,
    exit_code: i32,
    named: bool,
    /// Enable Vulkan 1.2's `hostQueryReset` (the layer then resets its queries from the
    /// host instead of in the command buffer).
    host_query_reset: bool,
    /// After the steps, record this many dispatches into a command buffer as
    /// llama.cpp does (two labels, a bind, a barrier each; never submitted) and print
    /// the CPU time per dispatch: what a layer adds on the program's thread.
    record_cost: u32,
    dispatches: u32,
    threads: u32,
    interleave: bool,
}

fn options() -> Options {
    let mut o = Options {
        steps: 3,
        sleep_ms: 0,
        exit_code: 0,
        named: false,
        host_query_reset: false,
        record_cost: 0,
        dispatches: 3,
        threads: 1,
        interleave: false,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = || args.get(i + 1).and_then(|v| v.parse::<i64>().ok());
        match args[i].as_str() {
            "--steps" => o.steps = value().expect("--steps N") as u32,
            "--sleep-ms" => o.sleep_ms = value().expect("--sleep-ms M") as u64,
            "--exit-code" => o.exit_code = value().expect("--exit-code C") as i32,
            "--record-cost" => o.record_cost = value().expect("--record-cost N") as u32,
            "--dispatches" => o.dispatches = value().expect("--dispatches K") as u32,
            "--threads" => o.threads = (value().expect("--threads T") as u32).max(1),
            "--named" => {
                o.named = true;
                i -= 1;
            }
            "--interleave" => {
                o.interleave = true;
                i -= 1;
            }
            "--host-query-reset" => {
                o.host_query_reset = true;
                i -= 1;
            }
            other => panic!("unknown option {other}"),
        }
        i += 2;
    }
    o
}

fn spirv() -> Vec<u32> {
    let module = naga::front::wgsl::parse_str(WGSL).expect("WGSL");
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .expect("valid");
    naga::back::spv::write_vec(&module, &info, &Default::default(), None).expect("SPIR-V")
}

fn main() {
    let o = options();
    unsafe { run(&o) };
    std::process::exit(o.exit_code);
}

unsafe fn run(o: &Options) {
    let entry = ash::Entry::load().expect("the Vulkan loader");
    let api = if o.host_query_reset {
        vk::API_VERSION_1_2
    } else {
        vk::API_VERSION_1_1
    };
    let app = vk::ApplicationInfo::default().api_version(api);
    let exts = [ash::ext::debug_utils::NAME.as_ptr()];
    let info = vk::InstanceCreateInfo::default()
        .application_info(&app)
        .enabled_extension_names(if o.named { &exts } else { &[] });
    let instance = entry.create_instance(&info, None).expect("instance");
    let physical = instance.enumerate_physical_devices().expect("devices")[0];
    let family = instance
        .get_physical_device_queue_family_properties(physical)
        .iter()
        .position(|f| f.queue_flags.contains(vk::QueueFlags::COMPUTE))
        .expect("a compute queue") as u32;
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(family)
        .queue_priorities(&priorities)];
    let mut features12 = vk::PhysicalDeviceVulkan12Features::default().host_query_reset(true);
    let mut device_info = vk::DeviceCreateInfo::default().queue_create_infos(&queues);
    if o.host_query_reset {
        device_info = device_info.push_next(&mut features12);
    }
    let device = instance
        .create_device(physical, &device_info, None)
        .expect("device");
    let queue = device.get_device_queue(family, 0);
    let debug = o
        .named
        .then(|| ash::ext::debug_utils::Device::new(&instance, &device));

    // Two host-visible buffers: the one the kernel adds to, and the copy's target.
    let memory_props = instance.get_physical_device_memory_properties(physical);
    let mut buffers = Vec::new();
    for _ in 0..2 {
        let b = device
            .create_buffer(
                &vk::BufferCreateInfo::default().size(BYTES).usage(
                    vk::BufferUsageFlags::STORAGE_BUFFER
                        | vk::BufferUsageFlags::TRANSFER_SRC
                        | vk::BufferUsageFlags::TRANSFER_DST,
                ),
                None,
            )
            .expect("buffer");
        let req = device.get_buffer_memory_requirements(b);
        let ty = (0..memory_props.memory_type_count)
            .find(|&t| {
                req.memory_type_bits & (1 << t) != 0
                    && memory_props.memory_types[t as usize]
                        .property_flags
                        .contains(vk::MemoryPropertyFlags::HOST_VISIBLE)
            })
            .expect("host-visible memory");
        let mem = device
            .allocate_memory(
                &vk::MemoryAllocateInfo::default()
                    .allocation_size(req.size)
                    .memory_type_index(ty),
                None,
            )
            .expect("memory");
        device.bind_buffer_memory(b, mem, 0).expect("bind");
        buffers.push((b, mem));
    }

    let code = spirv();
    let module = device
        .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&code), None)
        .expect("module");
    let binding = [vk::DescriptorSetLayoutBinding::default()
        .binding(0)
        .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
        .descriptor_count(1)
        .stage_flags(vk::ShaderStageFlags::COMPUTE)];
    let set_layout = device
        .create_descriptor_set_layout(
            &vk::DescriptorSetLayoutCreateInfo::default().bindings(&binding),
            None,
        )
        .expect("set layout");
    let layouts = [set_layout];
    let layout = device
        .create_pipeline_layout(
            &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts),
            None,
        )
        .expect("layout");
    let stage = vk::PipelineShaderStageCreateInfo::default()
        .stage(vk::ShaderStageFlags::COMPUTE)
        .module(module)
        .name(c"main");
    let pipeline = device
        .create_compute_pipelines(
            vk::PipelineCache::null(),
            &[vk::ComputePipelineCreateInfo::default()
                .stage(stage)
                .layout(layout)],
            None,
        )
        .expect("pipeline")[0];
    if let Some(d) = &debug {
        d.set_debug_utils_object_name(
            &vk::DebugUtilsObjectNameInfoEXT::default()
                .object_handle(pipeline)
                .object_name(c"counted_add"),
        )
        .expect("name");
    }
    let sizes = [vk::DescriptorPoolSize::default()
        .ty(vk::DescriptorType::STORAGE_BUFFER)
        .descriptor_count(1)];
    let pool = device
        .create_descriptor_pool(
            &vk::DescriptorPoolCreateInfo::default()
                .max_sets(1)
                .pool_sizes(&sizes),
            None,
        )
        .expect("descriptor pool");
    let set = device
        .allocate_descriptor_sets(
            &vk::DescriptorSetAllocateInfo::default()
                .descriptor_pool(pool)
                .set_layouts(&layouts),
        )
        .expect("set")[0];
    let buffer_info = [vk::DescriptorBufferInfo::default()
        .buffer(buffers[0].0)
        .range(vk::WHOLE_SIZE)];
    device.update_descriptor_sets(
        &[vk::WriteDescriptorSet::default()
            .dst_set(set)
            .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
            .buffer_info(&buffer_info)],
        &[],
    );

    // One pool and command buffer per recording thread (a pool is the program's to
    // synchronise, so threads do not share one).
    let pools: Vec<(vk::CommandPool, vk::CommandBuffer)> = (0..o.threads)
        .map(|_| {
            let pool = device
                .create_command_pool(
                    &vk::CommandPoolCreateInfo::default()
                        .queue_family_index(family)
                        .flags(vk::CommandPoolCreateFlags::RESET_COMMAND_BUFFER),
                    None,
                )
                .expect("command pool");
            let cb = device
                .allocate_command_buffers(
                    &vk::CommandBufferAllocateInfo::default()
                        .command_pool(pool)
                        .level(vk::CommandBufferLevel::PRIMARY)
                        .command_buffer_count(1),
                )
                .expect("command buffer")[0];
            (pool, cb)
        })
        .collect();
    let cb = pools[0].1;
    let fence = device
        .create_fence(&vk::FenceCreateInfo::default(), None)
        .expect("fence");
    let barrier = || {
        [vk::BufferMemoryBarrier::default()
            .buffer(buffers[0].0)
            .size(vk::WHOLE_SIZE)
            .src_access_mask(vk::AccessFlags::SHADER_WRITE | vk::AccessFlags::TRANSFER_WRITE)
            .dst_access_mask(vk::AccessFlags::SHADER_READ | vk::AccessFlags::SHADER_WRITE)
            .src_queue_family_index(vk::QUEUE_FAMILY_IGNORED)
            .dst_queue_family_index(vk::QUEUE_FAMILY_IGNORED)]
    };
    // One step's command buffer: a fill, then per dispatch a barrier and the dispatch
    // (labelled `{prefix}add.{k}` with --named), then a copy, as `parts` commands
    // (`--interleave` records several buffers a part at a time): part 0 begins, fills
    // and binds, then four a dispatch (barrier, label, dispatch, label's end), the last
    // copies and ends.
    // The pipeline and its descriptor set, bound.
    let bind = |cb: vk::CommandBuffer| {
        device.cmd_bind_pipeline(cb, vk::PipelineBindPoint::COMPUTE, pipeline);
        device.cmd_bind_descriptor_sets(cb, vk::PipelineBindPoint::COMPUTE, layout, 0, &[set], &[]);
    };
    let parts = 4 * o.dispatches + 2;
    let record_part = |cb: vk::CommandBuffer, step: u32, prefix: &str, part: u32| {
        let (k, command) = ((part.max(1) - 1) / 4, (part.max(1) - 1) % 4);
        if part == 0 {
            device
                .begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default())
                .expect("begin");
            device.cmd_fill_buffer(cb, buffers[0].0, 0, BYTES, step);
            bind(cb);
        } else if part == parts - 1 {
            device.cmd_copy_buffer(
                cb,
                buffers[0].0,
                buffers[1].0,
                &[vk::BufferCopy::default().size(BYTES)],
            );
            device.end_command_buffer(cb).expect("end");
        } else if command == 0 {
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::TRANSFER | vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &[],
                &barrier(),
                &[],
            );
        } else if command == 2 {
            device.cmd_dispatch(cb, 4, 1, 1);
        } else if let Some(d) = &debug {
            if command == 1 {
                let label = std::ffi::CString::new(format!("{prefix}add.{k}")).unwrap();
                d.cmd_begin_debug_utils_label(
                    cb,
                    &vk::DebugUtilsLabelEXT::default().label_name(&label),
                );
            } else {
                d.cmd_end_debug_utils_label(cb);
            }
        }
    };
    let record = |cb: vk::CommandBuffer, step: u32, prefix: &str| {
        for part in 0..parts {
            record_part(cb, step, prefix, part);
        }
    };
    for step in 0..o.steps {
        if o.threads == 1 {
            record(cb, step, "");
        } else if o.interleave {
            for part in 0..parts {
                for (t, &(_, cb)) in pools.iter().enumerate() {
                    record_part(cb, step, &format!("t{t}."), part);
                }
            }
        } else {
            std::thread::scope(|s| {
                for (t, &(_, cb)) in pools.iter().enumerate() {
                    let record = &record;
                    s.spawn(move || record(cb, step, &format!("t{t}.")));
                }
            });
        }
        let cbs: Vec<vk::CommandBuffer> = pools.iter().map(|&(_, cb)| cb).collect();
        device
            .queue_submit(
                queue,
                &[vk::SubmitInfo::default().command_buffers(&cbs)],
                fence,
            )
            .expect("submit");
        device
            .wait_for_fences(&[fence], true, u64::MAX)
            .expect("wait");
        device.reset_fences(&[fence]).expect("reset");
        if o.sleep_ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(o.sleep_ms));
        }
    }
    if o.record_cost > 0 {
        let ns = record_cost(&device, debug.as_ref(), cb, o.record_cost, |cb| {
            bind(cb);
            device.cmd_dispatch(cb, 4, 1, 1);
            device.cmd_pipeline_barrier(
                cb,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::PipelineStageFlags::COMPUTE_SHADER,
                vk::DependencyFlags::empty(),
                &[],
                &barrier(),
                &[],
            );
        });
        println!(
            "record-cost: {ns:.1} ns per dispatch ({} dispatches; 2 labels, a pipeline and a set bound, a barrier each; best of 5)",
            o.record_cost
        );
    }
    device.destroy_fence(fence, None);
    for &(pool, _) in &pools {
        device.destroy_command_pool(pool, None);
    }
    device.destroy_descriptor_pool(pool, None);
    device.destroy_pipeline(pipeline, None);
    device.destroy_pipeline_layout(layout, None);
    device.destroy_descriptor_set_layout(set_layout, None);
    device.destroy_shader_module(module, None);
    for (b, m) in buffers {
        device.destroy_buffer(b, None);
        device.free_memory(m, None);
    }
    device.destroy_device(None);
    instance.destroy_instance(None);
}

/// The CPU time per dispatch of recording `n` dispatches (each `one`, inside two
/// debug labels as llama.cpp's node and pipeline labels) into `cb`: the best of 5.
unsafe fn record_cost(
    device: &ash::Device,
    debug: Option<&ash::ext::debug_utils::Device>,
    cb: vk::CommandBuffer,
    n: u32,
    one: impl Fn(vk::CommandBuffer),
) -> f64 {
    let names: Vec<std::ffi::CString> = (0..64)
        .map(|i| {
            std::ffi::CString::new(format!("mul_mat_vec_q4_0_f32_f32 node_{i} (4,1,1)")).unwrap()
        })
        .collect();
    let mut best = f64::INFINITY;
    for _ in 0..5 {
        device
            .begin_command_buffer(cb, &vk::CommandBufferBeginInfo::default())
            .expect("begin");
        let start = std::time::Instant::now();
        for i in 0..n as usize {
            let label = vk::DebugUtilsLabelEXT::default().label_name(&names[i % names.len()]);
            if let Some(d) = debug {
                d.cmd_begin_debug_utils_label(cb, &label);
                d.cmd_begin_debug_utils_label(cb, &label);
            }
            one(cb);
            if let Some(d) = debug {
                d.cmd_end_debug_utils_label(cb);
                d.cmd_end_debug_utils_label(cb);
            }
        }
        best = best.min(start.elapsed().as_secs_f64() * 1e9 / f64::from(n));
        device.end_command_buffer(cb).expect("end");
        device
            .reset_command_buffer(cb, vk::CommandBufferResetFlags::empty())
            .expect("reset");
    }
    best
}
