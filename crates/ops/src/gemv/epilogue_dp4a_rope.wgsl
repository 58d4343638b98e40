// The dp4a frame's hooks for the rope epilogue (epilogue_rope.wgsl): the position and
// the (cos, sin) of the lane's pairs, computed at the start (a = pair 0, pair 1; (1, 0)
// for a pair that is not rotated).
fn epilogue_prefetch(lane: u32, row0: u32) -> Prefetched {
    var p = Prefetched(vec4<f32>(1.0, 0.0, 1.0, 0.0), 0u);
    if lane == 0u {
        let pos = step[0];
        let r0 = rope_index(row0);
        if r0.x != 0u {
            p.a = vec4<f32>(angle(pos, r0.y), p.a.zw);
        }
        let r1 = rope_index(row0 + 2u);
        if NR > 2u && r1.x != 0u {
            p.a = vec4<f32>(p.a.xy, angle(pos, r1.y));
        }
        p.pos = pos;
    }
    return p;
}

fn emit_prefetched(r: u32, v: vec4<f32>, p: Prefetched) {
    rope_pair_at(r, v.x, v.y, p.pos, p.a.xy);
    if NR > 2u {
        rope_pair_at(r + 2u, v.z, v.w, p.pos, p.a.zw);
    }
}

// No work on the workgroup's rows together.
fn tail_prefetch(lid: u32, wg_lin: u32) {}

fn tail(lid: u32, wg_lin: u32) {}
