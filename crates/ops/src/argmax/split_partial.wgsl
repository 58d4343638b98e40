override N: u32 = 1u;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> part_v: array<f32>;
@group(0) @binding(2) var<storage, read_write> part_i: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) tid: u32) {
    let i = wg.x * CHUNK + tid;
    // Unrolled by hand: a constant-trip loop was not (see kernel.wgsl).
    let v0 = load(i);
    let v1 = load(i + WG);
    let v2 = load(i + 2u * WG);
    let v3 = load(i + 3u * WG);
    let v4 = load(i + 4u * WG);
    let v5 = load(i + 5u * WG);
    let v6 = load(i + 6u * WG);
    let v7 = load(i + 7u * WG);
    var bv = 0.0;
    var bi = NONE;
    take(v0, i, &bv, &bi);
    take(v1, i + WG, &bv, &bi);
    take(v2, i + 2u * WG, &bv, &bi);
    take(v3, i + 3u * WG, &bv, &bi);
    take(v4, i + 4u * WG, &bv, &bi);
    take(v5, i + 5u * WG, &bv, &bi);
    take(v6, i + 6u * WG, &bv, &bi);
    take(v7, i + 7u * WG, &bv, &bi);
    best_v[tid] = bv;
    best_i[tid] = bi;
    reduce(tid);
    if tid == 0u {
        part_v[wg.x] = select(best_v[0], 0.0, best_i[0] == NONE);
        part_i[wg.x] = best_i[0];
    }
}
