// Decode attention for GPUs (variant `groups`): one workgroup of WG threads per query
// head, split into groups of LP = HEAD_DIM / 4 lanes. A lane owns one vec4 of q, of each
// key and value row and of the output, so a group reads a position's key row as one
// coalesced access and sums its score with LP-lane shuffles (LP is at most the adapter's
// smallest subgroup size: checked on the Rust side). Group g walks positions g, g + G,
// g + 2G, ... (G groups in use: WG / LP, fewer for short contexts), four a step so that
// eight loads are in flight, with an online softmax of its own (running max m, sum l,
// accumulator rescaled when m grows); the groups' (m, l, acc) merge once at the end
// through workgroup memory.
//
// Why: `workgroup` (fused.wgsl) scores a position per thread, each reading a whole key
// row alone (uncoalesced), then merges the chunk's softmax through barriers before the
// values: at decode contexts (100-500 positions) a chain of dependent memory round trips
// and barriers that took about 20 µs a call for Llama-8B on an H100. Here the loop has no
// barrier and a group's steps depend only on its own loads.
//
// WG is filled in by the Rust side (`groups_shader`): the adapter's largest workgroup,
// up to 1024 threads, so that more groups share the context.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;
// 0: every position, the output is final; > 0: split-K partials for combine.wgsl, as
// fused.wgsl writes them (workgroup (h, s) takes positions [s·CHUNK, (s+1)·CHUNK)).
override CHUNK: u32 = 0u;

const WG: u32 = WG_THREADSu;
// A finite stand-in for -inf (see fused.wgsl).
const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

fn k_at(r: u32, t: u32) -> vec4<f32> {
    return k_cache[r];
}

fn v_at(r: u32, t: u32) -> vec4<f32> {
    return v_cache[r];
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    let h = wg.x;
    let n_ctx = min(step[1], MAX_CTX);
    // This workgroup's positions: start.. start + n (all of them without split-K).
    let start = select(0u, min(wg.y * CHUNK, n_ctx), CHUNK > 0u);
    let n = select(n_ctx, min(n_ctx - start, CHUNK), CHUNK > 0u);
    let lp = HEAD_DIM / 4u;
    // Groups in use: at least four positions each (one step), so that a short context
    // is not spread thin over groups that the merge then has to walk.
    let used = clamp((n + 3u) / 4u, 1u, WG / lp);
    // The scale goes into q once rather than into every score.
    let q4 = q[h * lp + lid % lp] * SCALE;
    let part = attend(h, start, n, lid / lp, lid % lp, used, q4);
    merge_emit(h, h * nwg.y + wg.y, lid, sg_lane, sg_size, used, part);
}
