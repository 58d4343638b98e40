// The dp4a gemv's K-quant blocks (appended after idot_q4_k.wgsl or idot_q5_k.wgsl, which
// bind `w` as array<vec4<u32>> and define load_block from k_block). Super-blocks of 256
// elements start on 16-byte boundaries (144 and 176 bytes); vec4 0 holds f16 d, f16 dmin
// and the 12 scale bytes. The frame's 32-element block i is sub-block j = i % 8 of
// super-block i / 8: its quants the low (even j) or high (odd j) nibbles of the 32 bytes
// of the pair's two vec4s, in order (0..15, as dot4I8Packed reads them unchanged), its
// value a · q + o with a = d · sc_j, o = −dmin · m_j (ggml's dequantize_row_q4_K).
// sum (a q + o) q̂x dx = a · (dx · sum q q̂x) + o · (dx · sum q̂x) = a · m.x · s + o · m.y,
// as q4_1's.

struct WBlock {
    q0: vec4<u32>,
    q1: vec4<u32>,
    // (a, o): the sub-block's scale and offset.
    ao: vec2<f32>,
}

// Sub-block j of the super-block at vec4 a, the quants of its pair from vec4 `qs` on.
fn k_block(a: u32, j: u32, qs: u32) -> WBlock {
    let head = w[a];
    let c = j / 2u;
    let odd = (j & 1u) != 0u;
    let shift = vec4<u32>(select(0u, 4u, odd));
    let mask = vec4<u32>(0x0F0F0F0Fu);
    let q0 = (w[qs + 2u * c] >> shift) & mask;
    let q1 = (w[qs + 2u * c + 1u] >> shift) & mask;
    let dm = unpack2x16float(head.x);
    let sm = k_scale_min(c, head.y, head.z, head.w);
    return WBlock(q0, q1, vec2<f32>(dm.x * select(sm.x, sm.y, odd), -dm.y * select(sm.z, sm.w, odd)));
}

fn block_idot(wb: WBlock, xa: vec4<u32>, xb: vec4<u32>, m: vec2<f32>) -> f32 {
    let s = idot8(wb.q0, wb.q1, xa, xb);
    return wb.ao.x * (m.x * f32(s)) + wb.ao.y * m.y;
}
