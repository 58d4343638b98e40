// Batched causal attention for prompt processing on cooperative matrices (tensor cores):
// the same op as batched.wgsl (row b < params[1], at position params[0] + b, attends to
// KV-cache rows 0..min(params[0] + b + 1, MAX_CTX)), 64 query rows of one head per
// workgroup, the cache walked in tiles of 32 keys.
//
// Why: batched.wgsl scores and sums on the CUDA cores, one dot product per (row, key); at
// Llama-8B's shape its 512-row prompt took 9.1 ms of attention, 14% of pp512 (BENCHMARKS.md
// run 42). Here Q·Kᵀ and P·V are 16x16x16 f16 multiplies with f32 accumulators (wgpu's
// experimental `wgpu_cooperative_matrix`, as kernel_gemm_coopmat.wgsl).
//
// Two passes over the keys, so that the output never needs rescaling: KHR cooperative
// matrices have no per-row operations, and the online softmax would rescale the output's
// rows at every tile (through workgroup memory). Pass 1 computes each row's max m and
// Σ exp(s - m); pass 2 computes the scores again (tensor-core work is cheap here) and
// multiplies the final weights exp(s - m) / Σ, rounded to f16, into the output
// accumulators, which stay in registers until the end.
//
// Four subgroups of 32 lanes; subgroup g owns query rows 16g..16g + 15 of the tile. Its q
// fragments (Q · SCALE in f16, HEAD_DIM / 16 of them) are loaded once. Per tile, the K
// (and in pass 2 V) rows are staged in workgroup memory as f16, keys past the workgroup's
// last visible one as zeros (a weight of 0 times a stale value must not make NaN). Each
// subgroup's scores leave through its own 16x32 f32 of workgroup memory, where lane l
// takes row l / 2, keys 16 · (l % 2)..+15 (its partner lane, l ^ 1, the other half).
//
// Rounding: q · SCALE, k, v and the weights are rounded to f16 (relative error 2^-11
// each); the dot products and sums are f32. Values past f16's range (65504) are not
// representable here (nor in the coopmat gemm's x); where they can occur, `--kernel
// prefill=dp4a` or `batched` keeps the prompt off f16.
//
// Template (attention/batched.rs `coopmat_shader`): HEAD_DIMu (16..128 in steps of 16),
// and the fragment code for it: Q_FRAGMENTS, SCORES (the tile's two 16-key score
// fragments), OUT_ACCUMULATORS, VALUES (P · V into them), EMITS.
//
// Index bounds (built without naga's runtime checks, like the coopmat gemm): q rows are
// clamped below min(params[1], MAX_BATCH) <= MAX_BATCH, cache rows below MAX_CTX, and the
// Rust side checks the buffers hold MAX_BATCH rows of q and out and MAX_CTX cache rows;
// kt holds BQ rows of SK vec4s (a fragment of rows 16g.. ends at row 63 < BQ; key
// fragments at rows 16j + 15 <= 31), vt BK rows, st / pt 128 vec4s per subgroup (a
// 16x32 row-major fragment pair from 4j with stride 8 ends at 127; an output fragment
// with stride 4 at 63). Every loop is bounded by a constant or by `stop` <= MAX_CTX.

enable f16;
enable wgpu_cooperative_matrix;

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
// The composed HEAD_DIM (the executor reads it; the kernel uses D).
override HEAD_DIM: u32 = HEAD_DIMu;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;
// f32 elements per row of q and of out (multiples of 4).
override Q_STRIDE: u32 = 0u;
override OUT_STRIDE: u32 = 0u;
// Rows of q and out the buffers hold: the batch is clamped to it.
override MAX_BATCH: u32 = 1u;

const D: u32 = HEAD_DIMu;
const D4: u32 = D / 4u;
// Query rows per workgroup (4 subgroups of 16) and keys per tile.
const BQ: u32 = 64u;
const BK: u32 = 32u;
const WG: u32 = 128u;
// Row stride of the staged q / k / v tiles in vec4<f16>s (D + 8 halves: rows 16-byte
// aligned and staggered over the banks).
const SK: u32 = D4 + 2u;
// A subgroup's 16 rows x 32 keys of workgroup memory, in vec4s.
const PART: u32 = 128u;
// A finite stand-in for -inf: exp(NEG - m) underflows to 0 without inf - inf = NaN.
const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> params: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
// Rows of N_KV_HEADS · HEAD_DIM floats.
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<vec4<f32>>;

// Every array read by cooperative loads is declared before the f32 one (st), as in the
// coopmat gemm: with pt declared after st, the NVIDIA driver (580.159.04, H200) loaded its
// fragments from 8 bytes (one vec4<f16>) before where the plain stores had put them, and
// every row took the weights of keys 4 to the left (BENCHMARKS.md run 44).
// The q tile (BQ rows) first, then each K tile (BK rows), [row][dim].
var<workgroup> kt: array<vec4<f16>, KT_SIZEu>; // BQ * SK
var<workgroup> vt: array<vec4<f16>, VT_SIZEu>; // BK * SK
// Per subgroup: the weights, f16 row-major [row][key].
var<workgroup> pt: array<vec4<f16>, 512>; // 4 * PART
// Per subgroup: scores (pass 1 and 2) or an output fragment (the end), f32 row-major.
var<workgroup> st: array<vec4<f32>, 512>; // 4 * PART
// (pos0, batch size), read through workgroupUniformLoad: the cooperative operations and
// barriers need uniform control flow, and naga counts a storage read as non-uniform.
var<workgroup> ctl: vec2<u32>;

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        ctl = vec2<u32>(params[0], min(params[1], MAX_BATCH));
    }
    let c = workgroupUniformLoad(&ctl);
    let b0 = wg.y * BQ;
    if b0 < c.y {
        tile(wg.x, b0, c.x, c.y, lid);
    }
}

// Scores of keys key..key + 3 where they are visible to a row that sees n_ctx keys, NEG
// where not.
fn masked(s: vec4<f32>, key: u32, n_ctx: u32) -> vec4<f32> {
    let keys = vec4<u32>(key) + vec4<u32>(0u, 1u, 2u, 3u);
    return select(vec4<f32>(NEG), s, keys < vec4<u32>(n_ctx));
}

// exp(s - m) for visible scores, 0 for masked ones.
fn weights(s: vec4<f32>, m: f32) -> vec4<f32> {
    return select(vec4<f32>(0.0), exp(s - vec4<f32>(m)), s > vec4<f32>(NEG));
}

fn max4(v: vec4<f32>) -> f32 {
    return max(max(v.x, v.y), max(v.z, v.w));
}

// Cache vec4s a thread stages per tile (BK · D4 of them over WG threads: 1..8).
const SPT: u32 = BK * D4 / WG;

// The thread's SPT vec4s of BK cache rows from key k0 (KV head at vec4 head4 of rows
// row4 vec4s long) of the keys (`from_v`: the values): a tile's next rows are loaded into
// registers while the current one is multiplied, and staged (`put`) only after, when
// nothing waits on them before.
fn fetch(k0: u32, row4: u32, head4: u32, lid: u32, from_v: bool) -> array<vec4<f32>, 8> {
    var out: array<vec4<f32>, 8>;
    for (var j = 0u; j < SPT; j++) {
        let i = lid + j * WG;
        let at = min(k0 + i / D4, MAX_CTX - 1u) * row4 + head4 + i % D4;
        if from_v {
            out[j] = v_cache[at];
        } else {
            out[j] = k_cache[at];
        }
    }
    return out;
}

// Stages the fetched rows of the tile from key k0 as f16 into kt (`into_v`: vt), keys at
// or past `stop` as zeros.
fn put(rows: array<vec4<f32>, 8>, k0: u32, stop: u32, lid: u32, into_v: bool) {
    for (var j = 0u; j < SPT; j++) {
        let i = lid + j * WG;
        let at = (i / D4) * SK + i % D4;
        let v = vec4<f16>(select(vec4<f32>(0.0), rows[j], k0 + i / D4 < stop));
        if into_v {
            vt[at] = v;
        } else {
            kt[at] = v;
        }
    }
}

// The workgroup's tile: query rows b0.. (of n, from position pos0) of head h.
fn tile(h: u32, b0: u32, pos0: u32, n: u32, lid: u32) {
    let kv_head = h / (N_HEADS / N_KV_HEADS);
    let row4 = N_KV_HEADS * D4;
    let head4 = kv_head * D4;
    let sg = lid / 32u;
    let lane = lid % 32u;
    // The lane's softmax row and half of the tile's keys.
    let m_row = lane / 2u;
    let half = lane % 2u;
    let b = b0 + 16u * sg + m_row;
    let n_ctx = select(0u, min(pos0 + b + 1u, MAX_CTX), b < n);
    // Keys any row of the tile sees (uniform).
    let stop = min(pos0 + min(b0 + BQ, n), MAX_CTX);
    // q · SCALE in f16; rows past the batch read the last row (their output is not
    // written).
    for (var i = lid; i < BQ * D4; i += WG) {
        let r = i / D4;
        let col = i % D4;
        let row = min(b0 + r, n - 1u);
        kt[r * SK + col] = vec4<f16>(q[row * (Q_STRIDE / 4u) + h * D4 + col] * SCALE);
    }
    workgroupBarrier();
    let sk = SK;
    let s8 = 8u;
    // Each tile's score accumulators start from this zero matrix.
    var zero = coop_mat16x16<f32, C>();
Q_FRAGMENTS
    workgroupBarrier();
    let own = sg * PART;
    let at = own + m_row * 8u + half * 4u;
    let key_off = 16u * half;

    // Pass 1: each row's max and sum of exp.
    var m_run = NEG;
    var l_run = 0.0;
    var next_k = fetch(0u, row4, head4, lid, false);
    for (var k0 = 0u; k0 < stop; k0 += BK) {
        put(next_k, k0, stop, lid, false);
        workgroupBarrier();
        if k0 + BK < stop {
            next_k = fetch(k0 + BK, row4, head4, lid, false);
        }
SCORES
        workgroupBarrier();
        let sc = lane_scores(own, m_row, half, k0 + key_off, n_ctx);
        var mx = max(max(max4(sc[0]), max4(sc[1])), max(max4(sc[2]), max4(sc[3])));
        mx = max(mx, subgroupShuffleXor(mx, 1u));
        let new_m = max(m_run, mx);
        let e = (weights(sc[0], new_m) + weights(sc[1], new_m)) + (weights(sc[2], new_m) + weights(sc[3], new_m));
        var sum = dot(e, vec4<f32>(1.0));
        sum += subgroupShuffleXor(sum, 1u);
        l_run = l_run * exp(m_run - new_m) + sum;
        m_run = new_m;
        // kt and st are rewritten by the next tile.
        workgroupBarrier();
    }

    // Pass 2: the weights, normalized, times V.
    let inv_l = select(0.0, 1.0 / l_run, l_run > 0.0);
OUT_ACCUMULATORS
    next_k = fetch(0u, row4, head4, lid, false);
    var next_v = fetch(0u, row4, head4, lid, true);
    for (var k0 = 0u; k0 < stop; k0 += BK) {
        put(next_k, k0, stop, lid, false);
        put(next_v, k0, stop, lid, true);
        workgroupBarrier();
        if k0 + BK < stop {
            next_k = fetch(k0 + BK, row4, head4, lid, false);
            next_v = fetch(k0 + BK, row4, head4, lid, true);
        }
SCORES
        workgroupBarrier();
        let sc = lane_scores(own, m_row, half, k0 + key_off, n_ctx);
        pt[at] = vec4<f16>(weights(sc[0], m_run) * inv_l);
        pt[at + 1u] = vec4<f16>(weights(sc[1], m_run) * inv_l);
        pt[at + 2u] = vec4<f16>(weights(sc[2], m_run) * inv_l);
        pt[at + 3u] = vec4<f16>(weights(sc[3], m_run) * inv_l);
        workgroupBarrier();
VALUES
        // kt, vt, st and pt are rewritten by the next tile.
        workgroupBarrier();
    }
EMITS
}

// Output fragment o (the subgroup's 16 rows, dims 16 · dd..) through its part of st into
// out: lane l writes row l / 2, dims 8 · (l % 2)..+7.
fn emit(o: coop_mat16x16<f32, C>, dd: u32, own: u32, lane: u32, b0: u32, sg: u32, h: u32, n: u32) {
    let s = 4u;
    coopStoreT(o, &st[own], s);
    workgroupBarrier();
    let r = lane / 2u;
    let b = b0 + 16u * sg + r;
    if b < n {
        let src = own + r * 4u + (lane % 2u) * 2u;
        let dst = b * (OUT_STRIDE / 4u) + h * D4 + dd * 4u + (lane % 2u) * 2u;
        out[dst] = st[src];
        out[dst + 1u] = st[src + 1u];
    }
    workgroupBarrier();
}

// The lane's 16 scores of row m (its half of the tile's keys, from key kb), masked past
// n_ctx: column i holds keys kb + 4i..kb + 4i + 3.
fn lane_scores(own: u32, m: u32, half: u32, kb: u32, n_ctx: u32) -> mat4x4<f32> {
    let at = own + m * 8u + half * 4u;
    return mat4x4<f32>(
        masked(st[at], kb, n_ctx),
        masked(st[at + 1u], kb + 4u, n_ctx),
        masked(st[at + 2u], kb + 8u, n_ctx),
        masked(st[at + 3u], kb + 12u, n_ctx),
    );
}
