// argmax: out[0] = index of the largest of N floats; the smallest index on ties; NaN
// never wins; NONE (0xffffffff) when every value is NaN.
// One workgroup: each thread scans a strided slice (coalesced), then a tree in shared
// memory. N is a vocabulary (up to ~128k), so one pass of one workgroup is enough.
// WG_THREADS is filled in by the Rust side: 256, or 1024 where the adapter allows it
// (four times the loads in flight).

override N: u32 = 1u;
const WG: u32 = WG_THREADSu;
@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32) {
    var bv = 0.0;
    var bi = NONE;
    // Sixteen loads issued before the first compare (unrolled by hand; a constant-trip
    // `for` loop was not). On an H200, N = 128256: one load at a time, an L2 round trip
    // per element, 95 us; eight at a time 23 us; sixteen 18.7 us.
    for (var i = tid; i < N; i += 16u * WG) {
        let v0 = load(i);
        let v1 = load(i + WG);
        let v2 = load(i + 2u * WG);
        let v3 = load(i + 3u * WG);
        let v4 = load(i + 4u * WG);
        let v5 = load(i + 5u * WG);
        let v6 = load(i + 6u * WG);
        let v7 = load(i + 7u * WG);
        let v8 = load(i + 8u * WG);
        let v9 = load(i + 9u * WG);
        let v10 = load(i + 10u * WG);
        let v11 = load(i + 11u * WG);
        let v12 = load(i + 12u * WG);
        let v13 = load(i + 13u * WG);
        let v14 = load(i + 14u * WG);
        let v15 = load(i + 15u * WG);
        take(v0, i, &bv, &bi);
        take(v1, i + WG, &bv, &bi);
        take(v2, i + 2u * WG, &bv, &bi);
        take(v3, i + 3u * WG, &bv, &bi);
        take(v4, i + 4u * WG, &bv, &bi);
        take(v5, i + 5u * WG, &bv, &bi);
        take(v6, i + 6u * WG, &bv, &bi);
        take(v7, i + 7u * WG, &bv, &bi);
        take(v8, i + 8u * WG, &bv, &bi);
        take(v9, i + 9u * WG, &bv, &bi);
        take(v10, i + 10u * WG, &bv, &bi);
        take(v11, i + 11u * WG, &bv, &bi);
        take(v12, i + 12u * WG, &bv, &bi);
        take(v13, i + 13u * WG, &bv, &bi);
        take(v14, i + 14u * WG, &bv, &bi);
        take(v15, i + 15u * WG, &bv, &bi);
    }
    best_v[tid] = bv;
    best_i[tid] = bi;
    reduce(tid);
    if tid == 0u {
        out[0] = best_i[0];
    }
}
