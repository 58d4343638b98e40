// The `groups` attention kernel (groups.wgsl's `attend`, its result through emit.wgsl):
// workgroup (h, s) takes head h, split s.

@group(0) @binding(0) var<storage, read> step: array<u32, 4>;
@group(0) @binding(1) var<storage, read> q: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> k_cache: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> v_cache: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;

fn head_out(o: u32, slot: u32, e: u32, num: vec4<f32>, top: f32, den: f32) {
    emit_head(o, slot, e, num, top, den);
}

@compute @workgroup_size(WG)
fn main(
    @builtin(workgroup_id) wg: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
    @builtin(local_invocation_index) lid: u32,
    @builtin(subgroup_invocation_id) sg_lane: u32,
    @builtin(subgroup_size) sg_size: u32,
) {
    attend(wg.x, wg.y, nwg.y, lid, sg_lane, sg_size);
}
