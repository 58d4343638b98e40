// Batched embedding frame: out[b * DIM + c] = table[token[b]][c] · SCALE for rows
// b < params[1].
// Grid: (ceil(DIM / 256), rows). The format file appended declares binding 0 and
// `dequant(row, c)`, as for the single-token kernel.

override DIM: u32;
override ROWS: u32;
override ROW_START: u32;
override SCALE: f32 = 1.0;

@group(0) @binding(1) var<storage, read> token: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read> params: array<u32, 4>;

@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let c = gid.x;
    let b = gid.y;
    if b >= params[1] {
        return;
    }
    let t = token[b];
    if c >= DIM || t < ROW_START || t - ROW_START >= ROWS {
        return;
    }
    out[b * DIM + c] = dequant(t - ROW_START, c) * SCALE;
}
