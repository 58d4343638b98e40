// Tensor-core "gemm" for prompt processing: Y[b, OUT_OFFSET + r] (+)= sum_c W[r, c] * x[b, c]
// for batch rows b < params[1], on cooperative matrices (wgpu's experimental
// `wgpu_cooperative_matrix`: 16x16 f16 fragments, f32 accumulators; NVIDIA's tensor cores
// through VK_KHR_cooperative_matrix).
//
// A template: the Rust side (`coopmat_frame` in batched.rs) puts in the tile, TILE rows of
// weights × TILE batch rows (64: 4 subgroups, each 32 weight rows × 32 batch rows; 128: 8
// subgroups of 32 × 64), and the fragment code for FN B fragments per subgroup (2 or 4):
// ACCUMULATORS, FRAGMENTS (per 16-wide slice of K: two A fragments of weight rows, FN B
// fragments of batch rows, 2 · FN multiply-adds) and EMITS. Subgroups must be 32 wide
// (`GemmKind::supported`).
//
// The workgroup walks K two 32-element blocks (TK = 64) at a time. Each step stages in
// workgroup memory
// - the weights, dequantized to f16 (one block per thread: value = d * q + o, the format's
//   `unpack_wraw` giving q as int8 bytes and (d, o)), row-major [row][k];
// - x, converted from f32 to f16, [batch row][k] (8 vec4s per thread);
// loaded into registers a step ahead (in flight during the multiplies), the weights as
// their raw words (gemm_raw.wgsl: unpacked when staged, so that no instruction waits for
// the loads before the multiplies).
//
// The result: a tile wholly inside the matrix and the batch (`whole_tile`) stores its
// accumulators straight into y with cooperative stores, and for a fused residual add
// (ACCUMULATE) starts them from y's values. Other tiles pass one fragment at a time
// through each subgroup's 16x16 of workgroup memory (`emit`), so that their stores are
// bounds-checked. (The ys path for every tile cost 6.5 of 52.7 ms of the 8B prompt's gemms:
// BENCHMARKS.md, run 45.)
//
// K in parts (K_PARTS > 1, for matrices whose tiles alone leave much of the GPU idle in
// their last wave: Llama-8B's q/k/v, BENCHMARKS.md run 48): workgroup z = p sums columns
// p * COLS / K_PARTS.. of its tile into part p of y, MAX_BATCH * Y_STRIDE floats after part
// p - 1; the reader adds the parts (`RopeBatched`'s `qkv_parts`). COLS / K_PARTS is whole
// TK steps (`GemvBatched::dispatch_gemm` checks), so a part's steps never reach past it.
//
// silu(gate) · up (SILU_UP = 1, the gate/up matrix of FFN gate rows and FFN up rows from
// UP_ROW): a tile's TILE rows are TILE / 2 gate rows and their up rows, each subgroup's 32
// as 16 gate rows (gate rows r0 / 2 + 16 * sm..) then the same 16 up rows (`weight_row`),
// so that its c0j and c1j hold matching gate and up sums. `emit_silu` passes each pair
// through the subgroup's 16x16 of ys and writes silu(gate) · up to y's column OUT_OFFSET +
// gate row: y takes FFN columns, and the separate silu_mul dispatch goes (BENCHMARKS.md,
// run 48). The grid covers 2 · FFN tile rows.
//
// Rounding: x and the dequantized weights are rounded to f16 (relative error 2^-11 each),
// the sums are f32. Its oracle is the batched gemv's with x rounded to f16.
//
// Strides: row strides of 72 halves (64 + 8: 144 bytes, a multiple of 16 as tensor-core
// loads like, and staggered so the rows' stores spread over the banks). The arrays are of
// vec4<f16>, so a fragment's stride is in vec4s (18). naga wants each coop index and
// stride as a `let` of its own, and accepts cooperative operations only in control flow
// it can prove uniform (no early return: `main` calls `tile` under a uniform condition).
//
// Index bounds (the pipeline is built without runtime checks): staging writes wa at
// t * 18 + half * 8 + 0..7 <= (TILE - 1) * 18 + 15 and xb at (xr + j * WG_SIZE / 16) * 18
// + xc <= (TILE - 1) * 18 + 15, below TILE * 18; a subgroup's last A fragment starts at
// (TILE - 16) * 18 + 12 and spans 15 more rows of 18 and 4 vec4s: (TILE - 1) * 18 + 15; its
// last B fragment likewise; ys: subgroup sg's 64 vec4s from sg * 64, below 2 * WG_SIZE; a
// whole tile's cooperative loads and stores of y: rows below ROWS, batch rows below n <=
// MAX_BATCH, in part p < K_PARTS (y holds K_PARTS parts).
//
// Appended after this file: gemm_raw.wgsl and the format's `load_wraw(i) -> WRaw` and
// `unpack_wraw` for block i (row-major block index), with binding 0 (`w`) as its layout
// needs.

enable f16;
enable wgpu_cooperative_matrix;

override ROWS: u32;
override COLS: u32;
override OUT_OFFSET: u32;
override ACCUMULATE: u32 = 0u;
// f32 elements of y per batch row.
override Y_STRIDE: u32;
// Parts of K summed apart (see above); ACCUMULATE is 0 where this is over 1.
override K_PARTS: u32 = 1u;
// silu(gate) · up (see above); ACCUMULATE and K_PARTS are 0 and 1 where this is 1.
override SILU_UP: u32 = 0u;
override FFN: u32 = 1u;
override UP_ROW: u32 = 0u;
// Rows of x and y the buffers hold: the batch size is clamped to it (the pipeline has no
// runtime bounds checks; see `GemvBatched::dispatch_gemm`).
override MAX_BATCH: u32;

const TILE: u32 = TILE_SIZEu;
const WG_SIZE: u32 = 2u * TILE;
// Batch rows per subgroup (16 · FN); subgroups side by side along the batch.
const WN: u32 = SUBGROUP_COLSu;
const SG_N: u32 = TILE / WN;
const TK: u32 = 64u;
// Row stride of the staged tiles in vec4<f16>s (72 halves).
const SV: u32 = 18u;

@group(0) @binding(1) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// [pos0, n_rows, 0, 0]
@group(0) @binding(3) var<storage, read> params: array<u32, 4>;

var<workgroup> wa: array<vec4<f16>, TILE_SVu>; // TILE * SV
var<workgroup> xb: array<vec4<f16>, TILE_SVu>; // TILE * SV
// One 16x16 f32 fragment per subgroup, column-major (element (m, b) at b * 16 + m).
var<workgroup> ys: array<vec4<f32>, YS_SIZEu>; // WG_SIZE / 32 * 64
// The batch size, read through workgroupUniformLoad: the cooperative operations need
// uniform control flow, and naga counts a storage read as non-uniform.
var<workgroup> n_rows: u32;
// 1 where the workgroup's tile lies wholly inside ROWS and the batch (read uniformly too).
var<workgroup> whole_tile: u32;

// A weight block as the loaders give it: elements 0..15 and 16..31 as int8 bytes, (d, o).
struct WBlock {
    q0: vec4<u32>,
    q1: vec4<u32>,
    dm: vec2<f32>,
}

// Four elements of a block (the 4 bytes of word q) dequantized to f16.
fn deq4(q: u32, dm: vec2<f32>) -> vec4<f16> {
    return vec4<f16>(i8x4(q) * dm.x + vec4<f32>(dm.y));
}

fn stage_wblock(t: u32, half: u32, b: WBlock) {
    let at = t * SV + half * 8u;
    wa[at] = deq4(b.q0.x, b.dm);
    wa[at + 1u] = deq4(b.q0.y, b.dm);
    wa[at + 2u] = deq4(b.q0.z, b.dm);
    wa[at + 3u] = deq4(b.q0.w, b.dm);
    wa[at + 4u] = deq4(b.q1.x, b.dm);
    wa[at + 5u] = deq4(b.q1.y, b.dm);
    wa[at + 6u] = deq4(b.q1.z, b.dm);
    wa[at + 7u] = deq4(b.q1.w, b.dm);
}

@compute @workgroup_size(WG_SIZE)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    if lid == 0u {
        let rows = min(params[1], MAX_BATCH);
        n_rows = rows;
        whole_tile = u32(ROWS % TILE == 0u && (wg.y + 1u) * TILE <= rows);
    }
    let n = workgroupUniformLoad(&n_rows);
    let r0 = wg.x * TILE;
    let b0 = wg.y * TILE;
    if b0 < n && r0 < ROWS {
        tile(r0, b0, n, lid, wg.z);
    }
}

// The weight row that tile row t of the tile from row r0 stages (see SILU_UP above).
fn weight_row(r0: u32, t: u32) -> u32 {
    if SILU_UP == 0u {
        return min(r0 + t, ROWS - 1u);
    }
    let gate = min(r0 / 2u + 16u * (t / 32u) + t % 16u, FFN - 1u);
    return select(gate, UP_ROW + gate, t % 32u >= 16u);
}

// The workgroup's tile: weight rows r0.., batch rows b0.. (of n), over part `part` of K.
fn tile(r0: u32, b0: u32, n: u32, lid: u32, part: u32) {
    let blocks = COLS / 32u;
    let cols4 = COLS / 4u;
    // Columns kb.. of this part, in steps of TK; y's part (elements before it). Both are
    // constant zeros with one part, so that the code is the same as without parts.
    let steps = (COLS / K_PARTS + TK - 1u) / TK;
    let kb = select(0u, part * (COLS / K_PARTS), K_PARTS > 1u);
    let yo = select(0u, part * MAX_BATCH * Y_STRIDE, K_PARTS > 1u);
    // Weights: thread lid stages block (k0 / 32 + half) of tile row t.
    let t = lid / 2u;
    let half = lid % 2u;
    let w_row = weight_row(r0, t) * blocks;
    // x: element j of the thread's 8 is vec4 (j * WG_SIZE + lid) of the tile's rows × 16
    // vec4s: row xr + j * x_step, consecutive lanes consecutive vec4s.
    let xc = lid % 16u;
    let xr = lid / 16u;
    let x_step = WG_SIZE / 16u;
    // The subgroup's part: weight rows 32 * sm.., batch rows WN * sn...
    let sg = lid / 32u;
    let sm = sg / SG_N;
    let sn = sg % SG_N;
    let rf = r0 + 32u * sm;
    let bf = b0 + WN * sn;
    let whole = workgroupUniformLoad(&whole_tile) != 0u;
ACCUMULATORS
    var next_w = load_wraw(w_row + min(kb / 32u + half, blocks - 1u));
    var next_x: array<vec4<f32>, 8>;
    for (var j = 0u; j < 8u; j++) {
        let row = min(b0 + xr + x_step * j, n - 1u);
        next_x[j] = x[row * cols4 + min(kb / 4u + xc, cols4 - 1u)];
    }
    for (var step = 0u; step < steps; step++) {
        let k0 = kb + step * TK;
        // A block past the last (COLS not a multiple of TK) adds nothing.
        var wb = unpack_wraw(next_w);
        if k0 / 32u + half >= blocks {
            wb.dm = vec2<f32>(0.0);
        }
        stage_wblock(t, half, wb);
        for (var j = 0u; j < 8u; j++) {
            xb[(xr + x_step * j) * SV + xc] = vec4<f16>(next_x[j]);
        }
        workgroupBarrier();
        let k1 = k0 + TK;
        if step + 1u < steps {
            next_w = load_wraw(w_row + min(k1 / 32u + half, blocks - 1u));
            for (var j = 0u; j < 8u; j++) {
                let row = min(b0 + xr + x_step * j, n - 1u);
                next_x[j] = x[row * cols4 + min(k1 / 4u + xc, cols4 - 1u)];
            }
        }
        for (var kk = 0u; kk < TK / 16u; kk++) {
            let s = SV;
            let ia0 = (32u * sm) * SV + kk * 4u;
            let ia1 = (32u * sm + 16u) * SV + kk * 4u;
            let a0 = coopLoadT<coop_mat16x16<f16, A>>(&wa[ia0], s);
            let a1 = coopLoadT<coop_mat16x16<f16, A>>(&wa[ia1], s);
FRAGMENTS
        }
        workgroupBarrier();
    }
EMITS
}

// Fragment c (weight rows rf.., batch rows bf..) through the subgroup's 16x16 of ys into y:
// lane l writes weight row rf + l % 16 of batch rows bf + l / 16 + 2q, so that each store
// writes two runs of 16 consecutive floats.
fn emit(c: coop_mat16x16<f32, C>, sg: u32, lane: u32, rf: u32, bf: u32, n: u32, yo: u32) {
    let own = sg * 64u;
    let s = 4u;
    coopStore(c, &ys[own], s);
    workgroupBarrier();
    let m = lane % 16u;
    let r = rf + m;
    for (var q = 0u; q < 8u; q++) {
        let bl = lane / 16u + 2u * q;
        let b = bf + bl;
        if b < n && r < ROWS {
            // Element (m, bl) of the column-major fragment.
            let v = ys[own + bl * 4u + m / 4u][m % 4u];
            let at = yo + b * Y_STRIDE + OUT_OFFSET + r;
            if ACCUMULATE != 0u {
                y[at] = y[at] + v;
            } else {
                y[at] = v;
            }
        }
    }
    workgroupBarrier();
}

// silu(gate) · up of a subgroup's fragment pair (gate rows gf.., batch rows bf..) through
// its 16x16 of ys into y, stored as `emit` stores.
fn emit_silu(
    cg: coop_mat16x16<f32, C>,
    cu: coop_mat16x16<f32, C>,
    sg: u32,
    lane: u32,
    gf: u32,
    bf: u32,
    n: u32,
) {
    let own = sg * 64u;
    let s = 4u;
    let m = lane % 16u;
    coopStore(cg, &ys[own], s);
    workgroupBarrier();
    var g: array<f32, 8>;
    for (var q = 0u; q < 8u; q++) {
        g[q] = ys[own + (lane / 16u + 2u * q) * 4u + m / 4u][m % 4u];
    }
    workgroupBarrier();
    coopStore(cu, &ys[own], s);
    workgroupBarrier();
    let r = gf + m;
    for (var q = 0u; q < 8u; q++) {
        let bl = lane / 16u + 2u * q;
        let b = bf + bl;
        let u = ys[own + bl * 4u + m / 4u][m % 4u];
        if b < n && r < FFN {
            y[b * Y_STRIDE + OUT_OFFSET + r] = g[q] / (1.0 + exp(-g[q])) * u;
        }
    }
    workgroupBarrier();
}
