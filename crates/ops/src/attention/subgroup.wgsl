// Decode attention for adapters that are CPUs (variant `subgroup`): one workgroup of SG
// lanes (SG the adapter's subgroup size; lavapipe: 8) per KV head, for HPW of the query
// heads that share it (grouped-query attention; the grid is N_KV_HEADS x group / HPW).
// Each lane owns HEAD_DIM / SG consecutive dims (VPL vec4s, VPL <= 4) of q, K, V and the
// outputs; a position's K and V rows are loaded once for all HPW heads, a head's score is
// the lanes' partial dots summed with subgroupAdd, and each head's online softmax
// (running max m and sum l, accumulators rescaled when m grows) runs the same in every
// lane. No workgroup memory, no barrier: on lavapipe a workgroup runs as one loop of SIMD
// steps and a barrier switches coroutines, which made the 256-thread fused kernel cost
// ~1.2 ms a call at 8 positions. lavapipe issues every storage load lane by lane at a
// cost per component, so the heads sharing each K/V load (SmolLM2: 3) and, in the
// `.wide` form (SHADER_INT64, VPL 2 or 4), K and V read as vec4<u64> (8 floats a load)
// are what make it fast there (BENCHMARKS.md).

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;
override SG: u32 = 8u;
// Query heads per workgroup: a divisor of N_HEADS / N_KV_HEADS, 1..=4.
override HPW: u32 = 1u;

const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;

// One query head's state in a lane: its q (pre-scaled), accumulators, max and sum.
struct Head {
    q0: vec4<f32>,
    q1: vec4<f32>,
    q2: vec4<f32>,
    q3: vec4<f32>,
    a0: vec4<f32>,
    a1: vec4<f32>,
    a2: vec4<f32>,
    a3: vec4<f32>,
    m: f32,
    l: f32,
}

// A lane's VPL vec4s of one K or V row (unused ones zero).
struct Part {
    v0: vec4<f32>,
    v1: vec4<f32>,
    v2: vec4<f32>,
    v3: vec4<f32>,
}

fn vpl() -> u32 {
    return HEAD_DIM / 4u / SG;
}

fn head_init(qb: u32) -> Head {
    var h: Head;
    h.q0 = q[qb] * SCALE;
    if vpl() > 1u {
        h.q1 = q[qb + 1u] * SCALE;
    }
    if vpl() > 2u {
        h.q2 = q[qb + 2u] * SCALE;
        h.q3 = q[qb + 3u] * SCALE;
    }
    h.m = NEG;
    return h;
}

// The head's score at a position: its lanes' partial dots with the K row, summed.
fn score(h: Head, k: Part) -> f32 {
    var part = dot(h.q0, k.v0);
    if vpl() > 1u {
        part += dot(h.q1, k.v1);
    }
    if vpl() > 2u {
        part += dot(h.q2, k.v2) + dot(h.q3, k.v3);
    }
    return subgroupAdd(part);
}

fn update(h: ptr<function, Head>, s: f32, v: Part) {
    let new_m = max((*h).m, s);
    let correction = exp((*h).m - new_m);
    let p = exp(s - new_m);
    (*h).l = (*h).l * correction + p;
    (*h).a0 = (*h).a0 * correction + p * v.v0;
    if vpl() > 1u {
        (*h).a1 = (*h).a1 * correction + p * v.v1;
    }
    if vpl() > 2u {
        (*h).a2 = (*h).a2 * correction + p * v.v2;
        (*h).a3 = (*h).a3 * correction + p * v.v3;
    }
    (*h).m = new_m;
}

fn emit(h: Head, qb: u32) {
    out[qb] = h.a0 / h.l;
    if vpl() > 1u {
        out[qb + 1u] = h.a1 / h.l;
    }
    if vpl() > 2u {
        out[qb + 2u] = h.a2 / h.l;
        out[qb + 3u] = h.a3 / h.l;
    }
}

@compute @workgroup_size(SG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let kv_head = wg.x;
    let first = kv_head * (N_HEADS / N_KV_HEADS) + wg.y * HPW;
    let n_ctx = min(step[1], MAX_CTX);
    let hd4 = HEAD_DIM / 4u;
    let row4 = N_KV_HEADS * hd4;
    let lane4 = lid * vpl();
    let kb = kv_head * hd4 + lane4;
    // The lane's first vec4 of head `first` in q and in out.
    let qb = first * hd4 + lane4;
    let ob = first * hd4 + lane4;
    var h0 = head_init(qb);
    var h1: Head;
    var h2: Head;
    var h3: Head;
    if HPW > 1u {
        h1 = head_init(qb + hd4);
    }
    if HPW > 2u {
        h2 = head_init(qb + 2u * hd4);
    }
    if HPW > 3u {
        h3 = head_init(qb + 3u * hd4);
    }
    for (var t = 0u; t < n_ctx; t++) {
        let base = t * row4 + kb;
        let k = load_kv(true, base);
        let s0 = score(h0, k);
        var s1 = 0.0;
        var s2 = 0.0;
        var s3 = 0.0;
        if HPW > 1u {
            s1 = score(h1, k);
        }
        if HPW > 2u {
            s2 = score(h2, k);
        }
        if HPW > 3u {
            s3 = score(h3, k);
        }
        let v = load_kv(false, base);
        update(&h0, s0, v);
        if HPW > 1u {
            update(&h1, s1, v);
        }
        if HPW > 2u {
            update(&h2, s2, v);
        }
        if HPW > 3u {
            update(&h3, s3, v);
        }
    }
    emit(h0, ob);
    if HPW > 1u {
        emit(h1, ob + hd4);
    }
    if HPW > 2u {
        emit(h2, ob + 2u * hd4);
    }
    if HPW > 3u {
        emit(h3, ob + 3u * hd4);
    }
}
