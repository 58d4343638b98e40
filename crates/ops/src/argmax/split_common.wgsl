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
