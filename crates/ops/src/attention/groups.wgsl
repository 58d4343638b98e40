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

// The includer declares step, q, k_cache and v_cache (groups_main.wgsl: the kernel's
// bindings; groups_o.wgsl: with the output projection's) and `head_out`, where a head's
// merged output goes.

// Per group: (m, l), and every lane's accumulator.
var<workgroup> group_ml: array<vec2<f32>, WG>;
var<workgroup> group_acc: array<vec4<f32>, WG>;

// The sum of v over the group's LP lanes (a butterfly within the group: groups are
// LP-aligned and LP divides the subgroup size, so a group never spans two subgroups).
fn group_sum(v: f32) -> f32 {
    var s = v;
    for (var o = HEAD_DIM / 8u; o > 0u; o = o >> 1u) {
        s += subgroupShuffleXor(s, o);
    }
    return s;
}

// Head h's attention over its positions (split `split` of `splits` with CHUNK > 0), by
// the whole workgroup; ends with `head_out` for each vec4 of the head's result.
fn attend(h: u32, split: u32, splits: u32, lid: u32, sg_lane: u32, sg_size: u32) {
    let n_ctx = min(step[1], MAX_CTX);
    // This workgroup's positions: start.. start + n (all of them without split-K).
    let start = select(0u, min(split * CHUNK, n_ctx), CHUNK > 0u);
    let n = select(n_ctx, min(n_ctx - start, CHUNK), CHUNK > 0u);
    let lp = HEAD_DIM / 4u;
    let groups = WG / lp;
    let g = lid / lp;
    let d4 = lid % lp;
    let kv_head = h / (N_HEADS / N_KV_HEADS);
    let row4 = N_KV_HEADS * lp;
    let kb = kv_head * lp + d4;
    // The scale goes into q once rather than into every score.
    let q4 = q[h * lp + d4] * SCALE;
    let last = start + max(n, 1u) - 1u;
    // Groups in use: at least four positions each (one step), so that a short context
    // is not spread thin over groups that the merge then has to walk.
    let used = clamp((n + 3u) / 4u, 1u, groups);
    var m = NEG;
    var l = 0.0;
    var acc = vec4<f32>(0.0);
    if g < used {
        // The same number of steps for every group in use (a group's lanes stay together
        // for the shuffles); positions past n_ctx load the last row (valid: rows past
        // n_ctx may hold anything, NaN included) and weigh 0.
        let stride = 4u * used;
        let steps = (n + stride - 1u) / stride;
        for (var i = 0u; i < steps; i++) {
            let t0 = g + stride * i;
            let t = vec4<u32>(t0, t0 + used, t0 + 2u * used, t0 + 3u * used);
            let valid = t < vec4<u32>(n);
            let r = min(vec4<u32>(start) + t, vec4<u32>(last)) * row4 + vec4<u32>(kb);
            let k0 = k_cache[r.x];
            let k1 = k_cache[r.y];
            let k2 = k_cache[r.z];
            let k3 = k_cache[r.w];
            let v0 = v_cache[r.x];
            let v1 = v_cache[r.y];
            let v2 = v_cache[r.z];
            let v3 = v_cache[r.w];
            let s = select(
                vec4<f32>(NEG),
                vec4<f32>(
                    group_sum(dot(q4, k0)),
                    group_sum(dot(q4, k1)),
                    group_sum(dot(q4, k2)),
                    group_sum(dot(q4, k3)),
                ),
                valid,
            );
            let new_m = max(m, max(max(s.x, s.y), max(s.z, s.w)));
            let correction = exp(m - new_m);
            let p = select(vec4<f32>(0.0), exp(s - vec4<f32>(new_m)), valid);
            l = l * correction + ((p.x + p.y) + (p.z + p.w));
            acc = acc * correction + ((p.x * v0 + p.y * v1) + (p.z * v2 + p.w * v3));
            m = new_m;
        }
    }
    if d4 == 0u {
        group_ml[g] = vec2<f32>(m, l);
    }
    group_acc[lid] = acc;
    workgroupBarrier();
    // The merge, in one level after that one barrier: subgroup e (stepping by the number
    // of subgroups) merges element e (a vec4) of every group's accumulator, lane i taking
    // groups i, i + sg_size, ..., then a subgroupMax and two subgroupAdds. Every group in
    // use saw at least one position (but for an empty split, whose l stays 0), so the
    // top is finite. (It replaced a two-level merge through loops and a second barrier:
    // simpler, the same speed on an H100, BENCHMARKS.md run 14. What the merge costs is
    // the wait for the slowest group, not its arithmetic.)
    for (var e = lid / sg_size; e < lp; e += max(WG / sg_size, 1u)) {
        var top = NEG;
        for (var k = sg_lane; k < used; k += sg_size) {
            top = max(top, group_ml[k].x);
        }
        top = subgroupMax(top);
        var den = 0.0;
        var num = vec4<f32>(0.0);
        for (var k = sg_lane; k < used; k += sg_size) {
            let ml = group_ml[k];
            let w = exp(ml.x - top);
            den += w * ml.y;
            num += w * group_acc[k * lp + e];
        }
        den = subgroupAdd(den);
        num = subgroupAdd(num);
        if sg_lane == 0u {
            head_out(h * HEAD_DIM, h * splits + split, e, num, top, den);
        }
    }
}
