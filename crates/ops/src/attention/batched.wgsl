// Batched causal attention for prompt processing, four query rows of one head per
// workgroup: row b < params[1] (at position params[0] + b) attends to KV-cache rows
// 0..=params[0] + b (at most MAX_CTX).
//
// The decode kernel (fused.wgsl) run once per (head, row) read every key and value row
// once per query row: a prompt of n rows read the cache n times over. Here a workgroup
// takes rows b0..b0+3 of head h, and each key or value row it loads serves all four
// (their scores and weights travel as one vec4, component r for row b0 + r), so the
// cache is read n/4 times. Otherwise the decode kernel's scheme: positions WG at a time,
// each thread scoring one position; one tree reduction per chunk merges the (max, sum of
// exp) pairs of the four rows at once (the online-softmax recurrence); thread (g, d4)
// accumulates vec4 d4 of the values over positions g, g + G, ...; the G partial sums
// meet in workgroup memory at the end, a row at a time.
//
// A row past the batch, or a position past a row's own context, has weight 0 (its score
// NEG), so the rows of one workgroup can see different numbers of positions.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;
// f32 elements per row of q and of out.
override Q_STRIDE: u32 = 0u;
override OUT_STRIDE: u32 = 0u;

const WG: u32 = 256u;
// Query rows per workgroup: the components of a vec4.
const ROWS: u32 = 4u;
// The largest head (in vec4s) the query tile holds.
const MAX_D4: u32 = 64u;
// A finite stand-in for -inf: exp(NEG - m) underflows to 0 without inf - inf = NaN.
const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> params: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<f32>;
// Rows of N_KV_HEADS · HEAD_DIM floats, read as vec4 (HEAD_DIM is a multiple of 4).
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

// The four rows' queries, row r's vec4 i at r · MAX_D4 + i.
var<workgroup> q_tile: array<vec4<f32>, 256>;
// A chunk's weights (component r for row b0 + r); reused for the partial sums at the end.
var<workgroup> probs: array<vec4<f32>, WG>;
var<workgroup> red_m: array<vec4<f32>, WG>;
var<workgroup> red_l: array<vec4<f32>, WG>;

// Merges every thread's four (max, Σ exp(s - max)) pairs into the workgroup's.
fn reduce_softmax(lid: u32, m: vec4<f32>, l: vec4<f32>) -> array<vec4<f32>, 2> {
    red_m[lid] = m;
    red_l[lid] = l;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            let a = red_m[lid];
            let b = red_m[lid + s];
            let mx = max(a, b);
            red_l[lid] = red_l[lid] * exp(a - mx) + red_l[lid + s] * exp(b - mx);
            red_m[lid] = mx;
        }
        workgroupBarrier();
    }
    let r = array<vec4<f32>, 2>(red_m[0], red_l[0]);
    workgroupBarrier();
    return r;
}

// The positions each of the four rows sees (0 for a row past the batch).
fn contexts(b0: u32, n_rows: u32, pos0: u32) -> vec4<u32> {
    let b = vec4<u32>(b0) + vec4<u32>(0u, 1u, 2u, 3u);
    let n = min(vec4<u32>(pos0 + 1u) + b, vec4<u32>(MAX_CTX));
    return select(vec4<u32>(0u), n, b < vec4<u32>(n_rows));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {
    let h = wg.x;
    let b0 = wg.y * ROWS;
    let n_rows = params[1];
    // Workgroup-uniform: tiles past the batch return before any barrier.
    if b0 >= n_rows {
        return;
    }
    let n_ctx = contexts(b0, n_rows, params[0]);
    let stop = max(max(n_ctx.x, n_ctx.y), max(n_ctx.z, n_ctx.w));
    let kv_head = h / (N_HEADS / N_KV_HEADS);
    let d4s = HEAD_DIM / 4u;
    // In vec4s.
    let row = N_KV_HEADS * d4s;
    let head_off = kv_head * d4s;
    let groups = WG / d4s;
    let d4 = lid % d4s;
    let g = lid / d4s;
    // The query tile; rows past the batch read row b0 (their weights are 0).
    for (var i = lid; i < ROWS * d4s; i += WG) {
        let r = i / d4s;
        let b = select(b0, b0 + r, b0 + r < n_rows);
        let at = b * Q_STRIDE + h * HEAD_DIM + 4u * (i % d4s);
        q_tile[r * MAX_D4 + i % d4s] = vec4<f32>(q[at], q[at + 1u], q[at + 2u], q[at + 3u]);
    }
    workgroupBarrier();
    var m = vec4<f32>(NEG);
    var l = vec4<f32>(0.0);
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    for (var c = 0u; c < stop; c += WG) {
        let t = c + lid;
        let valid = vec4<u32>(t) < n_ctx;
        var s = vec4<f32>(NEG);
        if t < stop {
            let base = t * row + head_off;
            var dots = vec4<f32>(0.0);
            for (var i = 0u; i < d4s; i++) {
                let k = k_cache[base + i];
                dots += vec4<f32>(
                    dot(q_tile[i], k),
                    dot(q_tile[MAX_D4 + i], k),
                    dot(q_tile[2u * MAX_D4 + i], k),
                    dot(q_tile[3u * MAX_D4 + i], k),
                );
            }
            s = select(vec4<f32>(NEG), dots * SCALE, valid);
        }
        let chunk = reduce_softmax(lid, s, select(vec4<f32>(0.0), vec4<f32>(1.0), valid));
        let new_m = max(m, chunk[0]);
        probs[lid] = select(vec4<f32>(0.0), exp(s - new_m), valid);
        let correction = exp(m - new_m);
        l = l * correction + chunk[1] * exp(chunk[0] - new_m);
        acc0 *= correction.x;
        acc1 *= correction.y;
        acc2 *= correction.z;
        acc3 *= correction.w;
        m = new_m;
        workgroupBarrier();
        // Each value row once for the four rows; positions past the chunk's end are not
        // read (rows past a row's context have weight 0 and may hold anything, so a
        // weight-0 product with NaN must not happen: select, not multiply).
        let count = min(WG, stop - c);
        let vbase = c * row + head_off + d4;
        for (var j = g; j < count; j += groups) {
            let v = v_cache[vbase + j * row];
            let p = probs[j];
            acc0 += select(vec4<f32>(0.0), p.x * v, p.x != 0.0);
            acc1 += select(vec4<f32>(0.0), p.y * v, p.y != 0.0);
            acc2 += select(vec4<f32>(0.0), p.z * v, p.z != 0.0);
            acc3 += select(vec4<f32>(0.0), p.w * v, p.w != 0.0);
        }
        // probs is rewritten by the next chunk.
        workgroupBarrier();
    }
    // The groups' partial sums, a row at a time, through probs.
    for (var r = 0u; r < ROWS; r++) {
        var a = acc0;
        if r == 1u {
            a = acc1;
        } else if r == 2u {
            a = acc2;
        } else if r == 3u {
            a = acc3;
        }
        probs[lid] = a;
        workgroupBarrier();
        if g == 0u && b0 + r < n_rows {
            var total = vec4<f32>(0.0);
            for (var k = 0u; k < groups; k++) {
                total += probs[k * d4s + d4];
            }
            let o = total / l[r];
            let at = (b0 + r) * OUT_STRIDE + h * HEAD_DIM + 4u * d4;
            out[at] = o.x;
            out[at + 1u] = o.y;
            out[at + 2u] = o.z;
            out[at + 3u] = o.w;
        }
        workgroupBarrier();
    }
}
