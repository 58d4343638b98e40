// group_sum for the lanes frame: a shared-memory tree over the TPR lanes of each row group
// (every adapter has workgroup memory; log2(TPR) barriers).

var<workgroup> partial: array<vec4<f32>, 256>; // WG_SIZE
var<workgroup> partial_ss: array<f32, 256>;

fn group_sum(lid: u32, lane: u32, acc: vec4<f32>, ss: f32) -> GroupSum {
    partial[lid] = acc;
    if HAS_NORM {
        partial_ss[lid] = ss;
    }
    workgroupBarrier();
    for (var s = TPR / 2u; s > 0u; s = s >> 1u) {
        if lane < s {
            partial[lid] += partial[lid + s];
            if HAS_NORM {
                partial_ss[lid] += partial_ss[lid + s];
            }
        }
        workgroupBarrier();
    }
    return GroupSum(partial[lid], select(0.0, partial_ss[lid], HAS_NORM));
}
