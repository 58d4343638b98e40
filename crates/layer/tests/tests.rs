//! The layer's pure parts; the layer itself is tested loaded into programs, in the CLI's
//! `attach` tests.

use gpuscope_layer::spirv::{compute_entries, words, Size};

fn spirv(wgsl: &str) -> Vec<u32> {
    let module = naga::front::wgsl::parse_str(wgsl).unwrap();
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::empty(),
    )
    .validate(&module)
    .unwrap();
    naga::back::spv::write_vec(&module, &info, &Default::default(), None).unwrap()
}

#[test]
fn compute_entry_points_and_their_workgroup_sizes() {
    let code = spirv(
        "@compute @workgroup_size(64, 2) fn first() {}
         @compute @workgroup_size(8) fn second() {}",
    );
    let mut entries = compute_entries(&code);
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].name, "first");
    assert_eq!(
        entries[0].size,
        Some([Size::Literal(64), Size::Literal(2), Size::Literal(1)])
    );
    assert_eq!(
        entries[1].size.map(|s| s.map(|x| x.resolve(&[]))),
        Some([8, 1, 1])
    );
}

/// glslc's spelling of `local_size_x_id = 7`: a spec constant in a `WorkgroupSize`
/// built-in composite (hand-assembled: naga does not write overridable sizes).
#[test]
fn workgroup_size_from_a_spec_constant_follows_the_pipeline() {
    let op = |count: u32, opcode: u32| (count << 16) | opcode;
    let main = u32::from_le_bytes(*b"main");
    let code = [
        0x0723_0203,
        0x0001_0000,
        0,
        10,
        0,
        op(5, 15),
        5,
        1,
        main,
        0, // OpEntryPoint GLCompute %1 "main"
        op(4, 71),
        2,
        1,
        7, // OpDecorate %2 SpecId 7
        op(4, 71),
        3,
        11,
        25, // OpDecorate %3 BuiltIn WorkgroupSize
        op(4, 50),
        4,
        2,
        64, // %2 = OpSpecConstant %uint 64
        op(4, 43),
        4,
        5,
        1, // %5 = OpConstant %uint 1
        op(6, 51),
        6,
        3,
        2,
        5,
        5, // %3 = OpSpecConstantComposite %v3uint %2 %5 %5
    ];
    let e = &compute_entries(&code)[0];
    assert_eq!(e.name, "main");
    let size = e.size.expect("a size");
    assert_eq!(size[0], Size::Spec { id: 7, default: 64 });
    assert_eq!(size.map(|x| x.resolve(&[])), [64, 1, 1]);
    assert_eq!(size.map(|x| x.resolve(&[(7, 128)])), [128, 1, 1]);
}

#[test]
fn anything_but_spirv_has_no_entry_points_and_never_panics() {
    assert!(compute_entries(&[]).is_empty());
    assert!(compute_entries(&[1, 2, 3, 4, 5, 6]).is_empty());
    let mut code = spirv("@compute @workgroup_size(1) fn main() {}");
    // Instruction lengths that run past the end, or are zero.
    for i in 5..code.len() {
        let saved = code[i];
        code[i] = 0xffff_0000 | (saved & 0xffff);
        let _ = compute_entries(&code);
        code[i] = saved & 0xffff;
        let _ = compute_entries(&code);
        code[i] = saved;
    }
    assert_eq!(words(&[1, 0, 0, 0, 2, 0, 0, 0, 9]), vec![1, 2]);
}

#[test]
fn the_manifest_names_the_layer_and_its_library() {
    let m: serde_json::Value = serde_json::from_str(&gpuscope_layer::manifest(
        "/opt/x/libgpuscope_layer.so".as_ref(),
    ))
    .unwrap();
    assert_eq!(m["layer"]["name"], gpuscope_layer::LAYER_NAME);
    assert_eq!(m["layer"]["library_path"], "/opt/x/libgpuscope_layer.so");
    assert_eq!(
        m["layer"]["functions"]["vkNegotiateLoaderLayerInterfaceVersion"],
        "vkNegotiateLoaderLayerInterfaceVersion"
    );
}
