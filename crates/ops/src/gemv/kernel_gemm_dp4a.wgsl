// Batched dp4a "gemm" for prompt processing: Y[b, OUT_OFFSET + r] (+)= sum_c W[r, c] * x̂[b, c]
// for batch rows b < params[1], where x̂ is x quantized per 32-element block as the dp4a
// gemv does (d = max|x| / 127, q = round(x / d)) by quantize_x.wgsl: its oracle is the same.
//
// A 256-thread workgroup computes a tile of TM = 64 weight rows × TN = 64 batch rows,
// walking K four 32-element blocks at a time. Each step stages in workgroup memory
// - the weights' blocks, decoded to 8 words of int8 per block (4-bit quants as one
//   nibble per byte; a 4-bit block's high nibbles are elements 16..31) and (d, o) per
//   block, the block's dot product being d * dx * Σ q·qx + o * dx * Σ qx (q4_0: o = -8d,
//   its zero point; q4_1: o = m; q8_0: o = 0);
// - x's blocks as quantize_x.wgsl wrote them (once per batch, before the gemm): 8 words
//   of int8 and (dx, dx * Σ qx), three 16-byte loads per block;
// then each thread takes 4 weight rows × 4 batch rows (rows tr + 16i, batch rows tb + 16j):
// 8 dot4I8Packed per pair and block, x read once per block for the thread's 4 weight
// rows.
// The weights are read from memory once per 64 batch rows (the batched gemv frame: once
// per 8), and 8 weights cost a quarter of an instruction per batch row.
//
// Appended after this file: gemm_raw.wgsl (`load_wblock(i) -> WBlock`, over the format's
// `load_wraw` and `unpack_wraw`) for block i (row-major block index), with binding 0 (`w`)
// as its layout needs.

override ROWS: u32;
override COLS: u32;
override OUT_OFFSET: u32;
override ACCUMULATE: u32 = 0u;
// f32 elements of y per batch row.
override Y_STRIDE: u32;

const WG_SIZE: u32 = 256u;
const TM: u32 = 64u;
const TN: u32 = 64u;
// Blocks per K step: four (20 KB of workgroup memory; the Rust side checks the device's
// limit). H100, Llama-8B pp512: two blocks per step with half the threads staging each
// of weights and x gave 2,192 tok/s.
const KB: u32 = 4u;

// x quantized per block by quantize_x.wgsl: three vec4s per (batch row, block).
@group(0) @binding(1) var<storage, read> xq: array<vec4<u32>>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
// [pos0, n_rows, 0, 0]
@group(0) @binding(3) var<storage, read> params: array<u32, 4>;

// Staged as [step block][half][tile row] (and [step block][tile row]), so that the 16
// consecutive lanes reading one half for 16 consecutive rows hit consecutive vec4s (no
// bank conflicts); weights: elements 0..15 (half 0) and 16..31 (half 1) as int8 words,
// and (d, o); x likewise, and (dx, dx * Σ qx).
var<workgroup> ws: array<vec4<u32>, 512>; // KB * 2 * TM
var<workgroup> wd: array<vec2<f32>, 256>; // KB * TM
var<workgroup> xs: array<vec4<u32>, 512>; // KB * 2 * TN
var<workgroup> xm: array<vec2<f32>, 256>; // KB * TN

// A weight block as the kernel uses it: elements 0..15 and 16..31 as int8 bytes, (d, o).
struct WBlock {
    q0: vec4<u32>,
    q1: vec4<u32>,
    dm: vec2<f32>,
}

fn store(r: u32, b: u32, n: u32, v: f32) {
    if r < ROWS && b < n {
        let i = b * Y_STRIDE + OUT_OFFSET + r;
        if ACCUMULATE != 0u {
            y[i] = y[i] + v;
        } else {
            y[i] = v;
        }
    }
}

fn store_row(r: u32, b0: u32, n: u32, v: vec4<f32>) {
    store(r, b0, n, v.x);
    store(r, b0 + 16u, n, v.y);
    store(r, b0 + 32u, n, v.z);
    store(r, b0 + 48u, n, v.w);
}

// Weight row t of the tile (step block kb) against the 4 batch rows whose x words are
// (xa, xc) with meta m: d * dx * Σ q·qx + o * dx * Σ qx each.
fn row_dots(kb: u32, t: u32, xa: array<vec4<u32>, 4>, xc: array<vec4<u32>, 4>, m: array<vec2<f32>, 4>) -> vec4<f32> {
    let wa = ws[(2u * kb) * TM + t];
    let wb = ws[(2u * kb + 1u) * TM + t];
    let dm = wd[kb * TM + t];
    return vec4<f32>(
        dm.x * (m[0].x * f32(idot8(wa, wb, xa[0], xc[0]))) + dm.y * m[0].y,
        dm.x * (m[1].x * f32(idot8(wa, wb, xa[1], xc[1]))) + dm.y * m[1].y,
        dm.x * (m[2].x * f32(idot8(wa, wb, xa[2], xc[2]))) + dm.y * m[2].y,
        dm.x * (m[3].x * f32(idot8(wa, wb, xa[3], xc[3]))) + dm.y * m[3].y,
    );
}

@compute @workgroup_size(WG_SIZE)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let n = params[1];
    let r0 = wg.x * TM;
    let b0 = wg.y * TN;
    // Workgroup-uniform, so returning before the barriers is allowed.
    if b0 >= n || r0 >= ROWS {
        return;
    }
    let blocks = COLS / 32u;
    let tr = lid / 16u;
    let tb = lid % 16u;
    var acc0 = vec4<f32>(0.0);
    var acc1 = vec4<f32>(0.0);
    var acc2 = vec4<f32>(0.0);
    var acc3 = vec4<f32>(0.0);
    // Stage: thread lid takes (tile row, block) pair lid = t * KB + kb of the weights
    // and the same pair of x (TM * KB = TN * KB = WG_SIZE). The next step's pair is
    // loaded into registers before this step's arithmetic (its loads are in flight while
    // the dot products run) and stored to workgroup memory after it.
    let t = lid / KB;
    let kb_own = lid % KB;
    let w_row = min(r0 + t, ROWS - 1u) * blocks;
    let x_row = min(b0 + t, n - 1u) * blocks;
    var next_w = load_wblock(w_row + min(kb_own, blocks - 1u));
    var next_x0 = xq[(x_row + min(kb_own, blocks - 1u)) * 3u];
    var next_x1 = xq[(x_row + min(kb_own, blocks - 1u)) * 3u + 1u];
    var next_xm = xq[(x_row + min(kb_own, blocks - 1u)) * 3u + 2u];
    for (var k0 = 0u; k0 < blocks; k0 += KB) {
        ws[(2u * kb_own) * TM + t] = next_w.q0;
        ws[(2u * kb_own + 1u) * TM + t] = next_w.q1;
        // A block past the last (COLS not a multiple of KB blocks) adds nothing.
        wd[kb_own * TM + t] = select(vec2<f32>(0.0), next_w.dm, k0 + kb_own < blocks);
        xs[(2u * kb_own) * TN + t] = next_x0;
        xs[(2u * kb_own + 1u) * TN + t] = next_x1;
        xm[kb_own * TN + t] = bitcast<vec2<f32>>(next_xm.xy);
        workgroupBarrier();
        if k0 + KB < blocks {
            let blk = min(k0 + KB + kb_own, blocks - 1u);
            next_w = load_wblock(w_row + blk);
            next_x0 = xq[(x_row + blk) * 3u];
            next_x1 = xq[(x_row + blk) * 3u + 1u];
            next_xm = xq[(x_row + blk) * 3u + 2u];
        }
        for (var kb = 0u; kb < KB; kb++) {
            // This thread's 4 batch rows, read once for its 4 weight rows.
            let xa = array<vec4<u32>, 4>(
                xs[(2u * kb) * TN + tb], xs[(2u * kb) * TN + tb + 16u],
                xs[(2u * kb) * TN + tb + 32u], xs[(2u * kb) * TN + tb + 48u]);
            let xc = array<vec4<u32>, 4>(
                xs[(2u * kb + 1u) * TN + tb], xs[(2u * kb + 1u) * TN + tb + 16u],
                xs[(2u * kb + 1u) * TN + tb + 32u], xs[(2u * kb + 1u) * TN + tb + 48u]);
            let m = array<vec2<f32>, 4>(
                xm[kb * TN + tb], xm[kb * TN + tb + 16u], xm[kb * TN + tb + 32u], xm[kb * TN + tb + 48u]);
            acc0 += row_dots(kb, tr, xa, xc, m);
            acc1 += row_dots(kb, tr + 16u, xa, xc, m);
            acc2 += row_dots(kb, tr + 32u, xa, xc, m);
            acc3 += row_dots(kb, tr + 48u, xa, xc, m);
        }
        workgroupBarrier();
    }
    store_row(r0 + tr, b0 + tb, n, acc0);
    store_row(r0 + tr + 16u, b0 + tb, n, acc1);
    store_row(r0 + tr + 32u, b0 + tb, n, acc2);
    store_row(r0 + tr + 48u, b0 + tb, n, acc3);
}
