// dp4a gemv, q5_1 weights as the GGUF bytes: 24-byte (6-word, always aligned) blocks
// {f16 d, f16 m, u32 qh, u8 qs[16]}. Quants 0..31 as q5_0's (idot_q5_0.wgsl: nibbles with
// the fifth bits of qh spliced in). sum (d n + m) q dx = d * (dx * sum n q) + m * (dx *
// sum q) = d * m.x * s + m * m.y.

@group(0) @binding(0) var<storage, read> w: array<u32>;

struct WBlock {
    q: vec4<u32>,
    qh: u32,
    dm: vec2<f32>,
}

fn load_block(row: u32, b: u32) -> WBlock {
    let a = (row * (COLS / 32u) + b) * 6u;
    let q = vec4<u32>(w[a + 2u], w[a + 3u], w[a + 4u], w[a + 5u]);
    return WBlock(q, w[a + 1u], unpack2x16float(w[a]));
}

fn block_idot(wb: WBlock, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let lo = nibbles_lo(wb.q) | fifth_words(wb.qh, 0u);
    let hi = nibbles_hi(wb.q) | fifth_words(wb.qh, 16u);
    let s = idot8(lo, hi, xa, xb);
    return wb.dm.x * (m.x * f32(s)) + wb.dm.y * m.y;
}
