// Decode attention with its q/k/v projection in the same workgroup (`AttnQkv`, the
// `qkv_attention` fusion): one workgroup per query head h
// 1. rms-norms the residual stream x into workgroup memory;
// 2. computes the head's q rows and its KV head's k and v rows (3 · HEAD_DIM rows of the
//    stacked q | k | v matrix, LPR lanes a row, a whole 32-element block a lane step:
//    the format's block_dot);
// 3. rotates q and k (rope, pairs as the rope kernel takes them);
// 4. appends k and v to the cache at pos (the workgroup of the KV head's first query
//    head; the others use their own copy of the current row, never the cache's);
// 5. attends as `groups` does (groups_attend.wgsl), the current position's key and value
//    from workgroup memory.
//
// Why: at SmolLM2-135M's size a dispatch costs about 2 µs before it does any work
// (`peak`'s dependent dispatch on an H100), and the q/k/v gemv and attention were two of
// a layer's five dispatches. The price: each KV head's k and v rows are computed by each
// of its query heads' workgroups (N_HEADS / N_KV_HEADS times), and only N_HEADS
// workgroups share the projection's weights. Where bytes, not dispatches, bound a layer
// that is a loss, so the plan takes this kernel by shape (model/src/plan.rs).
//
// Pieces composed around this file (qkv.rs): the weight format's binding 0 (`w`) and
// block_dot(row, b) (gemv/shader.rs, block_dot_part), which read x through xv(i); then
// groups_attend.wgsl (attend, merge_emit; it calls k_at and v_at) and emit.wgsl.

override N_HEADS: u32;
override N_KV_HEADS: u32;
override HEAD_DIM: u32;
override MAX_CTX: u32;
override SCALE: f32;
override COLS: u32;
override EPS: f32;
override ROPE_DIMS: u32;
override BASE: f32;
// COLS / 4 and 3 · HEAD_DIM: workgroup arrays sized by the shape.
override X_VEC4S: u32;
override QKV_ROWS: u32;
// emit.wgsl's: the output is final (no split-K).
const CHUNK: u32 = 0u;
const NEOX: bool = NEOX_ON;
const WG: u32 = WG_THREADSu;
// A finite stand-in for -inf (see fused.wgsl).
const NEG: f32 = -3.0e38;
// Lanes per row of the projection (adjacent lanes of one subgroup: the Rust side checks
// that subgroups have at least this many).
const LPR: u32 = 4u;

@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> nw: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> step: array<u32, 4>;
@group(0) @binding(4) var<storage, read_write> k_cache: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> v_cache: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;

// x after the norm, and the head's q | k | v rows.
var<workgroup> xs: array<vec4<f32>, X_VEC4S>;
var<workgroup> head_rows: array<f32, QKV_ROWS>;
// One partial sum of x² per subgroup (at most 128 subgroups of at least 8 lanes).
var<workgroup> ss_part: array<f32, 128>;

// The current position and lane d4's vec4 of its key and value (after rope).
var<private> cur_pos: u32;
var<private> cur_k: vec4<f32>;
var<private> cur_v: vec4<f32>;

fn xv(i: u32) -> vec4<f32> {
    return xs[i];
}

// Position t's key and value vec4 at cache index r: the current position's from
// workgroup memory (its cache row may not be written yet, or by another workgroup).
fn k_at(r: u32, t: u32) -> vec4<f32> {
    return select(k_cache[r], cur_k, t == cur_pos);
}

fn v_at(r: u32, t: u32) -> vec4<f32> {
    return select(v_cache[r], cur_v, t == cur_pos);
}

// Row r of head h's q | k | v as a row of the stacked matrix.
fn matrix_row(h: u32, r: u32) -> u32 {
    let kvh = h / (N_HEADS / N_KV_HEADS);
    let q_dim = N_HEADS * HEAD_DIM;
    if r < HEAD_DIM {
        return h * HEAD_DIM + r;
    }
    if r < 2u * HEAD_DIM {
        return q_dim + kvh * HEAD_DIM + (r - HEAD_DIM);
    }
    return q_dim + N_KV_HEADS * HEAD_DIM + kvh * HEAD_DIM + (r - 2u * HEAD_DIM);
}

// 1 / sqrt(mean(x²) + EPS), every thread's share summed per subgroup and then over the
// subgroups.
fn norm_scale(lid: u32, sg_lane: u32, sg_size: u32) -> f32 {
    var ss = 0.0;
    for (var i = lid; i < X_VEC4S; i += WG) {
        let v = x[i];
        ss += dot(v, v);
    }
    let s = subgroupAdd(ss);
    if sg_lane == 0u {
        ss_part[lid / sg_size] = s;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var i = 0u; i < WG / sg_size; i++) {
        total += ss_part[i];
    }
    return inverseSqrt(total / f32(COLS) + EPS);
}

// The head's rows into head_rows: every lane runs every pass (the shuffles stay in
// uniform control flow); rows past the last recompute it, unwritten.
fn project(h: u32, lid: u32) {
    let blocks = COLS / 32u;
    let lane = lid % LPR;
    for (var r0 = 0u; r0 < QKV_ROWS; r0 += WG / LPR) {
        let r = r0 + lid / LPR;
        let row = matrix_row(h, min(r, QKV_ROWS - 1u));
        var acc = 0.0;
        for (var b = lane; b < blocks; b += LPR) {
            acc += block_dot(row, b);
        }
        acc += subgroupShuffleXor(acc, 1u);
        acc += subgroupShuffleXor(acc, 2u);
        if lane == 0u && r < QKV_ROWS {
            head_rows[r] = acc;
        }
    }
}

// Rope on the q rows (threads 0..HEAD_DIM/2, a pair each) and the k rows (the next
// HEAD_DIM/2), in place: distinct pairs, so no two threads touch one element.
fn rotate(lid: u32, pos: u32) {
    let half = HEAD_DIM / 2u;
    if lid >= HEAD_DIM {
        return;
    }
    let i = lid % half;
    if i >= ROPE_DIMS / 2u {
        return;
    }
    let base = select(0u, HEAD_DIM, lid >= half);
    let e = pair_at(i);
    let cs = angle(pos, i);
    let a = head_rows[base + e.x];
    let b = head_rows[base + e.y];
    head_rows[base + e.x] = a * cs.x - b * cs.y;
    head_rows[base + e.y] = a * cs.y + b * cs.x;
}

fn rows4(at: u32) -> vec4<f32> {
    return vec4<f32>(head_rows[at], head_rows[at + 1u], head_rows[at + 2u], head_rows[at + 3u]);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let h = wg.x;
    let pos = step[0];
    let n_ctx = min(step[1], MAX_CTX);

    let scale = norm_scale(lid, sg_lane, sg_size);
    for (var i = lid; i < X_VEC4S; i += WG) {
        xs[i] = (x[i] * scale) * nw[i];
    }
    workgroupBarrier();
    project(h, lid);
    workgroupBarrier();
    rotate(lid, pos);
    workgroupBarrier();

    let lp = HEAD_DIM / 4u;
    let d4 = lid % lp;
    cur_pos = pos;
    cur_k = rows4(HEAD_DIM + 4u * d4);
    cur_v = rows4(2u * HEAD_DIM + 4u * d4);
    let group = N_HEADS / N_KV_HEADS;
    if h % group == 0u && lid < lp && pos < MAX_CTX {
        let at = (pos * N_KV_HEADS + h / group) * lp + d4;
        k_cache[at] = cur_k;
        v_cache[at] = cur_v;
    }
    // The scale goes into q once rather than into every score.
    let q4 = rows4(4u * d4) * SCALE;
    // Groups in use: at least four positions each (as groups.wgsl).
    let used = clamp((n_ctx + 3u) / 4u, 1u, WG / lp);
    let part = attend(h, 0u, n_ctx, lid / lp, d4, used, q4);
    merge_emit(h, h, lid, sg_lane, sg_size, used, part);
}
