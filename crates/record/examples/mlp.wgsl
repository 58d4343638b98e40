// Y = act(X·W + b) for a batch: X is [rows, K], W is [K, N], Y is [rows, N], 16x16 tiles
// of X and W staged in workgroup memory. RELU = 1 applies max(0, .).
override K: u32;
override N: u32;
override RELU: u32 = 1u;
const TILE: u32 = 16u;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> y: array<f32>;

var<workgroup> xs: array<array<f32, 16>, 16>;
var<workgroup> ws: array<array<f32, 16>, 16>;

@compute @workgroup_size(16, 16)
fn main(@builtin(workgroup_id) wg: vec3<u32>, @builtin(local_invocation_id) li: vec3<u32>) {
    let rows = arrayLength(&x) / K;
    let col = wg.x * TILE + li.x;
    let row = wg.y * TILE + li.y;
    var acc = 0.0;
    for (var t = 0u; t < K; t += TILE) {
        let xk = t + li.x;
        let wk = t + li.y;
        xs[li.y][li.x] = select(0.0, x[row * K + xk], row < rows && xk < K);
        ws[li.y][li.x] = select(0.0, w[wk * N + col], wk < K && col < N);
        workgroupBarrier();
        for (var i = 0u; i < TILE; i++) {
            acc += xs[li.y][i] * ws[i][li.x];
        }
        workgroupBarrier();
    }
    if (row < rows && col < N) {
        var v = acc + bias[col];
        if (RELU == 1u) {
            v = max(v, 0.0);
        }
        y[row * N + col] = v;
    }
}
