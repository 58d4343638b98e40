// Fused decode attention: one query per head over the first n_ctx rows of the KV cache,
// scores, softmax and the weighted sum of values in one dispatch (two dispatches and a
// scores round trip through memory fewer than attn_scores + softmax + attn_values).
//
// One workgroup per query head. Positions are taken WG / ks at a time (ks threads per
// key row: 1 up to 64-dim heads, 2 at 128, 4 at 256); an online softmax keeps the
// running max m and sum l, rescaling the accumulator when m grows (the flash-attention
// recurrence). Within a chunk:
// - ks threads score each position, each reading a slice of its key row as vec4s;
// - one tree reduction merges the threads' (max, sum of exp) pairs, giving the chunk's
//   max and its sum of exp(s - max) together (not a max pass then a sum pass);
// - thread (g, d4) accumulates the vec4 d4 of the values over the chunk's positions
//   g, g + G, ... where G = WG / (HEAD_DIM / 4); the G partial vec4s meet at the end.
// vec4 loads and the merged reduction replaced scalar loads and two reductions (H200,
// SmolLM2's 64-dim heads: see BENCHMARKS.md).
//
// Split-K (CHUNK > 0, op `attention_split`): workgroup (h, s) takes positions
// [s·CHUNK, (s+1)·CHUNK) only and writes its partial (acc[HEAD_DIM], m, l) to `out` at
// (h·SPLITS + s)·(HEAD_DIM + 2), for combine.wgsl; empty splits write m = NEG, l = 0.
// Long contexts then spread over n_heads × SPLITS workgroups instead of n_heads.

override N_HEADS: u32 = 1u;
override N_KV_HEADS: u32 = 1u;
override HEAD_DIM: u32 = 64u;
override MAX_CTX: u32 = 1u;
override SCALE: f32 = 0.125;
// 0: every position, the output is final; > 0: split-K partials (see above).
override CHUNK: u32 = 0u;

const WG: u32 = 256u;
// A finite stand-in for -inf: exp(NEG - m) underflows to 0 without inf - inf = NaN.
const NEG: f32 = -3.0e38;

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<f32>;
// Rows of N_KV_HEADS · HEAD_DIM floats, read as vec4 (HEAD_DIM is a multiple of 4).
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

var<workgroup> probs: array<f32, WG>;
var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_l: array<f32, WG>;
var<workgroup> part: array<vec4<f32>, WG>;

// vec4 i of the query at q_base. Every thread reads the same address (one load served to the
// whole workgroup), issued with its key loads: staging q in workgroup memory first cost a
// memory round trip and a barrier before any key could load.
fn q_vec(q_base: u32, i: u32) -> vec4<f32> {
    let qi = q_base + 4u * i;
    return vec4<f32>(q[qi], q[qi + 1u], q[qi + 2u], q[qi + 3u]);
}

// Position j's probability in this chunk, 0 from `count` on (j may pass WG).
fn prob_or_0(j: u32, count: u32) -> f32 {
    return select(0.0, probs[min(j, WG - 1u)], j < count);
}

// Merges every thread's (max, Σ exp(s - max)) into the workgroup's, returned to all.
fn reduce_softmax(lid: u32, m: f32, l: f32) -> vec2<f32> {
    red_m[lid] = m;
    red_l[lid] = l;
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s = s >> 1u) {
        if lid < s {
            let a = red_m[lid];
            let b = red_m[lid + s];
            let mx = max(a, b);
            red_l[lid] = red_l[lid] * exp(a - mx) + red_l[lid + s] * exp(b - mx);
            red_m[lid] = mx;
        }
        workgroupBarrier();
    }
    let r = vec2<f32>(red_m[0], red_l[0]);
    workgroupBarrier();
    return r;
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
) {
    let h = wg.x;
    let n_ctx = min(step[1], MAX_CTX);
    let start = select(0u, wg.y * CHUNK, CHUNK > 0u);
    let stop = select(n_ctx, min(n_ctx, start + CHUNK), CHUNK > 0u);
    let kv_head = h / (N_HEADS / N_KV_HEADS);
    let d4s = HEAD_DIM / 4u;
    // In vec4s.
    let row = N_KV_HEADS * d4s;
    let head_off = kv_head * d4s;
    let q_base = h * HEAD_DIM;
    let groups = WG / d4s;
    let d4 = lid % d4s;
    let g = lid / d4s;
    var m = NEG;
    var l = 0.0;
    var acc = vec4<f32>(0.0);
    // Threads per position's dot product: a key row of d4s vec4s in ks slices, so that no
    // thread reads more than 16 of them (ks = 4 for Gemma 3's 256-dim heads, whose rows,
    // read whole by one thread, made attention its decode's largest op: 12 µs a call on
    // an H100). HEAD_DIM divides WG, so d4s and ks are powers of two and ks divides d4s.
    let ks = max(1u, d4s / 16u);
    let per = WG / ks;
    let slice = d4s / ks;
    for (var c = start; c < stop; c += per) {
        let t = c + lid / ks;
        var dot = 0.0;
        if t < stop {
            let sl = (lid % ks) * slice;
            let base = t * row + head_off + sl;
            // Eight independent partial sums keep eight key loads in flight.
            var s0 = vec4<f32>(0.0);
            var s1 = vec4<f32>(0.0);
            var s2 = vec4<f32>(0.0);
            var s3 = vec4<f32>(0.0);
            var s4 = vec4<f32>(0.0);
            var s5 = vec4<f32>(0.0);
            var s6 = vec4<f32>(0.0);
            var s7 = vec4<f32>(0.0);
            var i = 0u;
            for (; i + 7u < slice; i += 8u) {
                let k0 = k_cache[base + i];
                let k1 = k_cache[base + i + 1u];
                let k2 = k_cache[base + i + 2u];
                let k3 = k_cache[base + i + 3u];
                let k4 = k_cache[base + i + 4u];
                let k5 = k_cache[base + i + 5u];
                let k6 = k_cache[base + i + 6u];
                let k7 = k_cache[base + i + 7u];
                s0 += q_vec(q_base, sl + i) * k0;
                s1 += q_vec(q_base, sl + i + 1u) * k1;
                s2 += q_vec(q_base, sl + i + 2u) * k2;
                s3 += q_vec(q_base, sl + i + 3u) * k3;
                s4 += q_vec(q_base, sl + i + 4u) * k4;
                s5 += q_vec(q_base, sl + i + 5u) * k5;
                s6 += q_vec(q_base, sl + i + 6u) * k6;
                s7 += q_vec(q_base, sl + i + 7u) * k7;
            }
            for (; i < slice; i++) {
                s0 += q_vec(q_base, sl + i) * k_cache[base + i];
            }
            let sv = ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7));
            dot = sv.x + sv.y + sv.z + sv.w;
        }
        // Position c + lid's score is thread lid's (lid < per): its slices summed through
        // `part`, free until the end (the loop's last barrier orders it).
        var s = dot;
        if ks > 1u {
            part[lid] = vec4<f32>(dot, 0.0, 0.0, 0.0);
            workgroupBarrier();
            s = 0.0;
            for (var j = 0u; j < ks; j++) {
                s += part[min(lid * ks + j, WG - 1u)].x;
            }
        }
        let scored = lid < per && c + lid < stop;
        s = select(NEG, s * SCALE, scored);
        // This thread's first four value rows (g, g + G, g + 2G, g + 3G of the chunk),
        // loaded before the softmax merge so that their memory round trip overlaps it.
        // Rows past the chunk's end are clamped to its last (a valid row: its weight is
        // 0, and rows past n_ctx may hold anything, NaN included).
        let count = min(per, stop - c);
        let vbase = c * row + head_off + d4;
        let pv0 = v_cache[vbase + min(g, count - 1u) * row];
        let pv1 = v_cache[vbase + min(g + groups, count - 1u) * row];
        let pv2 = v_cache[vbase + min(g + 2u * groups, count - 1u) * row];
        let pv3 = v_cache[vbase + min(g + 3u * groups, count - 1u) * row];
        // This thread's pair: (s, 1), or (NEG, 0) past the end.
        let chunk = reduce_softmax(lid, s, select(0.0, 1.0, scored));
        let new_m = max(m, chunk.x);
        var p = 0.0;
        if scored {
            p = exp(s - new_m);
        }
        probs[lid] = p;
        let correction = exp(m - new_m);
        l = l * correction + chunk.y * exp(chunk.x - new_m);
        acc = acc * correction;
        workgroupBarrier();
        // Weight 0 past count, so the clamped rows add nothing.
        acc += prob_or_0(g, count) * pv0;
        var a1 = prob_or_0(g + groups, count) * pv1;
        var a2 = prob_or_0(g + 2u * groups, count) * pv2;
        var a3 = prob_or_0(g + 3u * groups, count) * pv3;
        // Then four positions per step with their own accumulators, so four value loads
        // are in flight (one at a time, an L2 round trip each, was the kernel's longest
        // part: 8-16 steps per thread at the contexts of a decode).
        var j = g + 4u * groups;
        for (; j + 3u * groups < count; j += 4u * groups) {
            let v0 = v_cache[vbase + j * row];
            let v1 = v_cache[vbase + (j + groups) * row];
            let v2 = v_cache[vbase + (j + 2u * groups) * row];
            let v3 = v_cache[vbase + (j + 3u * groups) * row];
            acc += probs[j] * v0;
            a1 += probs[j + groups] * v1;
            a2 += probs[j + 2u * groups] * v2;
            a3 += probs[j + 3u * groups] * v3;
        }
        for (; j < count; j += groups) {
            acc += probs[j] * v_cache[vbase + j * row];
        }
        acc += (a1 + a2) + a3;
        m = new_m;
        // probs is rewritten by the next chunk.
        workgroupBarrier();
    }
    part[lid] = acc;
    workgroupBarrier();
    if g == 0u {
        var total = vec4<f32>(0.0);
        for (var k = 0u; k < groups; k++) {
            total += part[k * d4s + d4];
        }
        emit_head(h * HEAD_DIM, h * nwg.y + wg.y, d4, total, m, l);
    }
}
