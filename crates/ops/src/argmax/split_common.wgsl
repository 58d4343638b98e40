// argmax over many workgroups, for vocabularies where one workgroup is a long serial scan
// (Gemma 3's 262,144 logits: 28 µs on an H100 in one workgroup of 1024 threads). Two
// dispatches (`split_partial.wgsl`, then `split_merge.wgsl`):
// - `argmax_partial`: workgroup g scans chunk g, CHUNK consecutive logits (each thread
//   eight loads WG apart, all issued before the first compare: coalesced), and writes
//   the chunk's best to part_v[g] and part_i[g] (NONE and 0 when no element is a number);
// - `argmax_merge`: one workgroup takes the best of the G partials into out[0].
// Ties go to the smallest index (chunks and each thread's elements rise in index and a
// strict > keeps the first; the trees prefer the smaller index); NaN never wins.

const WG: u32 = 256u;
const CHUNK: u32 = WG * 8u;
const NONE: u32 = 0xffffffffu;

var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

// Whether candidate (vb, ib) beats (va, ia); ia = NONE means "no candidate yet".
fn beats(vb: f32, ib: u32, va: f32, ia: u32) -> bool {
    if ib == NONE {
        return false;
    }
    if ia == NONE {
        return true;
    }
    return vb > va || (vb == va && ib < ia);
}

// The workgroup's best of (best_v, best_i), each thread's written first, into slot 0.
fn reduce(tid: u32) {
    workgroupBarrier();
    for (var s = WG / 2u; s > 0u; s >>= 1u) {
        if tid < s && beats(best_v[tid + s], best_i[tid + s], best_v[tid], best_i[tid]) {
            best_v[tid] = best_v[tid + s];
            best_i[tid] = best_i[tid + s];
        }
        workgroupBarrier();
    }
}
