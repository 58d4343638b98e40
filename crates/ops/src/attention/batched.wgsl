// Batched causal attention for prompt processing, four query rows of one head per
// workgroup: row b < params[1] (at position params[0] + b) attends to KV-cache rows
// 0..=params[0] + b (at most MAX_CTX).
//
// The decode kernel (fused.wgsl) run once per (head, row) read every key and value row
// once per query row: a prompt of n rows read the cache n times over. Here a workgroup
// takes rows b0..b0+3 of head h, and each key or value row it loads serves all four
// (their scores and weights travel as one vec4, component r for row b0 + r), so the
// cache is read n/4 times. Otherwise the decode kernel's scheme: positions WG at a time,
// each thread scoring one position; each chunk's (max, sum of exp) pairs of the four
// rows meet through subgroupMax and subgroupAdd, then over the subgroups' partials in
// workgroup memory (one barrier; the online-softmax recurrence across chunks); thread
// (g, d4) accumulates vec4 d4 of the values over positions g, g + groups, ...; the
// groups' partial sums meet in workgroup memory at the end, a row at a time.
//
// A row past the batch, or a position past a row's own context, has weight 0 (its score
// NEG), so the rows of one workgroup can see different numbers of positions.
//
// Measured on an H100 (BENCHMARKS.md run 42), against the form before (a tree reduction
// over the workgroup in workgroup memory, 8 barriers a chunk, and the accumulators as
// four loose vec4s): prompt attention 11-16% faster at Llama-8B, SmolLM2 and Qwen2.5
// shapes. Not kept: a workgroup taking the rows of 2-4 query heads that share a KV head
// (each key and value row serving 8-16 pairs, the cache read a quarter as often at
// Llama-8B's shape) ran slower than one head: 28% at Llama-8B (four heads), 48% at
// SmolLM2 (three). More registers a thread and fewer workgroups cost more than the reads
// saved: the kernel is not bound by its cache reads.
// Nor chunks of 128 or 64 positions (fewer scoring threads idle past a causal row's
// end): 4-5% and 17% slower at Llama-8B, 25% and 108% at Gemma 3 270M.

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
// Subgroups per workgroup at most (subgroups of at least 8 lanes: checked on the Rust
// side).
const MAX_SG: u32 = WG / 8u;
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
// Each subgroup's (max, Σ exp(s - max)) of the chunk.
var<workgroup> part_m: array<vec4<f32>, MAX_SG>;
var<workgroup> part_l: array<vec4<f32>, MAX_SG>;

// The positions each of the four rows sees (0 for a row past the batch).
fn contexts(b0: u32, n_rows: u32, pos0: u32) -> vec4<u32> {
    let b = vec4<u32>(b0) + vec4<u32>(0u, 1u, 2u, 3u);
    let n = min(vec4<u32>(pos0 + 1u) + b, vec4<u32>(MAX_CTX));
    return select(vec4<u32>(0u), n, b < vec4<u32>(n_rows));
}

// The four rows' scores of key row `base` (in vec4s), unscaled.
fn scores(base: u32) -> vec4<f32> {
    var d = vec4<f32>(0.0);
    for (var i = 0u; i < HEAD_DIM / 4u; i++) {
        let k = k_cache[base + i];
        d += vec4<f32>(
            dot(q_tile[i], k),
            dot(q_tile[MAX_D4 + i], k),
            dot(q_tile[2u * MAX_D4 + i], k),
            dot(q_tile[3u * MAX_D4 + i], k),
        );
    }
    return d;
}

// The softmax state and value sums: the running max and sum of exp per row, and the
// rows' accumulators (column r for row b0 + r).
struct State {
    m: vec4<f32>,
    l: vec4<f32>,
    acc: mat4x4<f32>,
}

// The chunk's max and sum of exp over this subgroup's scores s, into the partials. Every
// thread calls it (uniform control flow).
fn chunk_part(s: vec4<f32>, valid: vec4<bool>, sg: u32, sg_lane: u32) {
    let sm = subgroupMax(s);
    let sl = subgroupAdd(select(vec4<f32>(0.0), exp(s - sm), valid));
    if sg_lane == 0u {
        part_m[sg] = sm;
        part_l[sg] = sl;
    }
}

// After the partials' barrier: the subgroups' partials merged, the thread's weight into
// probs, the running state rescaled to the new max (the online-softmax recurrence).
fn chunk_merge(s: vec4<f32>, valid: vec4<bool>, lid: u32, n_sg: u32, st: ptr<function, State>) {
    var cm = vec4<f32>(NEG);
    for (var i = 0u; i < n_sg; i++) {
        cm = max(cm, part_m[i]);
    }
    var cl = vec4<f32>(0.0);
    for (var i = 0u; i < n_sg; i++) {
        cl += part_l[i] * exp(part_m[i] - cm);
    }
    let new_m = max((*st).m, cm);
    probs[lid] = select(vec4<f32>(0.0), exp(s - new_m), valid);
    let correction = exp((*st).m - new_m);
    (*st).l = (*st).l * correction + cl * exp(cm - new_m);
    (*st).acc[0] *= correction.x;
    (*st).acc[1] *= correction.y;
    (*st).acc[2] *= correction.z;
    (*st).acc[3] *= correction.w;
    (*st).m = new_m;
}

// Value vec4 v times the four rows' weights at position j (rows past a row's context
// have weight 0 and may hold anything, so a weight-0 product with NaN must not happen:
// select, not multiply).
fn add_values(j: u32, v: vec4<f32>, st: ptr<function, State>) {
    let p = probs[j];
    (*st).acc[0] += select(vec4<f32>(0.0), p.x * v, p.x != 0.0);
    (*st).acc[1] += select(vec4<f32>(0.0), p.y * v, p.y != 0.0);
    (*st).acc[2] += select(vec4<f32>(0.0), p.z * v, p.z != 0.0);
    (*st).acc[3] += select(vec4<f32>(0.0), p.w * v, p.w != 0.0);
}

// Row r: the thread's partial sum a into probs, then (after a barrier) group 0 adds the
// groups' up, divides by the row's sum of exp `row_l` and writes it. Every thread calls
// it (uniform control flow).
fn emit(r: u32, a: vec4<f32>, row_l: f32, lid: u32, g: u32, b0: u32, n_rows: u32, h: u32, d4: u32, d4s: u32, groups: u32) {
    probs[lid] = a;
    workgroupBarrier();
    if g == 0u && b0 + r < n_rows {
        var total = vec4<f32>(0.0);
        for (var k = 0u; k < groups; k++) {
            total += probs[k * d4s + d4];
        }
        let o = total / row_l;
        let at = (b0 + r) * OUT_STRIDE + h * HEAD_DIM + 4u * d4;
        out[at] = o.x;
        out[at + 1u] = o.y;
        out[at + 2u] = o.z;
        out[at + 3u] = o.w;
    }
    workgroupBarrier();
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
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
    let sg = lid / sg_size;
    let n_sg = WG / sg_size;
    // The query tile; rows past the batch read row b0 (their weights are 0).
    for (var i = lid; i < ROWS * d4s; i += WG) {
        let r = i / d4s;
        let b = select(b0, b0 + r, b0 + r < n_rows);
        let at = b * Q_STRIDE + h * HEAD_DIM + 4u * (i % d4s);
        q_tile[r * MAX_D4 + i % d4s] = vec4<f32>(q[at], q[at + 1u], q[at + 2u], q[at + 3u]);
    }
    workgroupBarrier();
    var st = State(vec4<f32>(NEG), vec4<f32>(0.0), mat4x4<f32>());
    for (var c = 0u; c < stop; c += WG) {
        let t = c + lid;
        let valid = vec4<u32>(t) < n_ctx;
        var s = vec4<f32>(NEG);
        if t < stop {
            s = select(vec4<f32>(NEG), scores(t * row + head_off) * SCALE, valid);
        }
        chunk_part(s, valid, sg, sg_lane);
        workgroupBarrier();
        chunk_merge(s, valid, lid, n_sg, &st);
        workgroupBarrier();
        // Each value row once for the four rows; positions past the chunk's end are not
        // read.
        let count = min(WG, stop - c);
        let vbase = c * row + head_off + d4;
        for (var j = g; j < count; j += groups) {
            add_values(j, v_cache[vbase + j * row], &st);
        }
        // probs and the partials are rewritten by the next chunk.
        workgroupBarrier();
    }
    // The groups' partial sums, a row at a time, through probs.
    emit(0u, st.acc[0], st.l.x, lid, g, b0, n_rows, h, d4, d4s, groups);
    emit(1u, st.acc[1], st.l.y, lid, g, b0, n_rows, h, d4, d4s, groups);
    emit(2u, st.acc[2], st.l.z, lid, g, b0, n_rows, h, d4, d4s, groups);
    emit(3u, st.acc[3], st.l.w, lid, g, b0, n_rows, h, d4, d4s, groups);
}
