//! A program instrumented through the recorder: exact counters, timestamps in every
//! mode, misuse reported as errors.

use gpuscope_record::{Recorder, RecorderOptions, TimingMode, TimingRequest};

use crate::common::{device, Program, ALL_TIMESTAMPS};

fn recorder(timing: TimingRequest) -> Option<(crate::common::Device, Recorder)> {
    let d = device(ALL_TIMESTAMPS)?;
    let rec = Recorder::new(
        &d.device,
        &d.queue,
        RecorderOptions {
            timing,
            ..Default::default()
        },
    )
    .ok()?;
    Some((d, rec))
}

#[test]
fn every_step_has_the_hand_counted_dispatches_passes_submits_syncs_and_barriers() {
    let Some((_d, rec)) = recorder(TimingRequest::Auto) else {
        return;
    };
    let p = Program::new(&rec);
    p.run(&rec, 4);
    let profile = rec.finish().unwrap();
    assert_eq!(profile.tokens.len(), 4);
    for t in &profile.tokens {
        let c = t.counters;
        assert_eq!(
            (c.dispatches, c.passes, c.submits, c.syncs),
            (3, 1, 1, 1),
            "{c:?}"
        );
        // add_one writes a; copy declares a read-write (barrier) and writes b; scale
        // reads b (barrier) and writes a (read-write after read-write).
        assert_eq!(c.barriers, 2, "{c:?}");
        assert_eq!(
            c.resources_created(),
            0,
            "steady state creates nothing: {c:?}"
        );
    }
    assert_eq!(profile.tokens[0].name.as_deref(), Some("step 0"));
    assert_eq!(profile.setup.pipelines_created, 3);
    assert_eq!(profile.setup.buffers_created, 3);
    assert_eq!(profile.setup.bind_groups_created, 4);
    assert_eq!(profile.setup.bytes_uploaded, 4 * 1024 + 4);
    assert_eq!(profile.dispatches.len(), 12);
    let d = &profile.dispatches[4];
    assert_eq!(
        (d.token, d.index, d.op.as_str(), d.label.as_str()),
        (1, 1, "copy", "b = a * k")
    );
    assert_eq!(d.pipeline, "chain:copy");
    assert_eq!(profile.dispatches[2].pipeline, "scale:main{FACTOR=0.5}");
    assert_eq!(d.workgroups, [16, 1, 1]);
    assert_eq!(profile.passes.len(), 4);
    assert_eq!(profile.passes[0].layer, Some(0));
    assert!(!profile.instrumentation.unwrap().is_partial());
    // CPU activity on one clock: each step's bracket, encode, submit and wait.
    for name in [
        "step",
        "encode",
        "submit",
        "wait",
        "create_buffer",
        "create_pipeline",
    ] {
        assert!(
            profile.cpu_spans.iter().any(|s| s.name == name),
            "no {name} span"
        );
    }
    assert!(profile.cpu_spans.iter().all(|s| s.end_ns >= s.start_ns));
    let steps: Vec<_> = profile
        .cpu_spans
        .iter()
        .filter(|s| s.name == "step")
        .collect();
    assert_eq!(steps.len(), 4);
    assert!(steps.windows(2).all(|w| w[0].end_ns <= w[1].start_ns));
    // Memory: the three program buffers with their sizes.
    let a = profile.buffers.iter().find(|b| b.label == "a").unwrap();
    assert_eq!(a.bytes, 4096);
    if profile.timing.mode == TimingMode::Dispatch && profile.timing.sampling.is_none() {
        assert!(profile
            .dispatches
            .iter()
            .all(|d| d.gpu.is_some() || d.timestamp_issue.is_some()));
        assert!(profile.tokens.iter().all(|t| t.gpu_busy_ns.is_some()));
        let with_spans = profile
            .dispatches
            .iter()
            .filter(|d| d.gpu.is_some())
            .count();
        assert!(with_spans >= 10, "{with_spans} of 12 dispatches timed");
    }
}

#[test]
fn the_program_computes_what_it_would_without_the_recorder() {
    let Some((_d, rec)) = recorder(TimingRequest::Auto) else {
        return;
    };
    let p = Program::new(&rec);
    p.run(&rec, 2);
    let staging = rec.create_buffer(&wgpu::BufferDescriptor {
        label: Some("readback"),
        size: 16,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = rec.device().create_command_encoder(&Default::default());
    rec.copy_buffer_to_buffer(&mut encoder, &p.a, 0, &staging, 0, 16);
    rec.submit([encoder.finish()]);
    staging.slice(..).map_async(wgpu::MapMode::Read, |_| {});
    rec.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let v: Vec<f32> = bytemuck::pod_collect_to_vec(&staging.slice(..).get_mapped_range().unwrap());
    // Each step: a = (a + 1) * 3 / 2.
    let expect = |x: f32| ((x + 1.0) * 1.5 + 1.0) * 1.5;
    assert_eq!(v, (0..4).map(|i| expect(i as f32)).collect::<Vec<_>>());
    let c = rec.counters();
    assert_eq!(c.bytes_downloaded, 16);
}

#[test]
fn pass_timing_times_passes_and_sampled_timing_times_each_dispatch_once_per_stride() {
    let Some((d, rec)) = recorder(TimingRequest::Exactly(TimingMode::Pass)) else {
        return;
    };
    let p = Program::new(&rec);
    p.run(&rec, 3);
    let profile = rec.finish().unwrap();
    assert_eq!(profile.timing.mode, TimingMode::Pass);
    assert!(
        profile.passes.iter().all(|p| p.gpu.is_some()),
        "{:?}",
        profile.passes
    );
    assert!(profile
        .dispatches
        .iter()
        .all(|d| d.gpu.is_none() && d.timestamp_issue.is_none()));

    let rec = Recorder::new(
        &d.device,
        &d.queue,
        RecorderOptions {
            timing: TimingRequest::Sampled { stride: 3 },
            ..Default::default()
        },
    )
    .unwrap();
    let p = Program::new(&rec);
    p.run(&rec, 6);
    let profile = rec.finish().unwrap();
    assert_eq!(profile.timing.sampling.as_ref().map(|s| s.stride), Some(3));
    for d in &profile.dispatches {
        let sampled = profile
            .timing
            .sampling
            .as_ref()
            .unwrap()
            .is_timed(d.token, d.index);
        assert_eq!(
            d.gpu.is_some() || d.timestamp_issue.is_some(),
            sampled,
            "{d:?}"
        );
    }
    // Over 6 steps each of the 3 dispatches is timed twice.
    for i in 0..3 {
        let n = profile
            .dispatches
            .iter()
            .filter(|d| d.index == i && d.gpu.is_some())
            .count();
        assert_eq!(n, 2, "dispatch {i}");
    }
}

#[test]
fn misuse_is_an_error_naming_it_not_a_panic_or_a_wrong_profile() {
    let Some((d, rec)) = recorder(TimingRequest::Auto) else {
        return;
    };
    let p = Program::new(&rec);
    // A dispatch outside any step.
    let mut encoder = d.device.create_command_encoder(&Default::default());
    p.encode(&rec, &mut encoder);
    rec.submit([encoder.finish()]);
    let err = rec.clone().finish().unwrap_err().to_string();
    assert!(err.contains("no step was open"), "{err}");

    // A step left open at finish.
    let rec = Recorder::new(&d.device, &d.queue, Default::default()).unwrap();
    rec.begin_step("open").unwrap();
    let err = rec.clone().finish().unwrap_err().to_string();
    assert!(err.contains("still open"), "{err}");
    assert!(rec
        .begin_step("nested")
        .unwrap_err()
        .to_string()
        .contains("do not nest"));

    // A bind group the recorder never saw (made with plain wgpu, as one from another
    // device would be).
    let rec = Recorder::new(&d.device, &d.queue, Default::default()).unwrap();
    let p = Program::new(&rec);
    let foreign = d.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &p.add_one.get_bind_group_layout(0),
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: p.a.as_entire_binding(),
        }],
    });
    rec.begin_step("s").unwrap();
    let mut encoder = d.device.create_command_encoder(&Default::default());
    {
        let mut pass = rec.begin_compute_pass(&mut encoder, &Default::default());
        pass.set_pipeline(&p.add_one);
        pass.set_bind_group(0, &foreign, &[]);
        pass.dispatch_workgroups(1, 1, 1);
    }
    rec.submit([encoder.finish()]);
    rec.end_step().unwrap();
    let err = rec.finish().unwrap_err().to_string();
    assert!(
        err.contains("bind group that was not created through this recorder"),
        "{err}"
    );

    // Timestamps asked of a device created without them.
    let plain = device(wgpu::Features::empty()).unwrap();
    let err = Recorder::new(
        &plain.device,
        &plain.queue,
        RecorderOptions {
            timing: TimingRequest::Exactly(TimingMode::Dispatch),
            ..Default::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("TIMESTAMP_QUERY") && err.contains("timing `off`"),
        "{err}"
    );
    // Auto on such a device says it is wall-clock only.
    let rec = Recorder::new(&plain.device, &plain.queue, Default::default()).unwrap();
    assert_eq!(rec.timing(), TimingMode::Off);
    let p = Program::new(&rec);
    p.run(&rec, 1);
    let profile = rec.finish().unwrap();
    assert!(
        profile.notes.iter().any(|n| n.contains("wall-clock")),
        "{:?}",
        profile.notes
    );
}

#[test]
fn passes_that_skip_the_wrapper_make_the_profile_partially_instrumented() {
    let Some((_d, rec)) = recorder(TimingRequest::Auto) else {
        return;
    };
    let p = Program::new(&rec);
    for i in 0..2 {
        rec.begin_step(&format!("step {i}")).unwrap();
        let mut encoder = rec.device().create_command_encoder(&Default::default());
        p.encode(&rec, &mut encoder);
        {
            let mut plain = rec.begin_plain_compute_pass(&mut encoder, &Default::default());
            plain.set_pipeline(&p.add_one);
            plain.set_bind_group(0, &p.bg_add, &[]);
            plain.dispatch_workgroups(1, 1, 1);
        }
        rec.submit([encoder.finish()]);
        // A command buffer with nothing instrumented in it.
        let mut other = rec.device().create_command_encoder(&Default::default());
        {
            let mut pass = other.begin_compute_pass(&Default::default());
            pass.set_pipeline(&p.add_one);
            pass.set_bind_group(0, &p.bg_add, &[]);
            pass.dispatch_workgroups(1, 1, 1);
        }
        rec.submit([other.finish()]);
        rec.poll(wgpu::PollType::wait_indefinitely()).unwrap();
        rec.end_step().unwrap();
    }
    let profile = rec.finish().unwrap();
    let inst = profile.instrumentation.unwrap();
    assert!(inst.is_partial());
    assert_eq!(inst.uninstrumented_passes, 2);
    assert_eq!(inst.uninstrumented_command_buffers, 2);
    assert_eq!(
        profile.tokens[0].counters.dispatches, 3,
        "only instrumented dispatches are seen"
    );
}

/// `reserve_timestamps` while another step's timestamps are still in flight: that step
/// keeps its slot and its readback (the slot list used to shrink under it, and a step
/// then unmapped a staging buffer it had not mapped).
#[test]
fn reserving_timestamps_leaves_a_step_in_flight_its_slot() {
    let Some((_d, rec)) = recorder(TimingRequest::Exactly(TimingMode::Dispatch)) else {
        return;
    };
    let p = Program::new(&rec);
    let step = |name: &str| {
        rec.begin_step(name).unwrap();
        let mut encoder = rec.device().create_command_encoder(&Default::default());
        p.encode(&rec, &mut encoder);
        rec.submit([encoder.finish()]);
        rec.end_step().unwrap()
    };
    // a's readback in flight on slot 0; b open with its timestamps on slot 1.
    let a = step("a");
    rec.begin_step("b").unwrap();
    let mut encoder = rec.device().create_command_encoder(&Default::default());
    p.encode(&rec, &mut encoder);
    // a's slot comes free, then the reserve: b must keep slot 1.
    assert!(rec.step_result(a).unwrap().gpu_busy_ns.is_some());
    rec.reserve_timestamps(4096);
    rec.submit([encoder.finish()]);
    let b = rec.end_step().unwrap();
    let rb = rec.step_result(b).unwrap();
    assert!(rb.gpu_busy_ns.is_some_and(|ns| ns > 0), "{rb:?}");
    // Later steps take slots of the new size and are timed too.
    let c = step("c");
    assert!(rec.step_result(c).unwrap().gpu_busy_ns.is_some());
}
