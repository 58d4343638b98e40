// The folded down projection's dot product over a packed q4_1 block (idot_q4_1.wgsl's
// WBlock) and the workgroup's h in f32: d · Σ n · h + m · Σ h.
fn down_dot(wb: WBlock) -> f32 {
    var s = 0.0;
    var sum_h = vec4<f32>(0.0);
    for (var k = 0u; k < 4u; k++) {
        let lo = vec4<f32>(unpack4xU8(wb.q[k] & 0x0F0F0F0Fu));
        let hi = vec4<f32>(unpack4xU8((wb.q[k] >> 4u) & 0x0F0F0F0Fu));
        s += dot(lo, h4(k)) + dot(hi, h4(k + 4u));
        sum_h += h4(k) + h4(k + 4u);
    }
    return wb.dm.x * s + wb.dm.y * dot(sum_h, vec4<f32>(1.0));
}
