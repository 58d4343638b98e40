// Rope angles, shared by the single-token and the batched kernel (appended after each;
// they declare BASE and ROPE_DIMS).

// Vulkan only bounds sin/cos error inside [-π, π] (2^-11 absolute) and promises nothing
// outside it, while pos · freq reaches thousands of radians. So reduce first
// (Cody-Waite, 2π split in two: k · 6.28125 is exact in f32 for |a| < 4e5).
fn reduce_angle(a: f32) -> f32 {
    let n = round(a * 0.15915494309189535);
    return (a - n * 6.28125) - n * 1.9353071795864769e-3;
}

// (cos, sin) of the angle for pair i at position pos. Kept in step with cpu.rs: f32 pow,
// then one f32 multiply by pos.
fn angle(pos: u32, i: u32) -> vec2<f32> {
    let freq = pow(BASE, -f32(2u * i) / f32(ROPE_DIMS));
    let theta = reduce_angle(f32(pos) * freq);
    return vec2<f32>(cos(theta), sin(theta));
}
