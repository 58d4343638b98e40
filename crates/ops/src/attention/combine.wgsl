// Split-K attention, second dispatch (`attention_combine`): merges the SPLITS partials of
// each head that fused.wgsl wrote with CHUNK > 0 (acc[HEAD_DIM], m, l at
// (h·SPLITS + s)·(HEAD_DIM + 2)): out = Σ_s e^(m_s − M)·acc_s / Σ_s e^(m_s − M)·l_s with
// M = max_s m_s, over the splits that hold positions (s·CHUNK < n_ctx).

override N_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override CHUNK: u32 = 256u;
override SPLITS: u32 = 1u;

const WG: u32 = 64u;
const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> part: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let n_ctx = min(step[1], MAX_CTX);
    let used = min((n_ctx + CHUNK - 1u) / CHUNK, SPLITS);
    let stride = HEAD_DIM + 2u;
    var top = NEG;
    for (var s = 0u; s < used; s++) {
        top = max(top, part[(h * SPLITS + s) * stride + HEAD_DIM]);
    }
    for (var d = lid; d < HEAD_DIM; d += WG) {
        var num = 0.0;
        var den = 0.0;
        for (var s = 0u; s < used; s++) {
            let base = (h * SPLITS + s) * stride;
            let w = exp(part[base + HEAD_DIM] - top);
            num += w * part[base + d];
            den += w * part[base + HEAD_DIM + 1u];
        }
        out[h * HEAD_DIM + d] = num / den;
    }
}
