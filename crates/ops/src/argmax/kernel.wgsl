// argmax: out[0] = index of the largest of N floats; the smallest index on ties; NaN
// never wins; NONE (0xffffffff) when every value is NaN.
// One workgroup: each thread scans a strided slice (coalesced), then a tree in shared
// memory. N is a vocabulary (up to ~128k), so one pass of one workgroup is enough.
// WG_THREADS is filled in by the Rust side: 256, or 1024 where the adapter allows it
// (four times the loads in flight).

override N: u32 = 1u;
const WG: u32 = WG_THREADSu;
const NONE: u32 = 0xffffffffu;

@group(0) @binding(0) var<storage, read> logits: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;

var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

// WGSL has no isNan and lets compilers assume NaN away in float compares, so test the
// bits: exponent all ones and a non-zero mantissa.
fn is_nan(v: f32) -> bool {
    return (bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u;
}

// Whether candidate (vb, ib) beats (va, ia). Candidates are never NaN; ia = NONE means
// "no candidate yet".
fn beats(vb: f32, ib: u32, va: f32, ia: u32) -> bool {
    if ib == NONE {
        return false;
    }
    if ia == NONE {
        return true;
    }
    return vb > va || (vb == va && ib < ia);
}

// Clamped, so that a group of loads has no branch between them.
fn load(i: u32) -> f32 {
    return logits[min(i, N - 1u)];
}

// Indices rise within a thread, so a strict > keeps the first of equal values.
fn take(v: f32, i: u32, bv: ptr<function, f32>, bi: ptr<function, u32>) {
    if i < N && !is_nan(v) && (*bi == NONE || v > *bv) {
        *bv = v;
        *bi = i;
    }
}

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
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if tid < s && beats(best_v[tid + s], best_i[tid + s], best_v[tid], best_i[tid]) {
            best_v[tid] = best_v[tid + s];
            best_i[tid] = best_i[tid + s];
        }
        workgroupBarrier();
    }
    if tid == 0u {
        out[0] = best_i[0];
    }
}
