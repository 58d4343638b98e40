// Partials (workgroups of `argmax_partial`).
override G: u32 = 1u;

@group(0) @binding(0) var<storage, read> part_v: array<f32>;
@group(0) @binding(1) var<storage, read> part_i: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) tid: u32) {
    var bv = 0.0;
    var bi = NONE;
    for (var g = tid; g < G; g += WG) {
        let i = part_i[g];
        if i != NONE && (bi == NONE || part_v[g] > bv) {
            bv = part_v[g];
            bi = i;
        }
    }
    best_v[tid] = bv;
    best_i[tid] = bi;
    reduce(tid);
    if tid == 0u {
        out[0] = best_i[0];
    }
}
