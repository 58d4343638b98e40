// gemv, q4_1 weights in the packed layout (layout.rs): block i's 16 quant bytes are
// vec4 i, its (f16 d, f16 m) is word i of the scales region, which starts at vec4
// SCALES_AT. Unit k (quant word k) covers elements 4k..4k+3 (low nibbles) and
// 4k+16..4k+19 (high nibbles). sum (q*d + m) * x = d * sum q*x + m * sum x.

// (d, m) of block i.
fn block_dm(i: u32) -> vec2<f32> {
    return unpack2x16float(w[SCALES_AT + (i >> 2u)][i & 3u]);
}

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 2u;
    let k = u & 3u;
    let i = row * (COLS / 32u) + b;
    let q = w[i][k];
    let o = b * 8u + k;
    let xl = xv(o);
    let xh = xv(o + 4u);
    let s = dot(nib_lo(q) - TWO23, xl) + dot(nib_hi(q) - TWO23, xh);
    let dm = block_dm(i);
    return dm.x * s + dm.y * dot(xl + xh, vec4<f32>(1.0));
}

// A whole block: one 16-byte load of quants, one of the (d, m) word.
fn block_dot(row: u32, b: u32) -> f32 {
    let i = row * (COLS / 32u) + b;
    let q = w[i];
    let o = b * 8u;
    let x0 = xv(o);
    let x1 = xv(o + 1u);
    let x2 = xv(o + 2u);
    let x3 = xv(o + 3u);
    let x4 = xv(o + 4u);
    let x5 = xv(o + 5u);
    let x6 = xv(o + 6u);
    let x7 = xv(o + 7u);
    let s = (dot(nib_lo(q.x) - TWO23, x0) + dot(nib_hi(q.x) - TWO23, x4))
        + (dot(nib_lo(q.y) - TWO23, x1) + dot(nib_hi(q.y) - TWO23, x5))
        + (dot(nib_lo(q.z) - TWO23, x2) + dot(nib_hi(q.z) - TWO23, x6))
        + (dot(nib_lo(q.w) - TWO23, x3) + dot(nib_hi(q.w) - TWO23, x7));
    let sx = ((x0 + x1) + (x2 + x3)) + ((x4 + x5) + (x6 + x7));
    let dm = block_dm(i);
    return dm.x * s + dm.y * dot(sx, vec4<f32>(1.0));
}
