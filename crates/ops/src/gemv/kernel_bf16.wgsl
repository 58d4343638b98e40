// gemv, bf16 weights read as u32 words of two halves, each the top 16 bits of an f32 (so
// widening is a shift or a mask, exact); a unit is a pair of columns, as for f16. With an
// even COLS a pair is one word; with an odd COLS, rows start mid-word and each half is
// fetched on its own.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = f32;

fn n_units() -> u32 {
    return (COLS + 1u) / 2u;
}

fn bf16_at(e: u32) -> f32 {
    let v = w[e >> 1u];
    return bitcast<f32>(select(v << 16u, v & 0xFFFF0000u, (e & 1u) != 0u));
}

fn unit_dot(row: u32, u: u32) -> f32 {
    let c = 2u * u;
    let e = row * COLS + c;
    if (COLS & 1u) == 0u {
        let v = w[e >> 1u];
        let pair = bitcast<vec2<f32>>(vec2<u32>(v << 16u, v & 0xFFFF0000u));
        return dot(pair, vec2<f32>(xv(c), xv(c + 1u)));
    }
    // The last pair of an odd-width row has one column: the neighbouring row's half in
    // that word drops out (and x[c + 1] would be past the end).
    let v0 = bf16_at(e) * xv(c);
    if c + 1u < COLS {
        return v0 + bf16_at(e + 1u) * xv(c + 1u);
    }
    return v0;
}
