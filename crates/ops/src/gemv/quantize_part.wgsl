// x quantized per 32-element block for integer dot products (kernel_dp4a.wgsl's phase 1;
// attention/groups_o.wgsl's head output). The includer declares xq (2 vec4<u32> of int8
// per block), xm ((d, d · Σq) per block), X_BLOCKS and `normed(b, k, x4)` (what is
// quantized: x4 itself, or times a norm weight).

// Quantizes block b of x, lane `part` (0..3) holding its elements 8·part..8·part+7 as
// lo and hi (x itself; times the norm weight with rms_norm folded in): the 4 lanes of the
// block meet through two shuffles each for max |x| and the sum of q. Called in uniform
// control flow by all lanes.
fn quantize_part(b: u32, part: u32, lo: vec4<f32>, hi: vec4<f32>) {
    let v0 = normed(b, 2u * part, lo);
    let v1 = normed(b, 2u * part + 1u, hi);
    let a = max(abs(v0), abs(v1));
    var amax = max(max(a.x, a.y), max(a.z, a.w));
    amax = max(amax, subgroupShuffleXor(amax, 1u));
    amax = max(amax, subgroupShuffleXor(amax, 2u));
    let d = amax / 127.0;
    let inv = select(0.0, 1.0 / d, d > 0.0);
    let q0 = vec4<i32>(round(v0 * inv));
    let q1 = vec4<i32>(round(v1 * inv));
    let q = q0 + q1;
    var qs = (q.x + q.y) + (q.z + q.w);
    qs += subgroupShuffleXor(qs, 1u);
    qs += subgroupShuffleXor(qs, 2u);
    if b < X_BLOCKS {
        let i = 2u * b + (part >> 1u);
        let c = 2u * (part & 1u);
        xq[i][c] = pack4xI8Clamp(q0);
        xq[i][c + 1u] = pack4xI8Clamp(q1);
        if part == 0u {
            xm[b] = vec2<f32>(d, d * f32(qs));
        }
    }
}
