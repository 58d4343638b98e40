// The packed weight layout (layout.rs), shared by its format files: quants of every block
// first (16-byte aligned), then the scales region from vec4 SCALES_AT.

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

override SCALES_AT: u32;

// The f16 scale d of block i (q4_0, q8_0: half i of the scales region).
fn block_scale(i: u32) -> f32 {
    let pair = unpack2x16float(w[SCALES_AT + (i >> 3u)][(i >> 1u) & 3u]);
    return select(pair.x, pair.y, (i & 1u) != 0u);
}
