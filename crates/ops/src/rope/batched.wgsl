// Batched rope + KV-cache append for prompt processing: the rope_qkv kernel for rows
// b < params[1] of a qkv matrix (row stride QKV_STRIDE), row b at position params[0] + b.
// Grid: (ceil(threads per row / WG), rows). Same math as kernel.wgsl (kept in step),
// RING included: the cache is a ring of MAX_CTX rows, position pos in row pos % MAX_CTX.
// With PARTS > 1 the q/k/v gemm summed K in parts (`GemmOut::Parts`): each value is the
// sum of PARTS copies PART_STRIDE floats apart, and the rotated q sum goes to the first.

// The constants, WG and params come from batched_constants.wgsl, prefixed by batched.rs.

@group(0) @binding(1) var<storage, read_write> qkv: array<f32>;
@group(0) @binding(2) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(3) var<storage, read_write> v_cache: array<f32>;

// reduce_angle and angle come from angle.wgsl, appended after this file.

// Element e of q/k/v: its parts summed, in order.
fn qkv_at(e: u32) -> f32 {
    var v = qkv[e];
    for (var p = 1u; p < PARTS; p++) {
        v += qkv[e + p * PART_STRIDE];
    }
    return v;
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
    let base = b * QKV_STRIDE;
    let half = HEAD_DIM / 2u;
    let qp = N_HEADS * half;
    let kp = N_KV_HEADS * half;
    let row = select(pos, pos % MAX_CTX, RING) * N_KV_HEADS * HEAD_DIM;
    let id = wg.x * WG + lid;
    if id < qp {
        let i = id % half;
        if i < ROPE_DIMS / 2u {
            let e = base + Q_OFF + (id / half) * HEAD_DIM + pair_at(i);
            let cs = angle(pos, i);
            let x0 = qkv_at(e.x);
            let x1 = qkv_at(e.y);
            qkv[e.x] = x0 * cs.x - x1 * cs.y;
            qkv[e.y] = x0 * cs.y + x1 * cs.x;
        }
    } else if id < qp + kp {
        let p = id - qp;
        let i = p % half;
        let e = (p / half) * HEAD_DIM + pair_at(i);
        var x0 = qkv_at(base + K_OFF + e.x);
        var x1 = qkv_at(base + K_OFF + e.y);
        if i < ROPE_DIMS / 2u {
            let cs = angle(pos, i);
            let r0 = x0 * cs.x - x1 * cs.y;
            x1 = x0 * cs.y + x1 * cs.x;
            x0 = r0;
        }
        k_cache[row + e.x] = x0;
        k_cache[row + e.y] = x1;
    } else if id < qp + 2u * kp {
        let e = 2u * (id - qp - kp);
        v_cache[row + e] = qkv_at(base + V_OFF + e);
        v_cache[row + e + 1u] = qkv_at(base + V_OFF + e + 1u);
    }
}
