// The `groups` walk over a context, shared by groups.wgsl (its own main) and qkv.wgsl
// (q/k/v computed in the same workgroup first). The kernel appended to defines
// k_at(r, t) and v_at(r, t): position t's key and value vec4 at cache index r (the cache,
// or for qkv.wgsl the current position's own rows), and declares WG, HEAD_DIM, N_HEADS,
// N_KV_HEADS, NEG and `out`.

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

// A group's online softmax over its positions: running max, sum and accumulator.
struct Partial {
    m: f32,
    l: f32,
    acc: vec4<f32>,
}

// Group g's walk (lane d4 of it) over positions start..start + n of head h's KV head, q4
// the lane's vec4 of q, scaled; `used` groups share the positions. Called by every
// thread (threads of groups past `used` return an empty partial).
fn attend(h: u32, start: u32, n: u32, g: u32, d4: u32, used: u32, q4: vec4<f32>) -> Partial {
    let lp = HEAD_DIM / 4u;
    let kv_head = h / (N_HEADS / N_KV_HEADS);
    let row4 = N_KV_HEADS * lp;
    let kb = kv_head * lp + d4;
    let last = start + max(n, 1u) - 1u;
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
            let p = min(vec4<u32>(start) + t, vec4<u32>(last));
            let r = p * row4 + vec4<u32>(kb);
            let k0 = k_at(r.x, p.x);
            let k1 = k_at(r.y, p.y);
            let k2 = k_at(r.z, p.z);
            let k3 = k_at(r.w, p.w);
            let v0 = v_at(r.x, p.x);
            let v1 = v_at(r.y, p.y);
            let v2 = v_at(r.z, p.z);
            let v3 = v_at(r.w, p.w);
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
            let pw = select(vec4<f32>(0.0), exp(s - vec4<f32>(new_m)), valid);
            l = l * correction + ((pw.x + pw.y) + (pw.z + pw.w));
            acc = acc * correction + ((pw.x * v0 + pw.y * v1) + (pw.z * v2 + pw.w * v3));
            m = new_m;
        }
    }
    return Partial(m, l, acc);
}

// The groups' partials merged and head h's result emitted (`slot` as emit_head takes
// it), after one barrier: subgroup e (stepping by the number of subgroups) merges
// element e (a vec4) of every group's accumulator, lane i taking groups i, i + sg_size,
// ..., then a subgroupMax and two subgroupAdds. Every group in use saw at least one
// position (but for an empty split, whose l stays 0), so the top is finite. (It replaced
// a two-level merge through loops and a second barrier: simpler, the same speed on an
// H100, BENCHMARKS.md run 14. What the merge costs is the wait for the slowest group,
// not its arithmetic.) Called by every thread.
fn merge_emit(h: u32, slot: u32, lid: u32, sg_lane: u32, sg_size: u32, used: u32, part: Partial) {
    let lp = HEAD_DIM / 4u;
    let g = lid / lp;
    if lid % lp == 0u {
        group_ml[g] = vec2<f32>(part.m, part.l);
    }
    group_acc[lid] = part.acc;
    workgroupBarrier();
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
            emit_head(h * HEAD_DIM, slot, e, num, top, den);
        }
    }
}
