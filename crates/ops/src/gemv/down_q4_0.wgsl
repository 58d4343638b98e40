// The folded down projection's dot product over a packed q4_0 block (idot_q4_0.wgsl's
// WBlock) and the workgroup's h in f32: d · Σ (n - 8) · h.
fn down_dot(wb: WBlock) -> f32 {
    var s = 0.0;
    for (var k = 0u; k < 4u; k++) {
        let lo = vec4<f32>(unpack4xU8(wb.q[k] & 0x0F0F0F0Fu)) - 8.0;
        let hi = vec4<f32>(unpack4xU8((wb.q[k] >> 4u) & 0x0F0F0F0Fu)) - 8.0;
        s += dot(lo, h4(k)) + dot(hi, h4(k + 4u));
    }
    return wscale(wb) * s;
}
