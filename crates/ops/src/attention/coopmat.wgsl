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
// One pass over the keys (an online softmax with a lagging reference max). KHR cooperative
// matrices have no per-row operations, so rescaling the output accumulators means a trip
// through workgroup memory; here it is rare. Each row keeps a reference m_ref and takes
// weights exp(s - m_ref) (unnormalized, at most e^LAG, rounded to f16) into the f32 output
// accumulators and its f32 sum l. Only when a tile holds a score above m_ref + LAG does the
// row raise m_ref to the tile's max and scale its l and output row by exp(old - new); the
// accumulators go through workgroup memory then, in every subgroup at once (the choice
// must be uniform: any row of the workgroup raising in this tile). A row's first visible
// tile always raises it (m_ref starts at NEG, the output still zero: nothing to scale);
// later raises need a score LAG = 8 above every earlier one. The output is divided by l
// as it is written. Two passes (max and sum first, then the normalized weights times V)
// took 2.84 ms of the 8B prompt (BENCHMARKS.md run 48): every K tile staged and
// multiplied twice.
//
// Four subgroups of 32 lanes; subgroup g owns query rows 16g..16g + 15 of the tile. Its q
// fragments (Q · SCALE in f16, HEAD_DIM / 16 of them) are loaded once. Per tile, the K
// and V rows are staged in workgroup memory as f16, keys past the workgroup's
// last visible one as zeros (a weight of 0 times a stale value must not make NaN). Each
// subgroup's scores leave through its own 16x32 f32 of workgroup memory, where lane l
// takes row l / 2, keys 16 · (l % 2)..+15 (its partner lane, l ^ 1, the other half).
//
// Rounding: q · SCALE, k, v and the weights (here unnormalized, below e^LAG) are rounded
// to f16 (relative error 2^-11 each); the dot products and sums are f32. Values past f16's range (65504) are not
// representable here (nor in the coopmat gemm's x); where they can occur, `--kernel
// prefill=dp4a` or `batched` keeps the prompt off f16.
//
// Template (attention/batched.rs `coopmat_shader`): HEAD_DIMu (16..128 in steps of 16),
// and the fragment code for it: Q_FRAGMENTS, SCORES (the tile's two 16-key score
// fragments), OUT_ACCUMULATORS, RESCALES (the accumulators through st, two at a time, each
// lane's row times alpha), VALUES (P · V into them), EMITS.
//
// Index bounds (built without naga's runtime checks, like the coopmat gemm): q rows are
// clamped below min(params[1], MAX_BATCH) <= MAX_BATCH, cache rows below MAX_CTX, and the
// Rust side checks the buffers hold MAX_BATCH rows of q and out and MAX_CTX cache rows;
// kt holds BQ rows of SK vec4s (a fragment of rows 16g.. ends at row 63 < BQ; key
// fragments at rows 16j + 15 <= 31), vt BK rows, st PART_S = 144 vec4s per subgroup (a
// 16x32 row-major fragment pair from 4j with stride 9 ends at 15 * 9 + 7 = 142; an output
// fragment with stride 4 at 63, the second of a rescaled pair, from 64, at 127), pt
// PART_P = 160 (stride 10: 15 * 10 + 7 = 157). Every loop is bounded by a constant or by `stop` <= MAX_CTX.

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
// Row strides of a subgroup's scores (f32, in vec4<f32>s) and weights (f16, in vec4<f16>s)
// for its 16 rows x 32 keys: 36 floats and 40 halves, not 32, so that a fragment's 8 rows
// fall in different banks when stored and loaded (at 32 every row of a score store hit
// the same 8 banks, and each lane's reads the same 4). Its parts: 16 such rows.
const ST_ROW: u32 = 9u;
const PT_ROW: u32 = 10u;
const PART_S: u32 = 16u * ST_ROW;
const PART_P: u32 = 16u * PT_ROW;
// A finite stand-in for -inf: exp(NEG - m) underflows to 0 without inf - inf = NaN.
const NEG: f32 = -3.0e38;
// How far (in nats) a score may pass its row's reference max before the row is rescaled:
// weights stay below e^8 = 2981, well inside f16's range.
const LAG: f32 = 8.0;

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
var<workgroup> pt: array<vec4<f16>, 4u * PART_P>;
// Per subgroup: a tile's scores, or output fragments (rescaled, or at the end), f32 row-major.
var<workgroup> st: array<vec4<f32>, 4u * PART_S>;
// (pos0, batch size), read through workgroupUniformLoad: the cooperative operations and
// barriers need uniform control flow, and naga counts a storage read as non-uniform.
var<workgroup> ctl: vec2<u32>;
// Whether a row raised its reference max in this tile (nonzero): read uniformly, it says
// whether the output accumulators need rescaling.
var<workgroup> raised: atomic<u32>;

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
    let st_stride = ST_ROW;
    let pt_stride = PT_ROW;
    // Each tile's score accumulators start from this zero matrix.
    var zero = coop_mat16x16<f32, C>();
Q_FRAGMENTS
    workgroupBarrier();
    let own = sg * PART_S;
    let own_p = sg * PART_P;
    let at = own_p + m_row * PT_ROW + half * 4u;
    let key_off = 16u * half;

    // The row's reference max and its weights' sum so far.
    var m_ref = NEG;
    var l_run = 0.0;
    let s4 = 4u;
OUT_ACCUMULATORS
    var next_k = fetch(0u, row4, head4, lid, false);
    var next_v = fetch(0u, row4, head4, lid, true);
    for (var k0 = 0u; k0 < stop; k0 += BK) {
        put(next_k, k0, stop, lid, false);
        put(next_v, k0, stop, lid, true);
        workgroupBarrier();
        // Every thread read the last tile's flag before this barrier; none sets it before
        // the next.
        if lid == 0u {
            atomicStore(&raised, 0u);
        }
        if k0 + BK < stop {
            next_k = fetch(k0 + BK, row4, head4, lid, false);
            next_v = fetch(k0 + BK, row4, head4, lid, true);
        }
SCORES
        workgroupBarrier();
        let sc = lane_scores(own, m_row, half, k0 + key_off, n_ctx);
        var mx = max(max(max4(sc[0]), max4(sc[1])), max(max4(sc[2]), max4(sc[3])));
        mx = max(mx, subgroupShuffleXor(mx, 1u));
        var alpha = 1.0;
        if mx > m_ref + LAG {
            // A row's first visible keys raise it from NEG: its output is still zero.
            if m_ref > NEG {
                atomicOr(&raised, 1u);
            }
            alpha = exp(m_ref - mx);
            m_ref = mx;
            l_run *= alpha;
        }
        let e = array<vec4<f32>, 4>(weights(sc[0], m_ref), weights(sc[1], m_ref), weights(sc[2], m_ref), weights(sc[3], m_ref));
        var sum = dot((e[0] + e[1]) + (e[2] + e[3]), vec4<f32>(1.0));
        sum += subgroupShuffleXor(sum, 1u);
        l_run += sum;
        pt[at] = vec4<f16>(e[0]);
        pt[at + 1u] = vec4<f16>(e[1]);
        pt[at + 2u] = vec4<f16>(e[2]);
        pt[at + 3u] = vec4<f16>(e[3]);
        // A barrier (pt written, st's scores read) and whether any row with weights so far
        // raised its reference in this tile.
        if workgroupUniformLoad(&raised) != 0u {
RESCALES
        }
VALUES
        // kt, vt, st and pt are rewritten by the next tile.
        workgroupBarrier();
    }
    let inv_l = select(0.0, 1.0 / l_run, l_run > 0.0);
EMITS
}

// Output fragment o (the subgroup's 16 rows, dims 16 · dd..) through its part of st into
// out, divided by the row's sum inv_l: lane l writes row l / 2 (its softmax row), dims
// 8 · (l % 2)..+7.
fn emit(o: coop_mat16x16<f32, C>, dd: u32, own: u32, lane: u32, b0: u32, sg: u32, h: u32, n: u32, inv_l: f32) {
    let s = 4u;
    coopStoreT(o, &st[own], s);
    workgroupBarrier();
    let r = lane / 2u;
    let b = b0 + 16u * sg + r;
    if b < n {
        let src = own + r * 4u + (lane % 2u) * 2u;
        let dst = b * (OUT_STRIDE / 4u) + h * D4 + dd * 4u + (lane % 2u) * 2u;
        out[dst] = st[src] * inv_l;
        out[dst + 1u] = st[src + 1u] * inv_l;
    }
    workgroupBarrier();
}

// The lane's 16 scores of row m (its half of the tile's keys, from key kb), masked past
// n_ctx: column i holds keys kb + 4i..kb + 4i + 3.
fn lane_scores(own: u32, m: u32, half: u32, kb: u32, n_ctx: u32) -> mat4x4<f32> {
    let at = own + m * ST_ROW + half * 4u;
    return mat4x4<f32>(
        masked(st[at], kb, n_ctx),
        masked(st[at + 1u], kb + 4u, n_ctx),
        masked(st[at + 2u], kb + 8u, n_ctx),
        masked(st[at + 3u], kb + 12u, n_ctx),
    );
}

// The lane's half of its row (8 floats at vec4 `at`) of an output fragment stored in st,
// times alpha.
fn scale_row(at: u32, alpha: f32) {
    st[at] *= alpha;
    st[at + 1u] *= alpha;
}
