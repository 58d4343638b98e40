//! Device limits and bad shaders give errors that say what and what to do.

use gpuscope_runtime::{testing::shared_gpu, GpuError, ShaderSource};

#[test]
fn a_buffer_over_the_device_limit_is_refused_with_the_limit_named() {
    let Some(gpu) = shared_gpu() else { return };
    let too_big = gpu.limits().max_buffer_size + 4;
    let err = gpu.create_buffer("huge_tensor", too_big).unwrap_err();
    assert!(matches!(err, GpuError::BufferTooLarge { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("huge_tensor") && msg.contains("max_buffer_size") && msg.contains("split"),
        "{msg}"
    );
}

#[test]
fn a_shader_that_does_not_compile_names_the_shader() {
    let Some(gpu) = shared_gpu() else { return };
    const BAD: ShaderSource = ShaderSource {
        name: "broken_kernel",
        wgsl: "@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }",
    };
    let err = gpu.pipeline(&BAD, "main", &[]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, GpuError::Shader { .. }), "{err:?}");
    assert!(msg.contains("broken_kernel"), "{msg}");
}

#[test]
fn pipelines_are_cached_by_shader_entry_and_constants() {
    let Some(gpu) = shared_gpu() else { return };
    const K: ShaderSource = ShaderSource {
        name: "cache_probe",
        wgsl: "override N: u32; @group(0) @binding(0) var<storage, read_write> v: array<u32>; @compute @workgroup_size(1) fn main() { v[0] = N; }",
    };
    let a = gpu.pipeline(&K, "main", &[("N", 1.0)]).unwrap();
    let created = gpu.counters().pipelines_created;
    let b = gpu.pipeline(&K, "main", &[("N", 1.0)]).unwrap();
    assert_eq!(a.name(), b.name());
    let c = gpu.pipeline(&K, "main", &[("N", 2.0)]).unwrap();
    assert_ne!(a.name(), c.name());
    assert!(c.name().contains("N=2"), "{}", c.name());
    // Other tests share the device, so only check that the cached lookup added nothing
    // of its own name.
    assert!(gpu.counters().pipelines_created > created);
}
