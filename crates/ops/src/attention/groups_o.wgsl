// Decode attention (groups.wgsl's, one workgroup per head) with the output projection
// (`attention+gemv_<format>`, attention/output.rs): each head's workgroup multiplies its
// head's output by its own HEAD_DIM columns of W_o into a partial of ROWS floats, with
// the dp4a gemv's arithmetic: the head's output quantized per 32-element block as
// kernel_dp4a.wgsl quantizes x (4 lanes a block, the same shuffles), the format's
// block_idot. The next gemv adds the heads' partials to the residual stream as it loads
// it (kernel_dp4a.wgsl's PARTIALS): the output projection's dispatch and its residual
// add are gone. One output row per thread (ROWS <= WG: small models).
//
// Why the partials go to the next gemv and not to x here: adding them in the last head's
// workgroup (an atomic count of heads done, then the sum) waits for four dependent memory
// round trips after the partials, and was 8.5% slower on SmolLM2 than no fusion on an
// H100; the next gemv loads x anyway (BENCHMARKS.md run 41).

// Appended to groups.wgsl (the attention: `attend`), then quantize_part.wgsl, the
// format's load_block / block_idot (binding 0, `w`) and idot_common.wgsl.

@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
// Each head's partial projection: N_HEADS rows of ROWS floats.
@group(0) @binding(4) var<storage, read_write> parts: array<f32>;
@group(0) @binding(5) var<storage, read> step: array<u32, 4>;

// The output projection: ROWS rows (the model's dim), COLS = N_HEADS · HEAD_DIM columns.
override ROWS: u32;
override COLS: u32;
// Blocks of 32 columns per head (HEAD_DIM / 32, at most 4: the Rust side checks).
override X_BLOCKS: u32;

// The head's output, then quantized as the dp4a gemv quantizes x (quantize_part.wgsl).
var<workgroup> ho: array<vec4<f32>, 64>;
var<workgroup> xq: array<vec4<u32>, 8>;
var<workgroup> xm: array<vec2<f32>, 4>;

fn head_out(o: u32, slot: u32, e: u32, num: vec4<f32>, top: f32, den: f32) {
    ho[e] = num / den;
}

// The head's output is quantized as it is (no norm).
fn normed(b: u32, k: u32, x4: vec4<f32>) -> vec4<f32> {
    return x4;
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let h = wg.x;
    // This head's blocks of the output projection's row `lid`, loaded before the
    // attention so that they arrive while it runs (blocks past X_BLOCKS repeat the last,
    // unused).
    let orow = min(lid, ROWS - 1u);
    let ob = h * X_BLOCKS;
    let w0 = load_block(orow, ob);
    let w1 = load_block(orow, ob + min(1u, X_BLOCKS - 1u));
    let w2 = load_block(orow, ob + min(2u, X_BLOCKS - 1u));
    let w3 = load_block(orow, ob + min(3u, X_BLOCKS - 1u));
    attend(h, 0u, 1u, lid, sg_lane, sg_size);
    workgroupBarrier();
    // 4 lanes of the first subgroup per block; the lanes past the blocks quantize a copy
    // of the last block and store nothing (quantize_part's shuffles need them all).
    if lid < sg_size {
        let b = min(lid / 4u, X_BLOCKS - 1u);
        let part = lid & 3u;
        let blk = select(X_BLOCKS, b, lid < 4u * X_BLOCKS);
        quantize_part(blk, part, ho[b * 8u + 2u * part], ho[b * 8u + 2u * part + 1u]);
    }
    workgroupBarrier();
    if lid < ROWS {
        var acc = block_idot(w0, xq[0], xq[1], xm[0]);
        if X_BLOCKS > 1u {
            acc += block_idot(w1, xq[2], xq[3], xm[1]);
        }
        if X_BLOCKS > 2u {
            acc += block_idot(w2, xq[4], xq[5], xm[2]);
        }
        if X_BLOCKS > 3u {
            acc += block_idot(w3, xq[6], xq[7], xm[3]);
        }
        parts[h * ROWS + lid] = acc;
    }
}
