// A q5_0 block's words from the GGUF bytes (w bound as array<u32>; kernel_q5_0.wgsl has
// the layout: 22-byte blocks start on an even byte, the payload after d word-aligned when
// the block starts mid-word, else spliced by realign). Shared by block_q5_0.wgsl (the
// rows frame's whole-block dot) and idot_q5_0.wgsl (dp4a).
struct Q5Words {
    q: vec4<u32>,
    qh: u32,
    d: f32,
}

// Block i (row-major over the matrix), each of its 6 words loaded once.
fn q5_0_words(i: u32) -> Q5Words {
    let byte0 = i * 22u;
    let a = byte0 >> 2u;
    let mid = (byte0 & 2u) != 0u;
    let w0 = w[a];
    let w1 = w[a + 1u];
    let w2 = w[a + 2u];
    let w3 = w[a + 3u];
    let w4 = w[a + 4u];
    let w5 = w[a + 5u];
    let q = vec4<u32>(realign(w1, w2, mid), realign(w2, w3, mid), realign(w3, w4, mid), realign(w4, w5, mid));
    return Q5Words(q, realign(w0, w1, mid), unpack2x16float(select(w0, w0 >> 16u, mid)).x);
}
