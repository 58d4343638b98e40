// K and V for subgroup.wgsl as vec4<u64> (the `.wide` form: VPL 2 or 4, so a lane's
// vec4s start on an even vec4 and pair up): 8 floats a load, where lavapipe pays per
// component loaded.
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<u64>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<u64>>;

fn f32x4_of(a: u64, b: u64) -> vec4<f32> {
    return bitcast<vec4<f32>>(vec4<u32>(u32(a), u32(a >> 32u), u32(b), u32(b >> 32u)));
}

// Element i (8 floats) of the K cache (is_k) or the V cache: a constant at every call,
// so the other branch folds away.
fn kv8(is_k: bool, i: u32) -> vec4<u64> {
    if is_k {
        return k_cache[i];
    }
    return v_cache[i];
}

fn load_kv(is_k: bool, base: u32) -> Part {
    var p: Part;
    let lo = kv8(is_k, base >> 1u);
    p.v0 = f32x4_of(lo.x, lo.y);
    p.v1 = f32x4_of(lo.z, lo.w);
    if vpl() > 2u {
        let hi = kv8(is_k, (base >> 1u) + 1u);
        p.v2 = f32x4_of(hi.x, hi.y);
        p.v3 = f32x4_of(hi.z, hi.w);
    }
    return p;
}
