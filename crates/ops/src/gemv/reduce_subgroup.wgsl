// group_sum for the lanes frame with subgroup operations: a butterfly of shuffles over the
// TPR lanes of each row group, no workgroup memory and no barrier. TPR is at most the
// adapter's smallest subgroup size (checked on the Rust side), so a row group never spans
// two subgroups (groups are TPR-aligned and subgroup sizes are powers of two).

fn group_sum(lid: u32, lane: u32, acc: vec4<f32>, ss: f32) -> GroupSum {
    var a = acc;
    var s2 = ss;
    for (var o = TPR / 2u; o > 0u; o = o >> 1u) {
        a += subgroupShuffleXor(a, o);
        if HAS_NORM {
            s2 += subgroupShuffleXor(s2, o);
        }
    }
    return GroupSum(a, s2);
}
