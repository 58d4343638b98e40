//! What the Vulkan driver offers for tensor-core matrix multiplies, and what of it wgpu 30
//! passes on (issue 26: "find out what wgpu 30 exposes of these, and where it exposes
//! nothing, say so").
//!
//! For each physical device: every `VK_KHR_cooperative_matrix` configuration the driver
//! lists (`vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR`), each marked with whether
//! wgpu-hal 30 keeps it, by the rules of its `query_cooperative_matrix_properties`
//! (subgroup scope; M, N and K each 8 or 16; A and B of one type and C and the result of
//! one type, each f16, f32, i32 or u32), and whether the driver has
//! `VK_NV_cooperative_matrix2` (workgroup-scope matrices, decode functions in the loads:
//! what llama.cpp's Vulkan backend multiplies through on NVIDIA), which wgpu does not use.
//!
//!     cargo run --release -p gpuscope --example vk_coopmat

use ash::vk;

fn main() {
    unsafe { run() }
}

/// The type's name as Vulkan spells it, and whether wgpu 30 maps it.
fn component(t: vk::ComponentTypeKHR) -> (String, bool) {
    let kept = matches!(
        t,
        vk::ComponentTypeKHR::FLOAT16
            | vk::ComponentTypeKHR::FLOAT32
            | vk::ComponentTypeKHR::SINT32
            | vk::ComponentTypeKHR::UINT32
    );
    // VK_COMPONENT_TYPE_BFLOAT16_KHR (VK_KHR_shader_bfloat16) is newer than ash 0.38.
    let name = match t.as_raw() {
        1_000_141_000 => "bfloat16".to_string(),
        _ => format!("{t:?}").to_lowercase(),
    };
    (name, kept)
}

/// Why wgpu 30 drops a configuration (every reason), or empty where it keeps it.
fn dropped_because(p: &vk::CooperativeMatrixPropertiesKHR) -> Vec<&'static str> {
    let size_ok = |s: u32| s == 8 || s == 16;
    let (a, a_kept) = component(p.a_type);
    let (b, _) = component(p.b_type);
    let (c, c_kept) = component(p.c_type);
    let (r, _) = component(p.result_type);
    let mut why = Vec::new();
    if p.scope != vk::ScopeKHR::SUBGROUP {
        why.push("scope is not subgroup");
    }
    if !(size_ok(p.m_size) && size_ok(p.n_size) && size_ok(p.k_size)) {
        why.push("a size other than 8 or 16");
    }
    if !a_kept || a != b {
        why.push("A/B type not mapped (only f16, f32, i32, u32)");
    }
    if !c_kept || c != r {
        why.push("C/result type not mapped");
    }
    why
}

unsafe fn run() {
    let entry = ash::Entry::load().expect("the Vulkan loader");
    let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
    let instance = entry
        .create_instance(
            &vk::InstanceCreateInfo::default().application_info(&app),
            None,
        )
        .expect("instance");
    let coop = ash::khr::cooperative_matrix::Instance::new(&entry, &instance);
    for physical in instance.enumerate_physical_devices().expect("devices") {
        let props = instance.get_physical_device_properties(physical);
        let name = props
            .device_name_as_c_str()
            .map_or("?".into(), |n| n.to_string_lossy().into_owned());
        let exts: Vec<String> = instance
            .enumerate_device_extension_properties(physical)
            .unwrap_or_default()
            .iter()
            .filter_map(|e| e.extension_name_as_c_str().ok())
            .map(|n| n.to_string_lossy().into_owned())
            .collect();
        let has = |n: &str| exts.iter().any(|e| e == n);
        println!("{name}");
        println!(
            "  VK_KHR_cooperative_matrix: {}; VK_NV_cooperative_matrix2: {} (not used by wgpu 30)",
            has("VK_KHR_cooperative_matrix"),
            has("VK_NV_cooperative_matrix2")
        );
        if !has("VK_KHR_cooperative_matrix") {
            continue;
        }
        let list = coop
            .get_physical_device_cooperative_matrix_properties(physical)
            .unwrap_or_default();
        let kept = list
            .iter()
            .filter(|p| dropped_because(p).is_empty())
            .count();
        println!(
            "  {} configurations listed, {kept} kept by wgpu 30:",
            list.len()
        );
        for p in &list {
            let t = |x| component(x).0;
            println!(
                "    {}x{}x{} A {} B {} C {} R {}{}: {}",
                p.m_size,
                p.n_size,
                p.k_size,
                t(p.a_type),
                t(p.b_type),
                t(p.c_type),
                t(p.result_type),
                if p.saturating_accumulation != 0 {
                    " saturating"
                } else {
                    ""
                },
                match dropped_because(p) {
                    why if why.is_empty() => "kept".to_string(),
                    why => format!("dropped: {}", why.join("; ")),
                }
            );
        }
    }
    instance.destroy_instance(None);
}
