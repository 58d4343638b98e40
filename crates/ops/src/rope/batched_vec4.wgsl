// Batched rope + KV-cache append over vec4s: batched.wgsl's op (kept in step with it) where
// rope is GGUF "normal" (pairs 2i, 2i + 1 side by side) and every offset, stride, head and
// rotated span is a multiple of 4 floats (`RopeBatched::takes_vec4`): a thread takes two
// neighbouring pairs, one vec4 of q, k or v, instead of one pair as two scalars (the
// scalar rms_norm's loads were a third of its time: BENCHMARKS.md run 49).
// Grid: (ceil(quads per row / WG), rows).

// The constants, WG and params come from batched_constants.wgsl, prefixed by batched.rs.

@group(0) @binding(1) var<storage, read_write> qkv: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> v_cache: array<vec4<f32>>;

// reduce_angle and angle come from angle.wgsl, appended after this file.

// vec4 e of q/k/v: its parts summed, in order.
fn qkv_at(e: u32) -> vec4<f32> {
    var v = qkv[e];
    for (var p = 1u; p < PARTS; p++) {
        v += qkv[e + p * (PART_STRIDE / 4u)];
    }
    return v;
}

// Pairs i and i + 1 (elements 0-1 and 2-3 of x) rotated for position pos, where they are
// within ROPE_DIMS (both or neither: ROPE_DIMS / 2 is even and i is even).
fn rotated(x: vec4<f32>, pos: u32, i: u32) -> vec4<f32> {
    if i >= ROPE_DIMS / 2u {
        return x;
    }
    let a = angle(pos, i);
    let b = angle(pos, i + 1u);
    return vec4<f32>(
        x.x * a.x - x.y * a.y,
        x.x * a.y + x.y * a.x,
        x.z * b.x - x.w * b.y,
        x.z * b.y + x.w * b.x,
    );
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let b = wg.y;
    if b >= params[1] {
        return;
    }
    let pos = params[0] + b;
    if pos >= MAX_CTX && !RING {
        return;
    }
    let base = b * (QKV_STRIDE / 4u);
    let quads = HEAD_DIM / 4u;
    let qq = N_HEADS * quads;
    let kq = N_KV_HEADS * quads;
    let row = select(pos, pos % MAX_CTX, RING) * kq;
    let id = wg.x * WG + lid;
    if id < qq {
        let e = base + Q_OFF / 4u + id;
        qkv[e] = rotated(qkv_at(e), pos, 2u * (id % quads));
    } else if id < qq + kq {
        let p = id - qq;
        k_cache[row + p] = rotated(qkv_at(base + K_OFF / 4u + p), pos, 2u * (p % quads));
    } else if id < qq + 2u * kq {
        let p = id - qq - kq;
        v_cache[row + p] = qkv_at(base + V_OFF / 4u + p);
    }
}
