// One head's RMS norm, appended to head_norm/kernel.wgsl (which declares qkv, q_weight,
// k_weight, HEAD_DIM, EPS, WG, PER and `partial: array<f32, WG>`). Thread tid's elements tid + j·WG of the head at `base`,
// x / sqrt(mean(x²) + EPS) · weight (the q weight for a q head, else the k weight), 0
// past HEAD_DIM. It has barriers: call it from workgroup-uniform control flow.
fn normed_head(base: u32, is_q: bool, tid: u32) -> array<f32, PER> {
    var v: array<f32, PER>;
    var acc = 0.0;
    for (var j = 0u; j < PER; j++) {
        let i = tid + j * WG;
        v[j] = select(0.0, qkv[base + min(i, HEAD_DIM - 1u)], i < HEAD_DIM);
        acc += v[j] * v[j];
    }
    partial[tid] = acc;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if tid < s {
            partial[tid] += partial[tid + s];
        }
        workgroupBarrier();
    }
    let scale = inverseSqrt(partial[0] / f32(HEAD_DIM) + EPS);
    for (var j = 0u; j < PER; j++) {
        let i = min(tid + j * WG, HEAD_DIM - 1u);
        v[j] = v[j] * scale * select(k_weight[i], q_weight[i], is_q);
    }
    return v;
}
