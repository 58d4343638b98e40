//! The `ops test | perf` harness on lavapipe: the whole default table passes, the planted
//! kernel faults are named, perf measures.

use gpuscope_ops::harness::{cases, run_perf, run_test, CaseFilter, Fault, PerfOptions, ShapeSet};
use gpuscope_trace::compare::Thresholds;
use gpuscope_trace::opstest::{perf_csv, perf_table, test_csv};

use crate::common;

fn table(filter: &CaseFilter) -> Vec<gpuscope_ops::harness::Case> {
    cases(ShapeSet::Default, 128 << 20, filter)
}

#[test]
fn every_op_format_and_shape_of_the_default_table_matches_its_executor() {
    let Some(gpu) = common::gpu() else { return };
    let all = table(&CaseFilter::default());
    // Every weight format has gemv, batched gemv and embedding cases.
    for f in gpuscope_ops::WeightFormat::ALL {
        for op in ["gemv_", "gemv_batched_", "embedding_"] {
            assert!(
                all.iter()
                    .any(|c| c.format == Some(f) && c.op.starts_with(op)),
                "{op}{f}"
            );
        }
    }
    // The dp4a gemvs the decoder runs on GPUs, for every format it has a kernel for,
    // the split rows included; lavapipe (8-lane subgroups) runs them.
    for kernel in [
        "gemv_q4_0.dp4a.packed",
        "gemv_q4_1.dp4a.packed",
        "gemv_q8_0.dp4a.packed",
        "gemv_q5_0.dp4a",
        "gemv_q5_1.dp4a",
        "gemv_q4_k.dp4a",
        "gemv_q5_k.dp4a",
    ] {
        for shape in ["smollm2.ffn_down", "split.4096", "split.8192"] {
            assert!(
                all.iter().any(|c| c.op == kernel && c.shape == shape),
                "{kernel} {shape}"
            );
        }
    }
    let rows: Vec<_> = all
        .iter()
        .map(|c| run_test(gpu, c, &Thresholds::default(), None))
        .collect();
    let dp4a_ran = rows
        .iter()
        .filter(|r| r.op_name.contains(".dp4a") && r.supported)
        .count();
    if gpuscope_ops::gemv::GemvVariant::Dp4a.supported(gpu).is_ok() {
        assert_eq!(
            dp4a_ran, 33,
            "every dp4a case runs where the adapter has dp4a"
        );
    } else {
        assert!(!gpu.adapter_info().name.contains("llvmpipe") || std::env::var_os("CI").is_none());
    }
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| r.supported && !r.passed)
        .map(|r| {
            format!(
                "{} {} {}: {}",
                r.op_name, r.format, r.shape, r.error_message
            )
        })
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // A real comparison ran: some output differs from the executor in the last bits.
    assert!(rows
        .iter()
        .any(|r| r.error.as_ref().is_some_and(|e| e.nmse > 0.0)));
    assert!(rows.iter().all(|r| r.guard_words_changed == 0));
    let csv = test_csv(&rows);
    assert!(
        csv.starts_with("backend_name,op_name,format,shape,op_params,test_mode,supported,passed,")
    );
    assert_eq!(csv.lines().count(), rows.len() + 1);
}

#[test]
fn a_rope_with_the_wrong_theta_is_named() {
    let Some(gpu) = common::gpu() else { return };
    let filter = CaseFilter {
        ops: vec!["rope".into(), "rms_norm".into()],
        shapes: vec!["smollm2".into()],
        ..Default::default()
    };
    for c in table(&filter) {
        let r = run_test(gpu, &c, &Thresholds::default(), Some(Fault::RopeTheta));
        // Only the rope kernels are wrong, and every one of them is caught.
        assert_eq!(
            r.passed,
            !c.op.starts_with("rope"),
            "{}: {}",
            c.op,
            r.error_message
        );
        if !r.passed {
            assert!(r.error_message.contains("NMSE"), "{}", r.error_message);
        }
    }
}

#[test]
fn an_out_of_bounds_write_is_caught_by_the_guard_region() {
    let Some(gpu) = common::gpu() else { return };
    let filter = CaseFilter {
        ops: vec!["silu_mul".into()],
        shapes: vec!["odd.1000".into()],
        ..Default::default()
    };
    let c = &table(&filter)[0];
    assert!(run_test(gpu, c, &Thresholds::default(), None).passed);
    let r = run_test(gpu, c, &Thresholds::default(), Some(Fault::OobWrite));
    assert!(!r.passed);
    assert_eq!(r.guard_words_changed, 1);
    assert!(
        r.error_message.contains("out-of-bounds write in the slack")
            && r.error_message.contains("element 1000 (of 1000)"),
        "{}",
        r.error_message
    );
    // The values inside the output are still right: only the guard saw it.
    assert!(r.error.as_ref().unwrap().nmse < 1e-9);
}

#[test]
fn perf_times_a_case_with_gpu_timestamps() {
    let Some(shared) = common::gpu() else { return };
    // Timing kernels needs every run timed: where the shared device samples (`auto` on
    // NVIDIA), open one with dispatch timing (each of the 20 runs a sample, as on
    // lavapipe, whose `auto` is dispatch timing).
    let own;
    let gpu = if shared.timing_info().sampling.is_some() {
        own = gpuscope_runtime::Gpu::new(&gpuscope_runtime::GpuOptions {
            timing: gpuscope_runtime::TimingRequest::Exactly(gpuscope_trace::TimingMode::Dispatch),
            ..Default::default()
        })
        .unwrap();
        &own
    } else {
        shared
    };
    let filter = CaseFilter {
        ops: vec!["gemv_q8_0".into()],
        shapes: vec!["attn_q".into()],
        ..Default::default()
    };
    let c = &table(&filter)[0];
    let opts = PerfOptions {
        warmup: 1,
        steps: 2,
        ceiling_gb_s: Some(10.0),
        cold: true,
    };
    let r = run_perf(gpu, c, &opts).unwrap();
    assert_eq!(r.n_runs, 20);
    assert!(r.time_us > 0.0 && r.time_us_p10 <= r.time_us && r.time_us <= r.time_us_p90);
    assert!(r.bandwidth_gb_s > 0.0 && r.flops > 0.0);
    assert_eq!(r.pct_of_ceiling, Some(100.0 * r.bandwidth_gb_s / 10.0));
    assert_eq!(r.test_mode, "perf");
    assert!(perf_csv(std::slice::from_ref(&r)).contains(",time_us,"));
    assert!(perf_table(&[r]).starts_with("Caches: cold"));
    // Warm runs only on request, and labelled so.
    let warm = run_perf(
        gpu,
        c,
        &PerfOptions {
            cold: false,
            ..opts
        },
    )
    .unwrap();
    assert_eq!(
        (warm.n_runs, warm.test_mode.as_str()),
        (20, "perf (warm caches)")
    );
    let mut above = warm.clone();
    above.pct_of_ceiling = Some(114.2);
    let table = perf_table(&[above]);
    assert!(table.starts_with("Caches: WARM"), "{table}");
    assert!(
        table.contains("114.2*") && table.contains("* above the measured copy ceiling"),
        "{table}"
    );
}
