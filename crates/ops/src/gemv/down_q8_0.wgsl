// The folded down projection's dot product over a packed q8_0 block (idot_q8_0.wgsl's
// WBlock: q0 elements 0..15, q1 16..31) and the workgroup's h in f32: d · Σ q · h.
fn down_dot(wb: WBlock) -> f32 {
    var s = 0.0;
    for (var k = 0u; k < 4u; k++) {
        s += dot(vec4<f32>(unpack4xI8(wb.q0[k])), h4(k)) + dot(vec4<f32>(unpack4xI8(wb.q1[k])), h4(k + 4u));
    }
    return wb.d * s;
}
