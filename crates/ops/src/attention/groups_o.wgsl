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

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;
// 0: every position, the output is final; > 0: split-K partials for combine.wgsl, as
// fused.wgsl writes them (workgroup (h, s) takes positions [s·CHUNK, (s+1)·CHUNK)).
const CHUNK: u32 = 0u;

const WG: u32 = WG_THREADSu;
// A finite stand-in for -inf (see fused.wgsl).
const NEG: f32 = -3.0e38;

// Binding 0 is the output matrix `w` (its format's file, appended).
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
override HB: u32;

// Per group: (m, l), and every lane's accumulator.
var<workgroup> group_ml: array<vec2<f32>, WG>;
var<workgroup> group_acc: array<vec4<f32>, WG>;
// The head's output, then quantized per 32-element block as the dp4a gemv quantizes x.
var<workgroup> ho: array<vec4<f32>, 64>;
var<workgroup> hq: array<vec4<u32>, 8>;
var<workgroup> hm: array<vec2<f32>, 4>;

// The sum of v over the group's LP lanes (a butterfly within the group: groups are
// LP-aligned and LP divides the subgroup size, so a group never spans two subgroups).
fn group_sum(v: f32) -> f32 {
    var s = v;
    for (var o = HEAD_DIM / 8u; o > 0u; o = o >> 1u) {
        s += subgroupShuffleXor(s, o);
    }
    return s;
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
    // This head's blocks of the output projection's row `lid`, loaded before the
    // attention so that they arrive while it runs.
    let orow = min(lid, ROWS - 1u);
    let ob = h * HB;
    let w0 = load_block(orow, ob);
    let w1 = load_block(orow, ob + min(1u, HB - 1u));
    let w2 = load_block(orow, ob + min(2u, HB - 1u));
    let w3 = load_block(orow, ob + min(3u, HB - 1u));
    let n_ctx = min(step[1], MAX_CTX);
    // This workgroup's positions: start.. start + n (all of them without split-K).
    let start = select(0u, min(wg.y * CHUNK, n_ctx), CHUNK > 0u);
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
    // The merge as groups.wgsl's, into the head's output in workgroup memory.
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
            ho[e] = num / den;
        }
    }
    workgroupBarrier();
    // Quantized per block as kernel_dp4a.wgsl's quantize_part does it: 4 lanes of the
    // first subgroup per block, two vec4s each, max |x| and Σq through shuffles.
    if lid < sg_size {
        let b = min(lid / 4u, HB - 1u);
        let part = lid & 3u;
        let v0 = ho[b * 8u + 2u * part];
        let v1 = ho[b * 8u + 2u * part + 1u];
        let a = max(abs(v0), abs(v1));
        var amax = max(max(a.x, a.y), max(a.z, a.w));
        amax = max(amax, subgroupShuffleXor(amax, 1u));
        amax = max(amax, subgroupShuffleXor(amax, 2u));
        let d = amax / 127.0;
        let inv = select(0.0, 1.0 / d, d > 0.0);
        let q0 = vec4<i32>(round(v0 * inv));
        let q1 = vec4<i32>(round(v1 * inv));
        let qq = q0 + q1;
        var qs = (qq.x + qq.y) + (qq.z + qq.w);
        qs += subgroupShuffleXor(qs, 1u);
        qs += subgroupShuffleXor(qs, 2u);
        if lid < 4u * HB {
            hq[2u * b + (part >> 1u)][2u * (part & 1u)] = pack4xI8Clamp(q0);
            hq[2u * b + (part >> 1u)][2u * (part & 1u) + 1u] = pack4xI8Clamp(q1);
            if part == 0u {
                hm[b] = vec2<f32>(d, d * f32(qs));
            }
        }
    }
    workgroupBarrier();
    if lid < ROWS {
        var acc = block_idot(w0, hq[0], hq[1], hm[0]);
        if HB > 1u {
            acc += block_idot(w1, hq[2], hq[3], hm[1]);
        }
        if HB > 2u {
            acc += block_idot(w2, hq[4], hq[5], hm[2]);
        }
        if HB > 3u {
            acc += block_idot(w3, hq[6], hq[7], hm[3]);
        }
        parts[h * ROWS + lid] = acc;
    }
}
