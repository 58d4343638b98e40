//! What the Vulkan driver made of gpuscope's kernels: the statistics it reports for each
//! compiled pipeline through `VK_KHR_pipeline_executable_properties` (on NVIDIA: register
//! count, shared memory, binary size). Registers per thread decide how many workgroups
//! share an SM, which decides whether one workgroup's loads hide behind another's
//! multiplies; wgpu does not ask for these statistics, so this program builds the same
//! SPIR-V (naga, as wgpu-hal's Vulkan backend writes it for a `pipeline_trusted` kernel:
//! SPIR-V 1.6, no bounds checks, no loop bounding) and creates the pipelines itself.
//!
//!     cargo run --release -p gpuscope --example vk_pipeline_stats
//!     vk_pipeline_stats [FILE.wgsl K=V,K=V ...]...
//!     vk_pipeline_stats --capture DIR
//!     vk_pipeline_stats --dump DIR   (writes the built-in kernels' WGSL and constants)
//!
//! Without arguments: the prompt's coopmat gemm (q4_0 packed, both tiles, at Llama-8B's
//! gate/up shape, and the residual-adding down projection) and the coopmat attention for
//! 128-dim heads. With arguments: each WGSL file with its constants (for variants written
//! by hand). With `--capture DIR`: every pipeline of a capture (`profile --capture DIR`).

use ash::vk;
use gpuscope_ops::gemv::{gemm_shader, GemmKind, WeightLayout};
use gpuscope_ops::WeightFormat;

/// A kernel to build: its name, WGSL and pipeline constants.
struct Kernel {
    name: String,
    wgsl: String,
    constants: Vec<(String, f64)>,
}

fn builtin() -> Vec<Kernel> {
    let mut out = Vec::new();
    // Llama-8B: gate/up 28672 x 4096, down 4096 x 14336 (adds into the residual).
    let shapes = [
        ("gate_up", 28672u32, 4096u32, 0.0),
        ("down", 4096, 14336, 1.0),
    ];
    for tile in [64u32, 128] {
        let s = gemm_shader(
            GemmKind::Coopmat,
            tile,
            WeightFormat::Q4_0,
            WeightLayout::Packed,
        )
        .expect("the q4_0 coopmat gemm");
        for (what, rows, cols, acc) in shapes {
            let scales = WeightLayout::scales_at(WeightFormat::Q4_0, rows, cols);
            out.push(Kernel {
                name: format!("{} {what}", s.name),
                wgsl: s.wgsl.to_string(),
                constants: vec![
                    ("ROWS".into(), f64::from(rows)),
                    ("COLS".into(), f64::from(cols)),
                    ("OUT_OFFSET".into(), 0.0),
                    ("ACCUMULATE".into(), acc),
                    ("Y_STRIDE".into(), f64::from(rows)),
                    ("MAX_BATCH".into(), 512.0),
                    ("SCALES_AT".into(), f64::from(scales)),
                ],
            });
        }
    }
    let a = gpuscope_ops::attention::coopmat_shader(128);
    out.push(Kernel {
        name: a.name.to_string(),
        wgsl: a.wgsl.to_string(),
        constants: [
            ("N_HEADS", 32.0),
            ("N_KV_HEADS", 8.0),
            ("MAX_CTX", 4096.0),
            ("SCALE", 0.088),
            ("Q_STRIDE", 6144.0),
            ("OUT_STRIDE", 4096.0),
            ("MAX_BATCH", 512.0),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect(),
    });
    out
}

/// Every pipeline of a capture directory: its shader's WGSL and its constant set.
fn from_capture(dir: &str) -> Vec<Kernel> {
    let path = format!("{dir}/commands.json");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let c: serde_json::Value = serde_json::from_str(&text).expect("commands.json");
    let shaders = c["shaders"].as_array().expect("shaders");
    let sets = c["constant_sets"].as_array().expect("constant_sets");
    let pipelines = c["pipelines"].as_array().expect("pipelines");
    pipelines
        .iter()
        .map(|p| {
            let shader = &shaders[p["shader"].as_u64().expect("shader") as usize];
            let source = format!("{dir}/{}", shader["source"].as_str().expect("source"));
            let wgsl = std::fs::read_to_string(&source).unwrap_or_else(|e| panic!("{source}: {e}"));
            let constants = p["constants"]
                .as_u64()
                .map(|i| {
                    sets[i as usize]["values"]
                        .as_array()
                        .expect("values")
                        .iter()
                        .map(|kv| {
                            (
                                kv[0].as_str().expect("name").to_string(),
                                kv[1].as_f64().expect("value"),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Kernel {
                name: p["name"].as_str().unwrap_or("?").to_string(),
                wgsl,
                constants,
            }
        })
        .collect()
}

fn from_args(args: &[String]) -> Vec<Kernel> {
    args.chunks(2)
        .map(|pair| {
            let path = &pair[0];
            let wgsl = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let constants = pair
                .get(1)
                .map(|c| {
                    c.split(',')
                        .filter(|kv| !kv.is_empty())
                        .map(|kv| {
                            let (k, v) = kv.split_once('=').expect("K=V");
                            (k.to_string(), v.parse().expect("a number"))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Kernel {
                name: path.clone(),
                wgsl,
                constants,
            }
        })
        .collect()
}

/// The kernel's SPIR-V as wgpu-hal writes it for a trusted pipeline on a Vulkan 1.3 device.
fn spirv(k: &Kernel) -> Result<Vec<u32>, String> {
    use naga::valid::{Capabilities, ValidationFlags, Validator};
    let module = naga::front::wgsl::parse_str(&k.wgsl).map_err(|e| e.emit_to_string(&k.wgsl))?;
    let info = Validator::new(ValidationFlags::all(), Capabilities::all())
        .validate(&module)
        .map_err(|e| e.emit_to_string(&k.wgsl))?;
    let mut set = naga::back::PipelineConstants::default();
    for (name, v) in &k.constants {
        if k.wgsl.contains(&format!("override {name}")) {
            set.insert(name.clone(), *v);
        }
    }
    let (module, info) =
        naga::back::pipeline_constants::process_overrides(&module, &info, None, &set)
            .map_err(|e| e.to_string())?;
    let options = naga::back::spv::Options {
        lang_version: (1, 6),
        bounds_check_policies: naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Unchecked,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        },
        zero_initialize_workgroup_memory: naga::back::spv::ZeroInitializeWorkgroupMemoryMode::None,
        force_loop_bounding: false,
        ..Default::default()
    };
    let pipeline = naga::back::spv::PipelineOptions {
        shader_stage: naga::ShaderStage::Compute,
        entry_point: "main".into(),
    };
    naga::back::spv::write_vec(&module, &info, &options, Some(&pipeline)).map_err(|e| e.to_string())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let kernels = if args.is_empty() {
        builtin()
    } else if args[0] == "--dump" {
        return dump(args.get(1).expect("--dump DIR"));
    } else if args[0] == "--capture" {
        from_capture(args.get(1).expect("--capture DIR"))
    } else {
        from_args(&args)
    };
    unsafe { run(&kernels) }
}

/// Writes each built-in kernel as `DIR/N.wgsl` and its constants as `DIR/N.constants`
/// (`K=V,K=V`: the arguments that build it again, edited or not).
fn dump(dir: &str) {
    std::fs::create_dir_all(dir).expect("the dump directory");
    for (i, k) in builtin().iter().enumerate() {
        let constants: Vec<String> = k
            .constants
            .iter()
            .map(|(n, v)| format!("{n}={v}"))
            .collect();
        std::fs::write(format!("{dir}/{i}.wgsl"), &k.wgsl).expect("write");
        std::fs::write(format!("{dir}/{i}.constants"), constants.join(",")).expect("write");
        println!("{dir}/{i}.wgsl: {}", k.name);
    }
}

/// A device with what the kernels use (f16, 16-bit storage, int8, cooperative matrices,
/// the memory model, integer dot products) and the statistics extension.
unsafe fn device(instance: &ash::Instance, physical: vk::PhysicalDevice) -> (ash::Device, String) {
    let props = instance.get_physical_device_properties(physical);
    let name = props
        .device_name_as_c_str()
        .map_or("?".into(), |n| n.to_string_lossy().into_owned());
    let priorities = [1.0];
    let queues = [vk::DeviceQueueCreateInfo::default()
        .queue_family_index(0)
        .queue_priorities(&priorities)];
    // Cooperative matrices where the driver has them (lavapipe has not: the kernels that
    // use them then fail to build, and the others are still listed).
    let exts_offered = instance
        .enumerate_device_extension_properties(physical)
        .unwrap_or_default();
    let offers = |ext: &std::ffi::CStr| {
        exts_offered
            .iter()
            .any(|e| e.extension_name_as_c_str() == Ok(ext))
    };
    if !offers(ash::khr::pipeline_executable_properties::NAME) {
        eprintln!("vk_pipeline_stats: {name} does not offer VK_KHR_pipeline_executable_properties: no statistics to read");
        std::process::exit(1);
    }
    let has_coop = offers(ash::khr::cooperative_matrix::NAME);
    let mut exts = vec![ash::khr::pipeline_executable_properties::NAME.as_ptr()];
    if has_coop {
        exts.push(ash::khr::cooperative_matrix::NAME.as_ptr());
    }
    let mut f11 = vk::PhysicalDeviceVulkan11Features::default().storage_buffer16_bit_access(true);
    let mut f12 = vk::PhysicalDeviceVulkan12Features::default()
        .shader_float16(true)
        .shader_int8(true)
        .storage_buffer8_bit_access(true)
        .vulkan_memory_model(true)
        .vulkan_memory_model_device_scope(true);
    let mut f13 = vk::PhysicalDeviceVulkan13Features::default()
        .shader_integer_dot_product(true)
        .subgroup_size_control(true)
        .compute_full_subgroups(true);
    let mut coop =
        vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default().cooperative_matrix(has_coop);
    let mut stats = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default()
        .pipeline_executable_info(true);
    let info = vk::DeviceCreateInfo::default()
        .queue_create_infos(&queues)
        .enabled_extension_names(&exts)
        .push_next(&mut f11)
        .push_next(&mut f12)
        .push_next(&mut f13)
        .push_next(&mut coop)
        .push_next(&mut stats);
    let device = instance
        .create_device(physical, &info, None)
        .unwrap_or_else(|e| {
            eprintln!("vk_pipeline_stats: no device on {name} with the kernels' features: {e}");
            std::process::exit(1)
        });
    (device, name)
}

unsafe fn run(kernels: &[Kernel]) {
    let entry = ash::Entry::load().expect("the Vulkan loader");
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let instance = entry
        .create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app),
            None,
        )
        .expect("instance");
    // SPIR-V first: a kernel naga rejects is reported on any machine.
    let built: Vec<(&Kernel, Vec<u32>)> = kernels
        .iter()
        .filter_map(|k| match spirv(k) {
            Ok(words) => Some((k, words)),
            Err(e) => {
                println!("{}: no SPIR-V: {e}", k.name);
                None
            }
        })
        .collect();
    let physical = instance.enumerate_physical_devices().expect("devices")[0];
    let (device, name) = device(&instance, physical);
    println!("{name}");
    let ext = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
    for (k, words) in built {
        let module = device
            .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&words), None)
            .expect("shader module");
        let layout = pipeline_layout(&device, &k.wgsl);
        let stage = vk::PipelineShaderStageCreateInfo::default()
            .stage(vk::ShaderStageFlags::COMPUTE)
            .module(module)
            .name(c"main");
        let info = vk::ComputePipelineCreateInfo::default()
            .stage(stage)
            .layout(layout)
            .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR);
        let pipeline =
            match device.create_compute_pipelines(vk::PipelineCache::null(), &[info], None) {
                Ok(p) => p[0],
                Err((_, e)) => {
                    println!("{}: pipeline not created: {e}", k.name);
                    continue;
                }
            };
        print_stats(&ext, pipeline, &k.name);
        device.destroy_pipeline(pipeline, None);
        device.destroy_pipeline_layout(layout, None);
        device.destroy_shader_module(module, None);
    }
    device.destroy_device(None);
    instance.destroy_instance(None);
}

/// A layout of storage buffers at bindings 0..=N of set 0, N the highest binding the WGSL
/// declares (every kernel here binds only storage buffers in group 0).
unsafe fn pipeline_layout(device: &ash::Device, wgsl: &str) -> vk::PipelineLayout {
    let highest = wgsl
        .match_indices("@binding(")
        .filter_map(|(at, m)| {
            let rest = &wgsl[at + m.len()..];
            rest[..rest.find(')')?].trim().parse::<u32>().ok()
        })
        .max()
        .unwrap_or(0);
    let bindings: Vec<_> = (0..=highest)
        .map(|b| {
            vk::DescriptorSetLayoutBinding::default()
                .binding(b)
                .descriptor_type(vk::DescriptorType::STORAGE_BUFFER)
                .descriptor_count(1)
                .stage_flags(vk::ShaderStageFlags::COMPUTE)
        })
        .collect();
    let set = device
        .create_descriptor_set_layout(
            &vk::DescriptorSetLayoutCreateInfo::default().bindings(&bindings),
            None,
        )
        .expect("set layout");
    let sets = [set];
    device
        .create_pipeline_layout(
            &vk::PipelineLayoutCreateInfo::default().set_layouts(&sets),
            None,
        )
        .expect("pipeline layout")
}

unsafe fn print_stats(
    ext: &ash::khr::pipeline_executable_properties::Device,
    pipeline: vk::Pipeline,
    name: &str,
) {
    let info = vk::PipelineInfoKHR::default().pipeline(pipeline);
    let Ok(props) = ext.get_pipeline_executable_properties(&info) else {
        println!("{name}: no executable properties");
        return;
    };
    for (i, p) in props.iter().enumerate() {
        let exe = vk::PipelineExecutableInfoKHR::default()
            .pipeline(pipeline)
            .executable_index(i as u32);
        let stats = ext
            .get_pipeline_executable_statistics(&exe)
            .unwrap_or_default();
        let listed: Vec<String> = stats
            .iter()
            .map(|s| {
                let value = match s.format {
                    vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32.to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                    _ => format!("{:.3}", s.value.f64),
                };
                let n = s
                    .name_as_c_str()
                    .map_or("?".into(), |c| c.to_string_lossy().into_owned());
                format!("{n}={value}")
            })
            .collect();
        println!(
            "{name} [{}; subgroup {}]: {}",
            p.name_as_c_str()
                .map_or("?".into(), |c| c.to_string_lossy().into_owned()),
            p.subgroup_size,
            listed.join(", ")
        );
    }
}
