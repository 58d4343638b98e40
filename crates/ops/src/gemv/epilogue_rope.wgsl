// gemv epilogue for the q/k/v projection: rope and the KV-cache append, as the rope
// kernel does them (rope/kernel.wgsl), on the rows as they come out of the dot products.
// Rows are q | k | v (global row g = OUT_OFFSET + r); rope turns adjacent pairs, and a
// lane owns NR (2 or 4) consecutive rows starting at an even row, so each pair is in one
// lane. q rows are written rotated to y; k rows rotated to k_cache row `pos`; v rows
// copied to v_cache row `pos` (pos = step[0]; nothing is cached when pos >= MAX_CTX).
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@group(0) @binding(B_STEP) var<storage, read> step: array<u32, 4>;
@group(0) @binding(B_KCACHE) var<storage, read_write> k_cache: array<f32>;
@group(0) @binding(B_VCACHE) var<storage, read_write> v_cache: array<f32>;

override Q_DIM: u32;
override KV_DIM: u32;
override HEAD_DIM: u32;
override ROPE_DIMS: u32;
override BASE: f32;
override MAX_CTX: u32;

fn phys_row(r: u32) -> u32 {
    return r;
}

// Whether row pair r is rotated (q or k, within the rope dimensions), and its index.
// Q_DIM is whole heads, so g % HEAD_DIM is the place in the head for q and k alike.
fn rope_index(r: u32) -> vec2<u32> {
    let g = OUT_OFFSET + r;
    let i = (g % HEAD_DIM) / 2u;
    return vec2<u32>(u32(g < Q_DIM + KV_DIM && i < ROPE_DIMS / 2u), i);
}

fn rope_pair(r: u32, a: f32, b: f32) {
    let pos = step[0];
    let ri = rope_index(r);
    var cs = vec2<f32>(1.0, 0.0);
    if ri.x != 0u {
        cs = angle(pos, ri.y);
    }
    rope_pair_at(r, a, b, pos, cs);
}

// rope_pair with the position and the pair's (cos, sin) given (computed ahead; (1, 0)
// for a pair that is not rotated).
fn rope_pair_at(r: u32, a: f32, b: f32, pos: u32, cs: vec2<f32>) {
    if r >= ROWS {
        return;
    }
    let g = OUT_OFFSET + r;
    var v0 = a;
    var v1 = b;
    if rope_index(r).x != 0u {
        v0 = a * cs.x - b * cs.y;
        v1 = a * cs.y + b * cs.x;
    }
    if g < Q_DIM {
        y[g] = v0;
        y[g + 1u] = v1;
        return;
    }
    if pos >= MAX_CTX {
        return;
    }
    let row = pos * KV_DIM;
    if g < Q_DIM + KV_DIM {
        let e = row + g - Q_DIM;
        k_cache[e] = v0;
        k_cache[e + 1u] = v1;
    } else {
        let e = row + g - Q_DIM - KV_DIM;
        v_cache[e] = v0;
        v_cache[e + 1u] = v1;
    }
}

fn emit(r: u32, v: vec4<f32>) {
    rope_pair(r, v.x, v.y);
    if NR > 2u {
        rope_pair(r + 2u, v.z, v.w);
    }
}
