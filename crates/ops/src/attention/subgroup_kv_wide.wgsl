// K and V for subgroup.wgsl as vec4<u64> (the `.wide` form: VPL 2 or 4, so a lane's
// vec4s start on an even vec4 and pair up): 8 floats a load, where lavapipe pays per
// component loaded.
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<u64>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<u64>>;

fn f32x4_of(a: u64, b: u64) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(u32(a), u32(a >> 32u), u32(b), u32(b >> 32u)));
}

fn part_of(lo: vec4<u64>, hi: vec4<u64>) -> Part {
    var p: Part;
    p.v0 = f32x4_of(lo.x, lo.y);
    p.v1 = f32x4_of(lo.z, lo.w);
    if vpl() > 2u {
        p.v2 = f32x4_of(hi.x, hi.y);
        p.v3 = f32x4_of(hi.z, hi.w);
    }
    return p;
}

fn load_k(base: u32) -> Part {
    let i = base >> 1u;
    var hi: vec4<u64>;
    if vpl() > 2u {
        hi = k_cache[i + 1u];
    }
    return part_of(k_cache[i], hi);
}

fn load_v(base: u32) -> Part {
    let i = base >> 1u;
    var hi: vec4<u64>;
    if vpl() > 2u {
        hi = v_cache[i + 1u];
    }
    return part_of(v_cache[i], hi);
}
