// gemv, f16 weights read as u32 words of two halves; a unit is a pair of columns. With an
// even COLS (every real model) a pair is one word; with an odd COLS, rows start mid-word
// and each half is fetched on its own.

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = f32;

fn n_units() -> u32 {
    return (COLS + 1u) / 2u;
}

fn half_at(e: u32) -> f32 {
    let h = unpack2x16float(w[e >> 1u]);
    return select(h.x, h.y, (e & 1u) != 0u);
}

fn unit_dot(row: u32, u: u32) -> f32 {
    let c = 2u * u;
    let e = row * COLS + c;
    if (COLS & 1u) == 0u {
        return dot(unpack2x16float(w[e >> 1u]), vec2<f32>(xv(c), xv(c + 1u)));
    }
    // The last pair of an odd-width row has one column: the neighbouring row's half in
    // that word drops out (and x[c + 1] would be past the end).
    let v0 = half_at(e) * xv(c);
    if c + 1u < COLS {
        return v0 + half_at(e + 1u) * xv(c + 1u);
    }
    return v0;
}
