// gemv frame "dp4a": integer dot products over int8 activations (what llama.cpp's MMVQ
// kernels do). y[OUT_OFFSET + r] = sum_c W[r, c] * x̂[c], where x̂ is x quantized per
// 32-element block: d = max|x| / 127, q = round(x / d) (to even), x̂ = q * d.
//
// Why: the float frames spend ~5 instructions per 4-bit weight (unpack, bias, convert,
// FMA) and are bound by instruction issue, not memory, on an H200 (BENCHMARKS.md run 8:
// the q4_0 gemv's compute-only time is 95% of its full time). Here 8 weights cost two
// masks and two dot4I8Packed (one IDP4A each on NVIDIA), plus one int-to-float conversion
// and one FMA per 32-weight block.
//
// Phase 1 (every workgroup, over the whole of x): 4 lanes per block, two vec4s each,
// four blocks' loads issued at once; the block's max |x| and sum of q meet through two
// subgroup shuffles each (subgroups of at least 8 lanes: checked on the Rust side), the
// packed quants go to workgroup memory as 8 words per block (xq: 2 vec4 per block), (d,
// d * sum q) to xm. (H100: a thread per block, its 8 loads in flight but uncoalesced and
// its arrays in local memory, was 20-30% slower than 8 lanes with one load each; 4 lanes
// with two: see BENCHMARKS.md run 12.) With rms_norm folded in, x ∘ norm weight is what
// is quantized (the norm's scale is one scalar, applied to each row's sum) and sum x² is
// reduced once (subgroupAdd, then the subgroups' sums).
// With a post norm folded in as well (POST, Gemma 3's post-attention and post-FFN norms),
// the input is the residual stream after that norm's add: x + d / rms(d) ∘ pw, where d is
// the previous projection's output. Its one scalar, 1 / rms(d), comes from a pre-pass
// over d (one more barrier); phase 1 then forms x + (d · s) ∘ pw as it loads x, and
// workgroup 0 writes it to x_out, the other of the two residual buffers (other workgroups
// still read x). One dispatch of rms_norm+add less per post norm.
// With partials added instead (PARTIALS: N_PARTIALS vectors of COLS floats, one per head
// of the attention's output projection, attention/output.rs, or the folded down
// projection's per block of 32 FFN rows, epilogue_silu_down.wgsl), the input is x plus
// their sum, in order, formed once per workgroup in x_sum and kept by workgroup 0 in x_out
// the same way: a projection's dispatch and its residual add folded into this gemv's
// input.
// Phase 2: the lanes frame of kernel.wgsl with a whole block per lane step: TPR lanes per
// row group, NR rows per lane, each block's x words read once from workgroup memory for
// the NR rows. With KSPLIT > 1 that many row groups share each NR rows, each over every
// KSPLIT-th step of blocks, and add their sums in workgroup memory: more lanes per row
// without a reduction wider than a subgroup.
//
// The epilogue's loads and arithmetic that do not depend on the sums (the rows' values
// before a residual add, rope's position and angles, the folded down projection's
// weights) run at the start (its hooks, epilogue_dp4a_*.wgsl: epilogue_prefetch,
// tail_prefetch, emit_prefetched, tail), so that their latency hides
// under the dot products instead of following them: the gemvs are latency-bound, their
// workgroups resident at once.
//
// Pieces composed around this file (shader.rs): before it lanes_common.wgsl (the shape's
// overrides, span_row, GroupSum); after it the format's load_block and block_idot (and
// binding 0, `w`), the reduction (group_sum), the epilogue (phys_row, emit).

// COLS / 16 and COLS / 32: workgroup arrays sized by the shape (the Rust side checks
// their bytes against the device's workgroup storage limit).
override XQ_VEC4S: u32;
override X_BLOCKS: u32;

// Threads per workgroup and row groups per row set (`Gemv::dp4a_split`): KSPLIT groups
// of TPR lanes share each NR rows, group k over blocks k·TPR + lane, stepping by
// KSPLIT·TPR; their sums meet in ksum (KSUMS = WG_SIZE / TPR vec4s when split, else 1).
override WG_SIZE: u32;
override KSPLIT: u32;
override KSUMS: u32;
// group_sum adds no sum of squares here: phase 1 reduces it.
const HAS_NORM: bool = false;
const NORM: bool = NORM_ON;
const POST: bool = POST_ON;
const PARTIALS: bool = PARTIALS_ON;

@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
NORM_DECL
POST_DECL
// 1 / rms(d) of the folded post norm (POST), set before phase 1.
var<private> post_scale: f32;

var<workgroup> xq: array<vec4<u32>, XQ_VEC4S>;
var<workgroup> xm: array<vec2<f32>, X_BLOCKS>;
// One partial sum of x² per subgroup (subgroups of at least 8 lanes, workgroups of at
// most 1024 threads: at most 128 of them).
var<workgroup> ss_part: array<f32, 128>;
var<workgroup> ksum: array<vec4<f32>, KSUMS>;
// x plus the partials (PARTIALS; else one unused vec4).
override X_SUM_VEC4S: u32 = 1u;
var<workgroup> x_sum: array<vec4<f32>, X_SUM_VEC4S>;

// Vec4 k (0..7) of block b of x (zeros past the last block; the load is clamped so it
// stays in bounds without a branch).
// With POST, the residual after the folded post norm: x + (d · s) ∘ pw, in the order
// rms_norm+add computes it.
fn x_part(b: u32, k: u32) -> vec4<f32> {
    let i = min(b, X_BLOCKS - 1u) * 8u + k;
    var v = x[i];
    if POST {
        v += (post_d[i] * post_scale) * post_w[i];
    }
    if PARTIALS {
        v = x_sum[i];
    }
    return select(vec4<f32>(0.0), v, b < X_BLOCKS);
}

// With PARTIALS: x plus the partials, in order, into x_sum, a thread per vec4 of x (every
// thread of the workgroup shares the loads, not only phase 1's four lanes per block: the
// folded down projection leaves 48 partials at SmolLM2); workgroup 0 keeps the sum in
// x_out. Then the barrier before phase 1 reads it.
fn sum_partials(lid: u32, wg_lin: u32) {
    for (var i = lid; i < COLS / 4u; i += WG_SIZE) {
        var v = x[i];
        for (var p = 0u; p < N_PARTIALS; p++) {
            v += partials[p * (COLS / 4u) + i];
        }
        x_sum[i] = v;
        if wg_lin == 0u {
            x_out[i] = v;
        }
    }
    workgroupBarrier();
}

// Workgroup 0 keeps the residual it formed (POST; PARTIALS keep theirs in
// sum_partials): x_out is the next residual stream.
fn keep(b: u32, k: u32, v: vec4<f32>) {
    if b < X_BLOCKS {
        x_out[b * 8u + k] = v;
    }
}

// 1 / sqrt(mean(d²) + POST_EPS) of the previous projection's output d, every thread's
// share summed per subgroup and then over the subgroups (its own array: ss_part is
// written again at the end of phase 1, while slower subgroups may still read this sum).
fn post_norm_scale(lid: u32, sg_lane: u32, sg_size: u32) -> f32 {
    var dd = 0.0;
    for (var i = lid; i < COLS / 4u; i += WG_SIZE) {
        let v = post_d[i];
        dd += dot(v, v);
    }
    let s = subgroupAdd(dd);
    if sg_lane == 0u {
        post_part[lid / sg_size] = s;
    }
    workgroupBarrier();
    var total = 0.0;
    for (var i = 0u; i < WG_SIZE / sg_size; i++) {
        total += post_part[i];
    }
    return inverseSqrt(total / f32(COLS) + POST_EPS);
}

// x4, vec4 k of block b, times the norm weight where rms_norm is folded in.
fn normed(b: u32, k: u32, x4: vec4<f32>) -> vec4<f32> {
    if NORM {
        return x4 * NORM_WEIGHT;
    }
    return x4;
}

// quantize_part (quantize_part.wgsl, appended): block b of x to int8 in xq / xm.


// What the epilogue computes ahead (epilogue_dp4a_*.wgsl: what `a` holds; `pos` the
// step's position, for rope).
struct Prefetched {
    a: vec4<f32>,
    pos: u32,
}

// Block b of the lane's NR rows (the rest a copy of the first, unused).
struct RowBlocks {
    r0: WBlock,
    r1: WBlock,
    r2: WBlock,
    r3: WBlock,
}

fn load_rows(rows: vec4<u32>, b: u32) -> RowBlocks {
    let w0 = load_block(rows.x, b);
    var out = RowBlocks(w0, w0, w0, w0);
    if NR > 1u {
        out.r1 = load_block(rows.y, b);
    }
    if NR > 2u {
        out.r2 = load_block(rows.z, b);
    }
    if NR > 3u {
        out.r3 = load_block(rows.w, b);
    }
    return out;
}

// The rows' dot products with block b of x (0 past NR).
fn rows_idot(w: RowBlocks, b: u32) -> vec4<f32> {
    let xa = xq[2u * b];
    let xb = xq[2u * b + 1u];
    let m = xm[b];
    var d = vec4<f32>(block_idot(w.r0, xa, xb, m), 0.0, 0.0, 0.0);
    if NR > 1u {
        d.y = block_idot(w.r1, xa, xb, m);
    }
    if NR > 2u {
        d.z = block_idot(w.r2, xa, xb, m);
    }
    if NR > 3u {
        d.w = block_idot(w.r3, xa, xb, m);
    }
    return d;
}

@compute @workgroup_size(WG_SIZE)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let wg_lin = wg.x + wg.y * nwg.x;
    let first_row = wg_lin * ((WG_SIZE / (TPR * KSPLIT)) * NR);
    // Workgroup-uniform, so returning before the barriers is allowed.
    if first_row >= ROWS {
        return;
    }

    // Phase 2's rows and its first step's weights, loaded before phase 1 so that the
    // weight stream starts while x is quantized (every workgroup of a dispatch is often
    // resident at once, and phase 1 alone would leave memory idle). Rows past the end
    // (last workgroup) recompute the last row, unwritten; steps past the last block
    // reload the last block, unused.
    let group = lid / TPR;
    let row0 = first_row + (group / KSPLIT) * NR;
    let lane = lid % TPR;
    let klane = lane + TPR * (group % KSPLIT);
    let kstride = TPR * KSPLIT;
    let r0 = phys_row(span_row(min(row0, ROWS - 1u)));
    let r1 = phys_row(span_row(min(row0 + 1u, ROWS - 1u)));
    let r2 = phys_row(span_row(min(row0 + 2u, ROWS - 1u)));
    let r3 = phys_row(span_row(min(row0 + 3u, ROWS - 1u)));
    let rows = vec4<u32>(r0, r1, r2, r3);
    let blocks = COLS / 32u;
    var cur = load_rows(rows, min(klane, blocks - 1u));
    let pre = epilogue_prefetch(lane, row0);
    tail_prefetch(lid, wg_lin);
    if POST {
        post_scale = post_norm_scale(lid, sg_lane, sg_size);
    }
    if PARTIALS {
        sum_partials(lid, wg_lin);
    }

    // Phase 1. Every lane runs every step (the bound is a constant), so the shuffles run
    // in uniform control flow; lanes past the last block quantize zeros and store
    // nothing. Four steps' loads are issued before the first step's shuffles.
    let part = lid & 3u;
    var ss = 0.0;
    let per_step = WG_SIZE / 4u;
    for (var b0 = 0u; b0 < X_BLOCKS; b0 += 4u * per_step) {
        let b = b0 + (lid >> 2u);
        let k = 2u * part;
        let a0 = x_part(b, k);
        let a1 = x_part(b, k + 1u);
        let c0 = x_part(b + per_step, k);
        let c1 = x_part(b + per_step, k + 1u);
        let e0 = x_part(b + 2u * per_step, k);
        let e1 = x_part(b + 2u * per_step, k + 1u);
        let f0 = x_part(b + 3u * per_step, k);
        let f1 = x_part(b + 3u * per_step, k + 1u);
        if POST && wg_lin == 0u {
            keep(b, k, a0);
            keep(b, k + 1u, a1);
            keep(b + per_step, k, c0);
            keep(b + per_step, k + 1u, c1);
            keep(b + 2u * per_step, k, e0);
            keep(b + 2u * per_step, k + 1u, e1);
            keep(b + 3u * per_step, k, f0);
            keep(b + 3u * per_step, k + 1u, f1);
        }
        if NORM {
            ss += ((dot(a0, a0) + dot(a1, a1)) + (dot(c0, c0) + dot(c1, c1)))
                + ((dot(e0, e0) + dot(e1, e1)) + (dot(f0, f0) + dot(f1, f1)));
        }
        quantize_part(b, part, a0, a1);
        quantize_part(b + per_step, part, c0, c1);
        // Steps wholly past the last block (4096-wide x: the last two) are skipped; the
        // condition is uniform, so the shuffles stay in uniform control flow.
        if b0 + 2u * per_step < X_BLOCKS {
            quantize_part(b + 2u * per_step, part, e0, e1);
        }
        if b0 + 3u * per_step < X_BLOCKS {
            quantize_part(b + 3u * per_step, part, f0, f1);
        }
    }
    // Sum x² per subgroup, then over the subgroups' partial sums after the barrier that
    // ends phase 1 (one barrier in all, not a tree of them).
    if NORM {
        let sg_ss = subgroupAdd(ss);
        if sg_lane == 0u {
            ss_part[lid / sg_size] = sg_ss;
        }
    }
    workgroupBarrier();
    var scale = 1.0;
    if NORM {
        var total = 0.0;
        for (var i = 0u; i < WG_SIZE / sg_size; i++) {
            total += ss_part[i];
        }
        scale = inverseSqrt(total / f32(COLS) + EPS);
    }

    // Phase 2: each step loads the next step's blocks before it multiplies its own (a
    // software pipeline one step deep: the loads stay in flight across the dot products).
    var acc = vec4<f32>(0.0);
    for (var b = klane; b < blocks; b += kstride) {
        let next = load_rows(rows, min(b + kstride, blocks - 1u));
        acc += rows_idot(cur, b);
        cur = next;
    }
    var extra = 0.0;
    for (var p = 0u; p < EXTRA_PASSES; p++) {
        for (var b = klane; b < blocks; b += kstride) {
            extra += block_idot(load_block(r0, b), xq[2u * b], xq[2u * b + 1u], xm[b]);
        }
    }
    if abs(extra) > 3.0e38 {
        acc.x = extra;
    }
    let total = group_sum(lid, lane, acc, 0.0);
    if KSPLIT > 1u {
        if lane == 0u {
            ksum[group] = total.acc;
        }
        workgroupBarrier();
        if lane == 0u && group % KSPLIT == 0u {
            var s = total.acc;
            for (var k = 1u; k < KSPLIT; k++) {
                s += ksum[group + k];
            }
            emit_prefetched(row0, s * scale, pre);
        }
    } else if lane == 0u {
        emit_prefetched(row0, total.acc * scale, pre);
    }
    // Work on the workgroup's emitted rows together (the down projection folded in,
    // epilogue_dp4a_silu_down.wgsl); nothing for the other epilogues.
    tail(lid, wg_lin);
}
