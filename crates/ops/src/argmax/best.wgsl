// The workgroup's running best (value, index) of an argmax and its tree, shared by the
// argmax kernels (appended; they declare WG). Ties go to the smaller index; NONE means
// no candidate (no element was a number).

const NONE: u32 = 0xffffffffu;

var<workgroup> best_v: array<f32, WG>;
var<workgroup> best_i: array<u32, WG>;

// Whether candidate (vb, ib) beats (va, ia). Candidates are never NaN; ia = NONE means
// "no candidate yet".
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
// It has barriers: call it from workgroup-uniform control flow.
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
