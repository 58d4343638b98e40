// K and V for subgroup.wgsl as vec4<f32>: a lane's VPL vec4s from vec4 `base`.
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;

fn load_k(base: u32) -> Part {
    var p: Part;
    p.v0 = k_cache[base];
    if vpl() > 1u {
        p.v1 = k_cache[base + 1u];
    }
    if vpl() > 2u {
        p.v2 = k_cache[base + 2u];
        p.v3 = k_cache[base + 3u];
    }
    return p;
}

fn load_v(base: u32) -> Part {
    var p: Part;
    p.v0 = v_cache[base];
    if vpl() > 1u {
        p.v1 = v_cache[base + 1u];
    }
    if vpl() > 2u {
        p.v2 = v_cache[base + 2u];
        p.v3 = v_cache[base + 3u];
    }
    return p;
}
