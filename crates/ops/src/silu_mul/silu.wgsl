// silu(g) = g · sigmoid(g), the batched frame's activation for silu_mul.
fn act(g: f32) -> f32 {
    return g / (1.0 + exp(-g));
}
