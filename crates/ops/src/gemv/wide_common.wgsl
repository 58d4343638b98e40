// The packed layout (layout.rs) as the wide rows frame reads it: 32-byte elements, the
// quants of every block first (block i's at byte 16i for q4_0 / q4_1, 32i for q8_0),
// then the scales region from byte 16 · SCALES_AT. A row has an even number of blocks,
// so its blocks pair up from an element boundary. The buffer is padded to 32 bytes, so
// the element holding a row's last scales is whole.
@group(0) @binding(0) var<storage, read> w: array<vec4<u64>>;

override SCALES_AT: u32;

// A row's blocks 2p and 2p + 1 as loaded (pair_load in wide_<fmt>.wgsl): their quants
// (q4_0 / q4_1: both in qa; q8_0: one block in each) and scales (d, m of the first block,
// d, m of the second; m is 0 for q4_0 / q8_0). The frames load a pair once and apply it
// to x (pair_dot), the batched frame to every prompt row's x.
struct Pair {
    qa: vec4<u64>,
    qb: vec4<u64>,
    s: vec4<f32>,
}

// The 4-bit values of quant word q at bit offsets `shifts`, as f32 (exact).
fn nib4(q: u32, shifts: vec4<u32>) -> vec4<f32> {
    return vec4<f32>((vec4<u32>(q) >> shifts) & vec4<u32>(15u));
}

// q4_0 / q4_1: one block's 16 quant bytes (u64s a, b) against x vec4s o..o+7 of the step:
// low nibbles are elements 0..15, high nibbles 16..31.
fn q4_dot(a: u64, b: u64, o: u32) -> f32 {
    let lo = vec4<u32>(0u, 8u, 16u, 24u);
    let hi = vec4<u32>(4u, 12u, 20u, 28u);
    let q0 = u32(a);
    let q1 = u32(a >> 32u);
    let q2 = u32(b);
    let q3 = u32(b >> 32u);
    return (dot(nib4(q0, lo), xv(o)) + dot(nib4(q0, hi), xv(o + 4u)))
        + (dot(nib4(q1, lo), xv(o + 1u)) + dot(nib4(q1, hi), xv(o + 5u)))
        + (dot(nib4(q2, lo), xv(o + 2u)) + dot(nib4(q2, hi), xv(o + 6u)))
        + (dot(nib4(q3, lo), xv(o + 3u)) + dot(nib4(q3, hi), xv(o + 7u)));
}

// Σ of x vec4s o..o+7 (one block's 32 elements).
fn x_block_sum(o: u32) -> f32 {
    let s = ((xv(o) + xv(o + 1u)) + (xv(o + 2u) + xv(o + 3u)))
        + ((xv(o + 4u) + xv(o + 5u)) + (xv(o + 6u) + xv(o + 7u)));
    return dot(s, vec4<f32>(1.0));
}

// q4_0 / q8_0 scales: the f16 d of blocks b and b + 1 (b even) of a row, from its window
// of the scales region (one element per 16 blocks, loaded when the pair enters a new one).
fn d_pair(b: u32, p: u32, window: ptr<function, vec4<u64>>) -> vec2<f32> {
    // The pair's two f16 are u32 word SCALES_AT * 4 + b / 2; 8 words to an element.
    let word = SCALES_AT * 4u + (b >> 1u);
    if p == 0u || (word & 7u) == 0u {
        *window = w[word >> 3u];
    }
    let v = (*window)[(word >> 1u) & 3u];
    return unpack2x16float(select(u32(v), u32(v >> 32u), (word & 1u) != 0u));
}
