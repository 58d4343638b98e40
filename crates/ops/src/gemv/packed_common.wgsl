// The packed weight layout (layout.rs), shared by its format files: quants of every block
// first (16-byte aligned), then the scales region from vec4 SCALES_AT.

@group(0) @binding(0) var<storage, read> w: array<vec4<u32>>;
// x is read through xv(i), defined by the frame (plain, rms-normed or batched).
alias XT = vec4<f32>;

override SCALES_AT: u32;

// The f16 scale d of block i (q4_0, q8_0: half i of the scales region). Self-contained:
// the fused down projection copies it by text with `w` renamed (shader.rs, `down_loader`).
fn block_scale(i: u32) -> f32 {
    let pair = unpack2x16float(w[SCALES_AT + (i >> 3u)][(i >> 1u) & 3u]);
    return select(pair.x, pair.y, (i & 1u) != 0u);
}

// The scales' word holding block i's d (q4_0, q8_0), and d from it: apart, so that a
// prefetch can load the word and unpack it later (gemm_raw.wgsl).
fn scale_word(i: u32) -> u32 {
    return w[SCALES_AT + (i >> 3u)][(i >> 1u) & 3u];
}

fn scale_in(word: u32, i: u32) -> f32 {
    let pair = unpack2x16float(word);
    return select(pair.x, pair.y, (i & 1u) != 0u);
}
