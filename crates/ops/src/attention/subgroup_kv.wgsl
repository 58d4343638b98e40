// K and V for subgroup.wgsl as vec4<f32>: a lane's VPL vec4s from vec4 `base`.
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;

// vec4 i of the K cache (is_k) or the V cache: a constant at every call, so the other
// branch folds away.
fn kv4(is_k: bool, i: u32) -> vec4<f32> {
    if is_k {
        return k_cache[i];
    }
    return v_cache[i];
}

fn load_kv(is_k: bool, base: u32) -> Part {
    var p: Part;
    p.v0 = kv4(is_k, base);
    if vpl() > 1u {
        p.v1 = kv4(is_k, base + 1u);
    }
    if vpl() > 2u {
        p.v2 = kv4(is_k, base + 2u);
        p.v3 = kv4(is_k, base + 3u);
    }
    return p;
}
