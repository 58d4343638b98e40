// gelu in ggml's tanh approximation (`ggml_gelu`):
// gelu(g) = 0.5·g·(1 + tanh(√(2/π)·g·(1 + 0.044715·g²))). Shared by gelu_mul's kernel and
// the batched gated-activation frame (silu_mul/batched.wgsl).
const SQRT_2_OVER_PI: f32 = 0.7978845608028654;
const GELU_COEF_A: f32 = 0.044715;

fn act(g: f32) -> f32 {
    let u = SQRT_2_OVER_PI * g * (1.0 + GELU_COEF_A * g * g);
    // tanh(±10) is ±1 in f32; clamping keeps a tanh built from exponentials from
    // overflowing into NaN for large |u|.
    return 0.5 * g * (1.0 + tanh(clamp(u, -10.0, 10.0)));
}
