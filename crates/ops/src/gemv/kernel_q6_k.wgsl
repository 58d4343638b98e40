// gemv, q6_K weights: 210-byte super-blocks {u8 ql[128], u8 qh[64], i8 scales[16], f16 d}
// of 256 elements; see `quant/k.rs`. 210 bytes is 52.5 words, so every other block starts
// mid-word and its words are spliced from two loads (`k_word`).
//
// Unit k (0..32): half h = k / 16 (128 elements), g = (k / 8) % 2, l = 4 (k % 8). It reads
// ql word 16h + 8g + k % 8 and qh word 8h + k % 8; the low nibbles (qh bits 2g, 2g + 1)
// are elements 128h + 32g + l..+3, scale 8h + l/16 + 2g, and the high nibbles (qh bits
// 2g + 4, 2g + 5) elements 64 further on, scale 4 further on. x = (d·sc)·(q − 32).

@group(0) @binding(0) var<storage, read> w: array<u32>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

// The 4 bytes at `byte` (even): one word, or the halves of two when `byte` is not a
// multiple of 4. Never reads past the block's last word (the f16 d is read apart).
fn k_word(byte: u32) -> u32 {
    let a = byte >> 2u;
    let lo = w[a];
    let hi = w[a + 1u];
    return select(lo, (lo >> 16u) | (hi << 16u), (byte & 2u) != 0u);
}

fn unit_dot(row: u32, u: u32) -> f32 {
    let b = u >> 5u;
    let k = u & 31u;
    let byte0 = (row * (COLS / 256u) + b) * 210u;
    let hf = k >> 4u;
    let g = (k >> 3u) & 1u;
    let i = k & 7u;
    let db = byte0 + 208u;
    let dw = w[db >> 2u];
    let d = unpack2x16float(select(dw, dw >> 16u, (db & 2u) != 0u)).x;
    let ql = k_word(byte0 + 64u * hf + 32u * g + 4u * i);
    let qh = k_word(byte0 + 128u + 32u * hf + 4u * i) >> (2u * g);
    // Scales 8h..8h+3 and 8h+4..8h+7; this unit's pair sits at byte l/16 + 2g of each.
    let sb = byte0 + 192u + 8u * hf;
    let sw = vec2<u32>(k_word(sb), k_word(sb + 4u));
    let sh = 8u * ((i >> 2u) + 2u * g);
    let sc = i8_pair((sw >> vec2<u32>(sh)) & vec2<u32>(0xFFu));
    let lo = (ql & 0x0F0F0F0Fu) | ((qh & 0x03030303u) << 4u);
    let hi = ((ql >> 4u) & 0x0F0F0F0Fu) | (((qh >> 4u) & 0x03030303u) << 4u);
    let o = b * 64u + hf * 32u + g * 8u + i;
    let ds = d * sc;
    let z = TWO23 + 32.0;
    return ds.x * dot(u8x4(lo) - z, xv(o)) + ds.y * dot(u8x4(hi) - z, xv(o + 16u));
}
