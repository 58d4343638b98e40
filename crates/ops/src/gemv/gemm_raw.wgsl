// A weight block as the gemm loaders read it (`load_wraw`: the format's words, no
// arithmetic on them yet) and as the frames use it (`unpack_wraw` -> WBlock). The coopmat
// gemm loads a step ahead and unpacks when it stages: an instruction that uses a loaded
// word waits for the load, so unpacking as the words arrive would expose the loads'
// latency before the multiplies (converting x to f16 as it arrived cost 10.6 of the 8B
// prompt's 46 ms of gemms: BENCHMARKS.md, run 46).
struct WRaw {
    q0: vec4<u32>,
    q1: vec4<u32>,
    s: vec2<u32>,
}

fn load_wblock(i: u32) -> WBlock {
    return unpack_wraw(load_wraw(i));
}
