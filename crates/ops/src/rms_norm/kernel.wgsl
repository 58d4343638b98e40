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

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32) {
    // Strided so that neighbouring threads read neighbouring floats (coalesced).
    var acc = 0.0;
    for (var i = tid; i < N; i += 8u * WG) {
        acc += ((sq(i) + sq(i + WG)) + (sq(i + 2u * WG) + sq(i + 3u * WG)))
            + ((sq(i + 4u * WG) + sq(i + 5u * WG)) + (sq(i + 6u * WG) + sq(i + 7u * WG)));
    }
    partial[tid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if tid < s {
            partial[tid] += partial[tid + s];
        }
        workgroupBarrier();
    }
    let scale = inverseSqrt(partial[0] / f32(N) + EPS);
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
