// The element offsets in a head of rope pair i: (2i, 2i + 1) in GGUF "normal" mode; with
// NEOX, (i, i + ROPE_DIMS/2) for the rotated pairs (i < ROPE_DIMS/2), the rest as normal
// (dims past ROPE_DIMS, left as they are). Either way each dim is in exactly one pair.
fn pair_at(i: u32) -> vec2<u32> {
    if NEOX && i < ROPE_DIMS / 2u {
        return vec2<u32>(i, i + ROPE_DIMS / 2u);
    }
    return vec2<u32>(2u * i, 2u * i + 1u);
}
