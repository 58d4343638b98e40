// dp4a gemv, q5_0 weights as the GGUF bytes: 22-byte blocks {f16 d, u32 qh, u8 qs[16]},
// read as words (kernel_q5_0.wgsl's layout: a block starts on an even byte; its payload
// after d is word-aligned when the block starts mid-word, else spliced by realign). Quant
// word k holds elements 4k..4k+3 in its low nibbles and 4k+16..4k+19 in its high ones;
// bit j of qh is element j's fifth bit, spliced in as bit 4 of the element's byte. The
// quants are then 0..31, which dot4I8Packed reads unchanged; the zero point 16 comes off
// through the block's sum of q: sum (n - 16) q d = d * (dx * sum n q) - 16 * d * (dx *
// sum q) = d * (m.x * s - 16 * m.y). No packed layout: the other frames read q5_0 as
// GGUF bytes too, and the bytes per token are the same.

@group(0) @binding(0) var<storage, read> w: array<u32>;

struct WBlock {
    q: vec4<u32>,
    qh: u32,
    d: f32,
}

fn load_block(row: u32, b: u32) -> WBlock {
    let byte0 = (row * (COLS / 32u) + b) * 22u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let w1 = w[a + 1u];
    let w2 = w[a + 2u];
    let w3 = w[a + 3u];
    let w4 = w[a + 4u];
    let w5 = w[a + 5u];
    let q = vec4<u32>(realign(w1, w2, mid), realign(w2, w3, mid), realign(w3, w4, mid), realign(w4, w5, mid));
    return WBlock(q, realign(w0, w1, mid), unpack2x16float(select(w0, w0 >> 16u, mid)).x);
}

fn block_idot(wb: WBlock, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let lo = nibbles_lo(wb.q) | fifth_words(wb.qh, 0u);
    let hi = nibbles_hi(wb.q) | fifth_words(wb.qh, 16u);
    let s = idot8(lo, hi, xa, xb);
    return wb.d * (m.x * f32(s) - 16.0 * m.y);
}
