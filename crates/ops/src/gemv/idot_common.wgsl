// Integer dot products over one 32-element block (the dp4a gemv and gemm): 8 words of
// int8 weights (wa: elements 0..15, wb: 16..31) against 8 words of int8 x (xa, xc).

fn idot8(wa: vec4<u32>, wb: vec4<u32>, xa: vec4<u32>, xc: vec4<u32>) -> i32 {
    return ((dot4I8Packed(wa.x, xa.x) + dot4I8Packed(wa.y, xa.y))
        + (dot4I8Packed(wa.z, xa.z) + dot4I8Packed(wa.w, xa.w)))
        + ((dot4I8Packed(wb.x, xc.x) + dot4I8Packed(wb.y, xc.y))
        + (dot4I8Packed(wb.z, xc.z) + dot4I8Packed(wb.w, xc.w)));
}

// A 4-bit block's 16 quant bytes as int8 words: low nibbles (elements 0..15), high
// nibbles (16..31).
fn nibbles_lo(q: vec4<u32>) -> vec4<u32> {
    return q & vec4<u32>(0x0F0F0F0Fu);
}

fn nibbles_hi(q: vec4<u32>) -> vec4<u32> {
    return (q >> vec4<u32>(4u)) & vec4<u32>(0x0F0F0F0Fu);
}
