// A head's result, shared by fused.wgsl and groups.wgsl (appended to both; they declare
// `out: array<f32>`, HEAD_DIM and CHUNK). Lane d4 holds elements 4·d4.. of the head's
// unnormalized sum `acc`, with the softmax's running max m and sum l. With CHUNK == 0
// the output acc / l goes to `o` (the head's first element); with split-K the partial
// (acc, m, l) of workgroup `slot` (h·SPLITS + s) goes where combine.wgsl reads it.
fn emit_head(o: u32, slot: u32, d4: u32, acc: vec4<f32>, m: f32, l: f32) {
    if CHUNK == 0u {
        let at = o + 4u * d4;
        let r = acc / l;
        out[at] = r.x;
        out[at + 1u] = r.y;
        out[at + 2u] = r.z;
        out[at + 3u] = r.w;
    } else {
        let base = slot * (HEAD_DIM + 2u);
        let at = base + 4u * d4;
        out[at] = acc.x;
        out[at + 1u] = acc.y;
        out[at + 2u] = acc.z;
        out[at + 3u] = acc.w;
        if d4 == 0u {
            out[base + HEAD_DIM] = m;
            out[base + HEAD_DIM + 1u] = l;
        }
    }
}
