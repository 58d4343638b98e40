// q4_K / q5_K: ggml's get_scale_min_k4, the 6-bit scale (x) and min (y) of sub-block j
// from the 12 scale bytes starting at byte `at`.
fn scale_min_k4(at: u32, j: u32) -> vec2<u32> {
    if j < 4u {
        return vec2<u32>(byte_at(at + j) & 63u, byte_at(at + j + 4u) & 63u);
    }
    let b = byte_at(at + j + 4u);
    return vec2<u32>((b & 15u) | ((byte_at(at + j - 4u) >> 6u) << 4u), (b >> 4u) | ((byte_at(at + j) >> 6u) << 4u));
}
