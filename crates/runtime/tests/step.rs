//! The step runner: one submit, one sync, readback, timestamps, barriers.

use gpuscope_runtime::{Cost, Dispatch, Gpu, Graph, Section, ShaderSource, StepRunner};
use gpuscope_trace::TimingMode;

const INC: ShaderSource = ShaderSource {
    name: "inc",
    wgsl: "@group(0) @binding(0) var<storage, read> src: array<u32>; @group(0) @binding(1) var<storage, read_write> dst: array<u32>;
           @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) { if (g.x < 64u) { dst[g.x] = src[g.x] + 1u; } }",
};

fn own_gpu() -> Option<Gpu> {
    // Counters are per device: this test needs a device no other test dispatches on.
    gpuscope_runtime::testing::shared_gpu()?;
    Some(Gpu::new(&Default::default()).unwrap())
}

#[test]
fn a_chain_of_dispatches_runs_in_one_submit_with_one_readback() {
    let Some(gpu) = own_gpu() else { return };
    let bufs: Vec<_> = (0..4)
        .map(|i| gpu.create_buffer(&format!("b{i}"), 256).unwrap())
        .collect();
    let start: Vec<u32> = (0..64).map(|i| i * 10).collect();
    gpu.write_buffer(&bufs[0], 0, bytemuck::cast_slice(&start));
    let p = gpu.pipeline(&INC, "main", &[]).unwrap();
    // b0 -> b1 -> b2 -> b3: each dispatch reads what the one before wrote.
    let chain: Vec<Dispatch> = (0..3)
        .map(|i| {
            let bg = gpu.bind_group(&p, &[&bufs[i], &bufs[i + 1]]).unwrap();
            Dispatch::new(
                "inc",
                p.clone(),
                bg,
                [1, 1, 1],
                Cost {
                    bytes: 512,
                    flops: 64,
                },
                &[&bufs[i]],
                &[&bufs[i + 1]],
            )
            .labelled(format!("inc{i}"), None)
        })
        .collect();
    let graph = Graph {
        sections: vec![Section::new("chain", None, chain)],
    };
    assert_eq!(
        graph.barriers(),
        2,
        "dispatches 2 and 3 read what the previous wrote"
    );
    let mut runner = StepRunner::new(&gpu, &graph, &[&bufs[3]]).unwrap();
    for _ in 0..3 {
        let out = runner.step(&gpu, &graph, &[]).unwrap();
        let got: Vec<u32> = bytemuck::pod_collect_to_vec(&out.readbacks[0]);
        assert_eq!(got, start.iter().map(|v| v + 3).collect::<Vec<_>>());
        let c = out.counters;
        assert_eq!(
            (c.dispatches, c.passes, c.submits, c.syncs, c.barriers),
            (3, 1, 1, 1, 2)
        );
        assert_eq!(c.resources_created(), 0);
        assert_eq!(out.dispatches.len(), 3);
        if runner.timing() == TimingMode::Dispatch {
            let spans: Vec<_> = out
                .dispatches
                .iter()
                .map(|d| d.gpu.expect("valid span"))
                .collect();
            assert!(
                spans.windows(2).all(|w| w[0].end_ns <= w[1].start_ns),
                "{spans:?}"
            );
            assert!(out.gpu_busy_ns.is_some());
        }
        assert!(out.wall_ns >= out.cpu.wait_ns);
    }
}

#[test]
fn write_after_read_is_a_hazard_too() {
    let Some(gpu) = own_gpu() else { return };
    let a = gpu.create_buffer("a", 256).unwrap();
    let b = gpu.create_buffer("b", 256).unwrap();
    let c = gpu.create_buffer("c", 256).unwrap();
    let p = gpu.pipeline(&INC, "main", &[]).unwrap();
    let d1 = Dispatch::new(
        "inc",
        p.clone(),
        gpu.bind_group(&p, &[&a, &b]).unwrap(),
        [1, 1, 1],
        Cost::default(),
        &[&a],
        &[&b],
    );
    // Writes `a`, which d1 read: must wait for d1.
    let d2 = Dispatch::new(
        "inc",
        p.clone(),
        gpu.bind_group(&p, &[&c, &a]).unwrap(),
        [1, 1, 1],
        Cost::default(),
        &[&c],
        &[&a],
    );
    let independent = Dispatch::new(
        "inc",
        p.clone(),
        gpu.bind_group(&p, &[&c, &b]).unwrap(),
        [1, 1, 1],
        Cost::default(),
        &[&c],
        &[&b],
    );
    assert_eq!(
        Section::new("war", None, vec![d1.clone(), d2]).barriers(),
        1
    );
    // Two writers of `b` (write-after-write).
    assert_eq!(
        Section::new("waw", None, vec![d1, independent]).barriers(),
        1
    );
}

#[test]
fn readback_staging_buffers_come_from_the_pool() {
    let Some(gpu) = own_gpu() else { return };
    let b = gpu.create_buffer("b", 1024).unwrap();
    gpu.read_buffer(&b).unwrap();
    let created = gpu.counters().buffers_created;
    for _ in 0..3 {
        gpu.read_buffer(&b).unwrap();
    }
    assert_eq!(
        gpu.counters().buffers_created,
        created,
        "repeated readbacks reuse one staging buffer"
    );
    assert_eq!(gpu.pooled_staging_buffers(), 1);
    // A step runner rebuilt for another timing mode reuses its predecessor's staging.
    let p = gpu.pipeline(&INC, "main", &[]).unwrap();
    let c = gpu.create_buffer("c", 256).unwrap();
    let d = Dispatch::new(
        "inc",
        p.clone(),
        gpu.bind_group(&p, &[&b, &c]).unwrap(),
        [1, 1, 1],
        Cost::default(),
        &[&b],
        &[&c],
    );
    let graph = Graph {
        sections: vec![Section::new("s", None, vec![d])],
    };
    drop(StepRunner::with_timing(&gpu, &graph, &[&c], TimingMode::Off).unwrap());
    let before = gpu.counters().buffers_created;
    drop(StepRunner::with_timing(&gpu, &graph, &[&c], TimingMode::Off).unwrap());
    assert_eq!(gpu.counters().buffers_created, before);
}

#[test]
fn graph_desc_records_what_each_dispatch_reads_and_writes() {
    let Some(gpu) = gpuscope_runtime::testing::shared_gpu() else {
        return;
    };
    let a = gpu.create_buffer("a", 256).unwrap();
    let whole = gpu.create_buffer("pair", 512).unwrap();
    let hi = whole.view("pair.hi", 256, 256).unwrap();
    let p = gpu.pipeline(&INC, "main", &[]).unwrap();
    let first = Dispatch::new(
        "inc",
        p.clone(),
        gpu.bind_group(&p, &[&a, &hi]).unwrap(),
        [1, 1, 1],
        Cost::default(),
        &[&a],
        &[&hi],
    );
    let second = Dispatch::new(
        "inc",
        p.clone(),
        gpu.bind_group(&p, &[&hi, &a]).unwrap(),
        [1, 1, 1],
        Cost::default(),
        &[&hi],
        &[&a],
    );
    let graph = Graph {
        sections: vec![Section::new("s", None, vec![first, second])],
    };
    let d = gpuscope_runtime::graph_desc(&graph);
    let labels: Vec<(&str, u64)> = d
        .buffers
        .iter()
        .map(|b| (b.label.as_str(), b.bytes))
        .collect();
    // The view is named as first bound; its buffer's whole size is recorded.
    assert_eq!(labels, [("a", 256), ("pair.hi", 512)]);
    let at = |buffer, offset| gpuscope_trace::Binding {
        buffer,
        offset,
        bytes: 256,
    };
    assert_eq!(d.dispatches.len(), 2);
    assert_eq!(d.dispatches[0].reads, [at(0, 0)]);
    assert_eq!(d.dispatches[0].writes, [at(1, 256)]);
    assert_eq!(d.dispatches[1].reads, [at(1, 256)]);
    assert_eq!(d.dispatches[1].writes, [at(0, 0)]);
    assert!(d.dispatches[1].reads[0].overlaps(&d.dispatches[0].writes[0]));
}

/// A runner told to submit in chunks sends a step as whole sections in growing command
/// buffers (16 dispatches first, then at least 32: two submits for 40 one-dispatch
/// sections), with the same results, one sync and one readback.
#[test]
fn a_step_submitted_in_chunks_runs_the_same() {
    let Some(gpu) = own_gpu() else { return };
    let b = [
        gpu.create_buffer("ping", 256).unwrap(),
        gpu.create_buffer("pong", 256).unwrap(),
    ];
    let start: Vec<u32> = (0..64).map(|i| i * 7).collect();
    let p = gpu.pipeline(&INC, "main", &[]).unwrap();
    // Dispatch i reads one buffer and writes the other: 40 of them add 40, into `ping`.
    let sections: Vec<Section> = (0..40)
        .map(|i| {
            let (src, dst) = (&b[i % 2], &b[(i + 1) % 2]);
            let bg = gpu.bind_group(&p, &[src, dst]).unwrap();
            let d = Dispatch::new(
                "inc",
                p.clone(),
                bg,
                [1, 1, 1],
                Cost::default(),
                &[src],
                &[dst],
            );
            Section::new(format!("s{i}"), None, vec![d])
        })
        .collect();
    let graph = Graph { sections };
    for chunked in [false, true] {
        let mut runner = StepRunner::new(&gpu, &graph, &[&b[0]]).unwrap();
        if chunked {
            runner.submit_in_chunks(&graph);
        }
        let upload = [(&b[0], 0, bytemuck::cast_slice::<u32, u8>(&start))];
        let out = runner.step(&gpu, &graph, &upload).unwrap();
        let got: Vec<u32> = bytemuck::pod_collect_to_vec(&out.readbacks[0]);
        assert_eq!(
            got,
            start.iter().map(|v| v + 40).collect::<Vec<_>>(),
            "chunked {chunked}"
        );
        let c = out.counters;
        let submits = if chunked { 2 } else { 1 };
        let passes = if gpuscope_runtime::one_pass_per_step(runner.timing()) {
            submits
        } else {
            40
        };
        assert_eq!(
            (c.dispatches, c.passes, c.submits, c.syncs),
            (40, passes, submits, 1),
            "chunked {chunked}"
        );
    }
}
