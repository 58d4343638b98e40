// rms_norm: out = x / sqrt(mean(x²) + EPS) * weight, for one vector of N floats; with ADD,
// out += the same (Gemma 3's post norms: the residual add after the norm of a projection).
// One workgroup: the vector is at most a model's hidden size (a few thousand floats), so
// a single pass with a shared-memory tree reduction beats splitting it over workgroups.

override N: u32 = 1u;
override EPS: f32 = 1e-5;
override ADD: bool = false;
const WG: u32 = 256u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

var<workgroup> partial: array<f32, WG>;

// Loads are unrolled by hand, 8 at a time, with clamped indices and masks instead of
// branches, so all 8 are issued before the first is used. A plain strided loop issued
// one load at a time, about one L2 round trip per element: 9.0 us for N = 4096 on an
// H200 (wgpu 30, Vulkan, driver 580), against 4.9 us now. An inner `for` loop with a
// constant trip count was no faster than the plain loop.

fn sq(i: u32) -> f32 {
    let v = x[min(i, N - 1u)];
    return select(0.0, v * v, i < N);
}

fn scaled(i: u32, scale: f32) -> f32 {
    let j = min(i, N - 1u);
    let y = x[j] * scale * weight[j];
    if ADD {
        return out[j] + y;
    }
    return y;
}

// Element i's x, weight and (with ADD) current out, clamped to the vector (x is 0 past it,
// so it adds nothing to the sum of squares).
fn load3(i: u32) -> vec3<f32> {
    let j = min(i, N - 1u);
    var o = 0.0;
    if ADD {
        o = out[j];
    }
    return vec3<f32>(select(0.0, x[j], i < N), weight[j], o);
}

fn store(i: u32, v: vec3<f32>, scale: f32) {
    let y = v.x * scale * v.y;
    if i < N {
        out[i] = select(y, v.z + y, ADD);
    }
}

// Vectors of at most 8 · WG floats (the hidden sizes of small models; Gemma 3 270M's 640):
// every load, the weights' and the residual's too, issued before the reduction, so that
// nothing but the stores follows it (the general loop below loads them again after it).
fn one_pass(tid: u32) {
    let v0 = load3(tid);
    let v1 = load3(tid + WG);
    let v2 = load3(tid + 2u * WG);
    let v3 = load3(tid + 3u * WG);
    let v4 = load3(tid + 4u * WG);
    let v5 = load3(tid + 5u * WG);
    let v6 = load3(tid + 6u * WG);
    let v7 = load3(tid + 7u * WG);
    partial[tid] = ((v0.x * v0.x + v1.x * v1.x) + (v2.x * v2.x + v3.x * v3.x))
        + ((v4.x * v4.x + v5.x * v5.x) + (v6.x * v6.x + v7.x * v7.x));
    let scale = reduced_scale(tid);
    store(tid, v0, scale);
    store(tid + WG, v1, scale);
    store(tid + 2u * WG, v2, scale);
    store(tid + 3u * WG, v3, scale);
    store(tid + 4u * WG, v4, scale);
    store(tid + 5u * WG, v5, scale);
    store(tid + 6u * WG, v6, scale);
    store(tid + 7u * WG, v7, scale);
}

// 1 / sqrt(mean(x²) + EPS) from each thread's partial sum in `partial`.
fn reduced_scale(tid: u32) -> f32 {
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if tid < s {
            partial[tid] += partial[tid + s];
        }
        workgroupBarrier();
    }
    return inverseSqrt(partial[0] / f32(N) + EPS);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32) {
    if N <= 8u * WG {
        one_pass(tid);
        return;
    }
    // Strided so that neighbouring threads read neighbouring floats (coalesced).
    var acc = 0.0;
    for (var i = tid; i < N; i += 8u * WG) {
        acc += ((sq(i) + sq(i + WG)) + (sq(i + 2u * WG) + sq(i + 3u * WG)))
            + ((sq(i + 4u * WG) + sq(i + 5u * WG)) + (sq(i + 6u * WG) + sq(i + 7u * WG)));
    }
    partial[tid] = acc;
    let scale = reduced_scale(tid);
    for (var i = tid; i < N; i += 8u * WG) {
        let y0 = scaled(i, scale);
        let y1 = scaled(i + WG, scale);
        let y2 = scaled(i + 2u * WG, scale);
        let y3 = scaled(i + 3u * WG, scale);
        let y4 = scaled(i + 4u * WG, scale);
        let y5 = scaled(i + 5u * WG, scale);
        let y6 = scaled(i + 6u * WG, scale);
        let y7 = scaled(i + 7u * WG, scale);
        out[i] = y0;
        if i + WG < N {
            out[i + WG] = y1;
        }
        if i + 2u * WG < N {
            out[i + 2u * WG] = y2;
        }
        if i + 3u * WG < N {
            out[i + 3u * WG] = y3;
        }
        if i + 4u * WG < N {
            out[i + 4u * WG] = y4;
        }
        if i + 5u * WG < N {
            out[i + 5u * WG] = y5;
        }
        if i + 6u * WG < N {
            out[i + 6u * WG] = y6;
        }
        if i + 7u * WG < N {
            out[i + 7u * WG] = y7;
        }
    }
}
