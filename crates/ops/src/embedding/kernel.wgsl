// embedding frame, shared by every weight format: out[c] = dequant(table[token - ROW_START])[c].
//
// The token id is read on the GPU (argmax writes it), so decoding needs no readback before
// the next token. A table larger than one binding is split into row chunks, one dispatch
// each; only the chunk holding the token writes, the others leave `out` untouched.
//
// The format file appended after this one declares binding 0 (`table`) and defines
// `fn dequant(row: u32, c: u32) -> f32` with the same arithmetic as the CPU dequantizer.

override DIM: u32;
override ROWS: u32;
override ROW_START: u32;
// What every element is multiplied by (Gemma: √dim; 1 otherwise, which is exact).
override SCALE: f32 = 1.0;

@group(0) @binding(1) var<storage, read> token: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let t = token[0];
    // `t - ROW_START` is only evaluated once t >= ROW_START is known (no u32 wrap-around).
    if c >= DIM || t < ROW_START || t - ROW_START >= ROWS {
        return;
    }
    out[c] = dequant(t - ROW_START, c) * SCALE;
}
