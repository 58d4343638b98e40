// rope (GGUF "normal" mode, or NeoX with NEOX) + KV-cache append, in one dispatch.
//
// Threads [0, QP) rotate q in place, one pair each (pair_at: (x[2i], x[2i+1]), or with
// NEOX (x[i], x[i + ROPE_DIMS/2]) for the rotated pairs);
// threads [QP, QP + KP) rotate a pair of k and store it in k_cache row `pos`;
// threads [QP + KP, QP + 2 KP) copy a pair of v into v_cache row `pos`.
// Pair i < ROPE_DIMS / 2 of a head turns by pos · BASE^(-2i / ROPE_DIMS); pairs beyond are
// left as they are (q) or copied unchanged (k). With RING the cache holds MAX_CTX rows
// as a ring (a sliding window's): position pos goes to row pos % MAX_CTX.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 2u;
override ROPE_DIMS: u32 = 2u;
override MAX_CTX: u32 = 1u;
override BASE: f32 = 10000.0;
override NEOX: bool = false;
override RING: bool = false;
const WG: u32 = 256u;

// Bindings and the q/k/v accessors (q_get, q_set, k_get, v_get) come from the file
// prepended to this one: bindings_separate.wgsl or bindings_qkv.wgsl.

// reduce_angle and angle come from angle.wgsl, appended after this file.

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let pos = step[0];
    // The CPU reference refuses pos >= MAX_CTX; here we can only refuse to write
    // outside the cache.
    if pos >= MAX_CTX && !RING {
        return;
    }
    let half = HEAD_DIM / 2u;
    let qp = N_HEADS * half;
    let kp = N_KV_HEADS * half;
    let row = select(pos, pos % MAX_CTX, RING) * N_KV_HEADS * HEAD_DIM;
    // 2-D grid (grid_2d): at most 65535 workgroups per dimension.
    let id = (wg.x + wg.y * nwg.x) * WG + lid;
    if id < qp {
        let i = id % half;
        if i < ROPE_DIMS / 2u {
            let e = (id / half) * HEAD_DIM + pair_at(i);
            let cs = angle(pos, i);
            let x0 = q_get(e.x);
            let x1 = q_get(e.y);
            q_set(e.x, x0 * cs.x - x1 * cs.y);
            q_set(e.y, x0 * cs.y + x1 * cs.x);
        }
    } else if id < qp + kp {
        let p = id - qp;
        let i = p % half;
        let e = (p / half) * HEAD_DIM + pair_at(i);
        var x0 = k_get(e.x);
        var x1 = k_get(e.y);
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
        v_cache[row + e] = v_get(e);
        v_cache[row + e + 1u] = v_get(e + 1u);
    }
}
