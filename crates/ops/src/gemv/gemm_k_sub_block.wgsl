// The q4_K / q5_K gemm loaders' shared part (prepended to each; they bind `w` as
// array<u32>): sub-block j of the super-block whose first word is w[a], its quants the
// low (even j) or high (odd j) nibbles of the 32 bytes from word qs + 8 · (j / 2), in
// order, and (d, o) = (d · sc_j, −dmin · m_j). No branches: the coopmat frame calls the
// loaders in control flow that must stay uniform.
fn k_sub_block(a: u32, j: u32, qs: u32) -> WBlock {
    let dm = unpack2x16float(w[a]);
    let sm = k_scale_min(j / 2u, w[a + 1u], w[a + 2u], w[a + 3u]);
    let odd = (j & 1u) != 0u;
    let q = qs + 8u * (j / 2u);
    let shift = vec4<u32>(select(0u, 4u, odd));
    let mask = vec4<u32>(0x0F0F0F0Fu);
    let q0 = (vec4<u32>(w[q], w[q + 1u], w[q + 2u], w[q + 3u]) >> shift) & mask;
    let q1 = (vec4<u32>(w[q + 4u], w[q + 5u], w[q + 6u], w[q + 7u]) >> shift) & mask;
    let d = vec2<f32>(dm.x * select(sm.x, sm.y, odd), -dm.y * select(sm.z, sm.w, odd));
    return WBlock(q0, q1, d);
}

// A K-quant sub-block, unpacked already, as the frames' raw block (gemm_raw.wgsl).
fn k_raw(b: WBlock) -> WRaw {
    return WRaw(b.q0, b.q1, bitcast<vec2<u32>>(b.dm));
}

fn unpack_wraw(r: WRaw) -> WBlock {
    return WBlock(r.q0, r.q1, bitcast<vec2<f32>>(r.s));
}
