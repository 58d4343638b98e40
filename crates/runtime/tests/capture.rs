//! Captures on a real adapter: record a small graph's run, replay it, benchmark its
//! commands, compare its outputs, substitute its kernels.

use std::ops::Range;
use std::path::Path;

use gpuscope_report::inspect::inspect;
use gpuscope_runtime::capture::{
    bench_commands, compare_outputs, replay_stream, BenchOptions, CaptureRecorder, ReplayError,
    StepRecord, Substitution,
};
use gpuscope_runtime::{
    Cost, Dispatch, Gpu, GpuBuffer, Graph, Section, ShaderSource, StepOutput, StepRunner,
};
use gpuscope_trace::capture::read_capture;
use gpuscope_trace::WorkloadDesc;

const N: u32 = 64;

/// y = x * (pos + 1) + K
const SCALE: ShaderSource = ShaderSource {
    name: "capture_test_scale",
    wgsl: "override N: u32 = 1u;
override K: f32 = 0.0;
@group(0) @binding(0) var<storage, read> step: array<u32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < N) { y[g.x] = x[g.x] * f32(step[0] + 1u) + K; }
}",
};

/// z += y: the state carries from step to step.
const ACC_WGSL: &str = "override N: u32 = 1u;
@group(0) @binding(0) var<storage, read> y: array<f32>;
@group(0) @binding(1) var<storage, read_write> z: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
    if (g.x < N) { z[g.x] = z[g.x] + y[g.x]; }
}";
const ACC: ShaderSource = ShaderSource {
    name: "capture_test_acc",
    wgsl: ACC_WGSL,
};

struct Setup {
    gpu: Gpu,
    graph: Graph,
    step: GpuBuffer,
    z: GpuBuffer,
}

/// Each test its own device: the step tap and the counters are per device.
fn setup(scale_variants: usize) -> Option<Setup> {
    gpuscope_runtime::testing::shared_gpu()?;
    let gpu = Gpu::new(&Default::default()).unwrap();
    let step = gpu.create_buffer("step", 16).unwrap();
    let xs: Vec<f32> = (0..N).map(|i| i as f32 * 0.5).collect();
    let x = gpu
        .create_buffer_init("x", bytemuck::cast_slice(&xs))
        .unwrap();
    let y = gpu.create_buffer("y", 4 * N as u64).unwrap();
    let z = gpu.create_buffer("z", 4 * N as u64).unwrap();
    let acc = gpu.pipeline(&ACC, "main", &[("N", N as f64)]).unwrap();
    let mut sections = Vec::new();
    for v in 0..scale_variants {
        let scale = gpu
            .pipeline(&SCALE, "main", &[("N", N as f64), ("K", v as f64)])
            .unwrap();
        let d1 = Dispatch::new(
            "scale",
            scale.clone(),
            gpu.bind_group(&scale, &[&step, &x, &y]).unwrap(),
            [1, 1, 1],
            Cost {
                bytes: 512,
                flops: 64,
            },
            &[&step, &x],
            &[&y],
        )
        .labelled(format!("P{v}.scale"), Some(v as u32));
        let d2 = Dispatch::new(
            "acc",
            acc.clone(),
            gpu.bind_group(&acc, &[&y, &z]).unwrap(),
            [1, 1, 1],
            Cost {
                bytes: 768,
                flops: 64,
            },
            &[&y, &z],
            &[&z],
        )
        .labelled(format!("P{v}.acc"), Some(v as u32));
        sections.push(Section::new(format!("P{v}"), Some(v as u32), vec![d1, d2]));
    }
    Some(Setup {
        gpu,
        graph: Graph { sections },
        step,
        z,
    })
}

/// Runs 3 steps live while recording; returns the live outputs.
fn record(s: &Setup, dir: &Path, data: bool, outputs: Option<Range<usize>>) -> Vec<StepOutput> {
    let gpu = &s.gpu;
    let mut rec = CaptureRecorder::new(gpu, &s.graph, "test", WorkloadDesc::default()).unwrap();
    let mut runner = StepRunner::new(gpu, &s.graph, &[&s.z]).unwrap();
    rec.begin(gpu, data).unwrap();
    let mut outs = Vec::new();
    for pos in 0..3u32 {
        let step = [pos, pos + 1, 0, 0];
        outs.push(
            runner
                .step(gpu, &s.graph, &[(&s.step, 0, bytemuck::cast_slice(&step))])
                .unwrap(),
        );
    }
    let records: Vec<StepRecord> = outs
        .iter()
        .enumerate()
        .map(|(i, o)| StepRecord {
            index: i as u32,
            position: i as u32,
            token_id: 0,
            output: o,
        })
        .collect();
    rec.end(gpu, &records).unwrap();
    if let Some(r) = outputs {
        rec.capture_outputs(gpu, r).unwrap();
    }
    rec.write(dir, gpuscope_trace::capture::OnExisting::Refuse)
        .unwrap();
    outs
}

#[test]
fn whole_stream_replay_has_the_live_runs_dispatches_and_counters() {
    let Some(s) = setup(2) else { return };
    let dir = tempfile::tempdir().unwrap();
    let live = record(&s, dir.path(), true, None);
    let cap = read_capture(dir.path()).unwrap();
    let profile = replay_stream(&s.gpu, &cap, &[], &Default::default()).unwrap();
    assert_eq!(profile.tokens.len(), live.len());
    assert_eq!(
        profile.dispatches.len(),
        live.iter().map(|o| o.dispatches.len()).sum::<usize>()
    );
    for (t, o) in profile.tokens.iter().zip(&live) {
        assert_eq!(t.counters, o.counters, "token {}", t.index);
        assert_eq!(t.counters.resources_created(), 0);
    }
    // The replay starts from the captured contents, so it reads back what the live run did.
    let z_live: Vec<f32> = bytemuck::pod_collect_to_vec(&live[2].readbacks[0]);
    let first = u32::from_le_bytes(live[2].readbacks[0][..4].try_into().unwrap());
    assert_eq!(profile.tokens[2].token_id, first, "z[0] = {}", z_live[0]);
    assert_eq!(profile.dispatches[1].label, "P0.acc");
    assert_eq!(profile.dispatches[1].bytes, 768);
}

#[test]
fn per_command_lists_each_unique_command_once_and_counts_sum_to_the_stream() {
    let Some(s) = setup(2) else { return };
    let dir = tempfile::tempdir().unwrap();
    record(&s, dir.path(), false, None);
    let cap = read_capture(dir.path()).unwrap();
    let opts = BenchOptions {
        max_seconds: 0.5,
        ..Default::default()
    };
    let report = bench_commands(&s.gpu, &cap, &[], &opts, &Default::default()).unwrap();
    // scale×2 and acc (one pipeline and bind group for both sections: one command).
    assert_eq!(report.commands.len(), 3);
    let mut keys: Vec<_> = report
        .commands
        .iter()
        .map(|c| (c.pipeline.clone(), c.bind_group, c.workgroups))
        .collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 3, "each command once");
    assert_eq!(
        report.commands.iter().map(|c| c.count).sum::<u64>(),
        report.stream_dispatches
    );
    assert_eq!(report.stream_dispatches, 12);
    assert!(
        report
            .commands
            .windows(2)
            .all(|w| w[0].total_ns >= w[1].total_ns),
        "slowest first"
    );
    for c in &report.commands {
        assert!(c.samples > 0 && c.median_ns > 0, "{c:?}");
        assert!(c.p10_ns <= c.median_ns && c.median_ns <= c.p90_ns);
    }
    let share: f64 = report.commands.iter().map(|c| c.share_percent).sum();
    assert!((share - 100.0).abs() < 1e-6);
}

#[test]
fn a_capture_with_data_replays_to_identical_outputs() {
    let Some(s) = setup(2) else { return };
    let dir = tempfile::tempdir().unwrap();
    record(&s, dir.path(), true, Some(1..3));
    let cap = read_capture(dir.path()).unwrap();
    let cmp = compare_outputs(&s.gpu, &cap, &[], None, &Default::default()).unwrap();
    assert_eq!(cmp.steps, vec![1, 2]);
    assert_eq!(
        cmp.outputs_compared,
        2 * 4,
        "two steps of four dispatches, one output each"
    );
    assert_eq!(cmp.outputs_mismatched, 0, "{:?}", cmp.first_mismatch);
}

#[test]
fn a_substituted_kernel_that_computes_something_else_is_caught_at_its_first_dispatch() {
    let Some(s) = setup(2) else { return };
    let dir = tempfile::tempdir().unwrap();
    record(&s, dir.path(), true, Some(1..3));
    let cap = read_capture(dir.path()).unwrap();
    let file = dir.path().join("acc_edited.wgsl");
    std::fs::write(
        &file,
        ACC_WGSL.replace("z[g.x] + y[g.x]", "z[g.x] + 2.0 * y[g.x]"),
    )
    .unwrap();
    let sub = Substitution::from_file("capture_test_acc", &file).unwrap();
    let cmp = compare_outputs(&s.gpu, &cap, &[sub], None, &Default::default()).unwrap();
    let m = cmp.first_mismatch.expect("the edited kernel is caught");
    assert_eq!(
        (m.step, m.dispatch, m.label.as_str(), m.binding),
        (1, 1, "P0.acc", 1)
    );
    assert_eq!(m.buffer_label, "z");
    assert!(cmp.substituted[0].starts_with("capture_test_acc="));
}

#[test]
fn a_substituted_kernel_with_other_bindings_is_refused_before_running() {
    let Some(s) = setup(1) else { return };
    let dir = tempfile::tempdir().unwrap();
    record(&s, dir.path(), true, Some(0..1));
    let cap = read_capture(dir.path()).unwrap();
    let file = dir.path().join("acc_bad.wgsl");
    std::fs::write(
        &file,
        ACC_WGSL.replace("var<storage, read> y", "var<storage, read_write> y"),
    )
    .unwrap();
    let before = s.gpu.counters();
    let sub = Substitution::from_file("capture_test_acc", &file).unwrap();
    let err = compare_outputs(&s.gpu, &cap, &[sub], None, &Default::default()).unwrap_err();
    assert!(matches!(err, ReplayError::Substitute { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("binding 0") && msg.contains("read_write") && msg.contains("nothing was run"),
        "{msg}"
    );
    let after = s.gpu.counters().since(&before);
    assert_eq!(
        (after.dispatches, after.resources_created()),
        (0, 0),
        "refused before creating or running anything"
    );
    // A missing entry point and an unknown shader are refused too.
    std::fs::write(&file, ACC_WGSL.replace("fn main", "fn main2")).unwrap();
    let msg = compare_outputs(
        &s.gpu,
        &cap,
        &[Substitution::from_file("capture_test_acc", &file).unwrap()],
        None,
        &Default::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(msg.contains("no compute entry point `main`"), "{msg}");
    let msg = compare_outputs(
        &s.gpu,
        &cap,
        &[Substitution::from_file("nope", &file).unwrap()],
        None,
        &Default::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        msg.contains("no shader `nope`") && msg.contains("capture_test_acc"),
        "{msg}"
    );
}

#[test]
fn inspect_flags_a_shader_built_with_many_constant_sets() {
    let Some(s) = setup(5) else { return };
    let dir = tempfile::tempdir().unwrap();
    record(&s, dir.path(), false, None);
    let cap = read_capture(dir.path()).unwrap();
    let i = inspect(&cap, 5);
    let scale = i
        .shaders
        .iter()
        .find(|x| x.name == "capture_test_scale")
        .unwrap();
    assert_eq!(scale.constant_sets, 5);
    assert!(scale.many_constant_sets);
    let acc = i
        .shaders
        .iter()
        .find(|x| x.name == "capture_test_acc")
        .unwrap();
    assert!(!acc.many_constant_sets);
    assert_eq!(i.dispatches, 30);
    assert_eq!(i.unique_commands, 6);
}
