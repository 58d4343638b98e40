//! `gpuscope check` on lavapipe: every dispatch against the CPU executors (f32 and f64),
//! against the same GPU run serially, a planted fault found at its dispatch, tensor traces,
//! the breakpoint's capture replayed, and refusals that leave nothing behind.

use gpuscope_model::check::{check, Against, BreakAt, CheckOptions, Fault, Filter, Precision};
use gpuscope_model::{load_gguf, test_model, DecoderOptions, Preset};
use gpuscope_ops::WeightFormat;
use gpuscope_report::analysis::divergence::{verdict, DivergenceKind};
use gpuscope_trace::compare::{Thresholds, INT8_LOCAL};
use gpuscope_trace::tensors::TraceIndex;

use crate::common;

/// Context sizes of their own: the other tests of this binary share the GPU's pipeline
/// cache, and one of them expects its setup to build pipelines.
fn decoder_options() -> DecoderOptions {
    DecoderOptions {
        max_ctx: 10,
        read_logits: false,
    }
}

fn options(tokens: u32) -> CheckOptions {
    CheckOptions {
        max_ctx: tokens + 8,
        ..CheckOptions::new("test", vec![3], tokens)
    }
}

#[test]
fn every_dispatch_of_every_weight_format_matches_the_cpu_executors() {
    let Some(gpu) = common::gpu() else { return };
    for format in WeightFormat::ALL {
        let w = common::weights(Preset::Tiny, format);
        let per_step = gpuscope_model::GpuDecoder::new(gpu, &w, decoder_options())
            .map(|d| d.graph().dispatch_count())
            .unwrap_or(0);
        let run = check(gpu, &w, &options(2)).unwrap();
        let v = verdict(&run.report);
        assert!(v.passed(), "{format}: {:?}", v.first());
        assert_eq!(run.report.dispatches.len(), 2 * per_step, "{format}");
        assert_eq!(run.report.tokens.len(), 2);
        for d in &run.report.dispatches {
            assert!(!d.outputs.is_empty(), "{format}: {} has no output", d.label);
            for o in &d.outputs {
                let local = o.local.as_ref().expect("the CPU reference runs locally");
                // The kernels' own rounding, far below the limits: not a vacuous pass.
                assert!(local.nmse < 1e-9, "{format} {}: {local:?}", d.label);
            }
        }
    }
}

#[test]
fn f64_reference_and_serial_run_agree_with_the_gpu() {
    let Some(gpu) = common::gpu() else { return };
    let w = common::weights(Preset::Tiny, WeightFormat::Q4_K);
    let mut o = options(3);
    o.precision = Precision::F64;
    let run = check(gpu, &w, &o).unwrap();
    assert_eq!(run.report.precision, "f64");
    assert!(verdict(&run.report).passed());
    // f32 kernels against exact arithmetic: small but not zero.
    let worst = run
        .report
        .dispatches
        .iter()
        .flat_map(|d| &d.outputs)
        .filter_map(|o| o.local.as_ref())
        .map(|e| e.nmse)
        .fold(0.0, f64::max);
    assert!(worst > 0.0 && worst < 1e-9, "{worst}");

    let mut o = options(2);
    o.against = Against::Serial;
    let run = check(gpu, &w, &o).unwrap();
    assert!(run.report.reference.contains("serial"));
    assert!(verdict(&run.report).passed());
    // The same kernels on the same device: bit for bit.
    for d in &run.report.dispatches {
        for o in &d.outputs {
            assert_eq!(o.chained.mismatched, 0, "{}", d.label);
        }
    }
}

#[test]
fn a_planted_corruption_is_found_at_exactly_its_dispatch() {
    let Some(gpu) = common::gpu() else { return };
    let w = common::weights(Preset::Tiny, WeightFormat::Q8_0);
    let per_step = gpuscope_model::GpuDecoder::new(gpu, &w, decoder_options())
        .unwrap()
        .graph()
        .dispatch_count() as u64;
    // One in the middle of the second token, and the last dispatch (argmax, a u32).
    for seq in [per_step + per_step / 2, 2 * per_step - 1] {
        let mut o = options(2);
        o.fault = Some(Fault::CorruptOutput { seq });
        let run = check(gpu, &w, &o).unwrap();
        let v = verdict(&run.report);
        let first = v.first_local.as_ref().expect("the fault is found");
        assert_eq!(first.kind, DivergenceKind::Local);
        assert_eq!(run.report.dispatches[first.dispatch].seq, seq);
        assert!(run.report.notes[0].contains("planted fault"));
    }
}

#[test]
fn tensor_traces_write_npy_files_and_an_index_for_the_filtered_dispatches() {
    let Some(gpu) = common::gpu() else { return };
    let w = common::weights(Preset::Tiny, WeightFormat::F16);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("trace");
    let mut o = options(2);
    o.trace_dir = Some(dir.clone());
    // With every fusion (the default plan) a layer's plain gemvs are its two output
    // projections (attn_output, ffn_down), each adding into the residual stream.
    o.filter = Some(Filter::parse("op=gemv_f16,layer=1,token=1").unwrap());
    let run = check(gpu, &w, &o).unwrap();
    assert_eq!(run.trace_dir.as_deref(), Some(dir.as_path()));
    let index: TraceIndex =
        serde_json::from_slice(&std::fs::read(dir.join("index.json")).unwrap()).unwrap();
    // Layer 1 has two such gemvs, token 1 only.
    assert_eq!(index.entries.len(), 2);
    for e in &index.entries {
        assert_eq!((e.op.as_str(), e.layer, e.token), ("gemv_f16", Some(1), 1));
        let roles: Vec<&str> = e.tensors.iter().map(|t| t.role.as_str()).collect();
        assert!(roles.ends_with(&["output", "expected"]), "{roles:?}");
        assert!(
            roles[..roles.len() - 2].iter().all(|r| *r == "input"),
            "{roles:?}"
        );
        let out = e.tensors.iter().find(|t| t.role == "output").unwrap();
        let bytes = std::fs::read(dir.join(out.file.as_ref().unwrap())).unwrap();
        // A numpy 1.0 file of f32 whose length is the header's shape.
        assert_eq!(&bytes[..8], b"\x93NUMPY\x01\x00");
        let header_len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        let header = std::str::from_utf8(&bytes[10..10 + header_len]).unwrap();
        assert_eq!((10 + header_len) % 64, 0);
        assert!(header.contains("'descr': '<f4'"), "{header}");
        assert!(header.contains(&format!("'shape': ({},)", out.shape[0])));
        assert_eq!(bytes.len() - 10 - header_len, out.shape[0] * 4);
    }
    // Nothing else left beside it.
    let names: Vec<String> = std::fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["trace"]);
}

#[test]
fn a_breakpoint_writes_a_capture_that_replays_its_one_dispatch() {
    if common::gpu().is_none() {
        return;
    }
    // A device of its own: a capture records what its device's recorder sees, and the
    // other tests of this binary create and drop buffers on the shared device meanwhile.
    let own = gpuscope_runtime::Gpu::new(&Default::default()).expect("a second device");
    let gpu = &own;
    let w = common::weights(Preset::Tiny, WeightFormat::Q4_0);
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("brk");
    let mut o = options(3);
    o.trace_dir = Some(dir.clone());
    // L1.attn_qkv: the q/k/v gemv with rope and the KV-cache stores fused in.
    o.break_at = Some(BreakAt::parse("token=1,label=L1.attn_qkv").unwrap());
    let run = check(gpu, &w, &o).unwrap();
    let last = run.report.dispatches.last().unwrap();
    assert_eq!((last.token, last.label.as_str()), (1, "L1.attn_qkv"));
    assert_eq!(run.report.stopped_at, Some(last.seq));
    let capture = run.capture_dir.expect("a capture");
    let c = gpuscope_trace::capture::read_capture(&capture).unwrap();
    assert_eq!(c.stream.steps.len(), 1);
    let cmp = gpuscope_runtime::capture::compare_outputs(gpu, &c, &[], None, &Default::default())
        .unwrap();
    assert!(cmp.outputs_compared >= 3, "{cmp:?}");
    assert!(cmp.first_mismatch.is_none(), "{cmp:?}");
}

#[test]
fn bad_requests_are_refused_before_anything_is_written() {
    let Some(gpu) = common::gpu() else { return };
    let w = common::weights(Preset::Tiny, WeightFormat::Q8_0);
    let tmp = tempfile::tempdir().unwrap();
    let err = |o: CheckOptions| match check(gpu, &w, &o) {
        Ok(_) => panic!("accepted"),
        Err(e) => e.to_string(),
    };
    let mut o = options(2);
    o.trace_dir = Some(tmp.path().join("t"));
    o.filter = Some(Filter::parse("op=softmax").unwrap());
    assert!(err(o.clone()).contains("selects no dispatch"));
    o.filter = Some(Filter::parse("token=5").unwrap());
    assert!(err(o.clone()).contains("selects no dispatch"));
    o.filter = None;
    o.break_at = Some(BreakAt::Seq(10_000));
    assert!(err(o.clone()).contains("--break-at 10000"));
    o.break_at = Some(BreakAt::parse("token=0,label=L9.rope").unwrap());
    assert!(err(o.clone()).contains("no dispatch has that label"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    // A file where the directory should go, and a non-empty directory.
    let file = tmp.path().join("file");
    std::fs::write(&file, b"x").unwrap();
    o.break_at = None;
    o.trace_dir = Some(file.join("sub"));
    assert!(err(o.clone()).contains("cannot write the trace directory"));
    o.trace_dir = Some(tmp.path().to_path_buf());
    assert!(err(o.clone()).contains("not an empty directory"));
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 1);
    let mut o = options(1);
    o.against = Against::Gpu(gpuscope_runtime::GpuOptions {
        adapter: Some("no such adapter".into()),
        ..Default::default()
    });
    assert!(err(o).contains("no such adapter"));
}

#[test]
fn the_real_model_passes_against_the_cpu_in_f32_and_f64() {
    let Some(gpu) = common::gpu() else { return };
    let Some(path) = test_model::require_smollm2() else {
        return;
    };
    let model = load_gguf(&path).unwrap();
    for precision in [Precision::F32, Precision::F64] {
        let mut o = options(2);
        o.precision = precision;
        let run = check(gpu, &model.weights, &o).unwrap();
        let v = verdict(&run.report);
        assert!(v.passed(), "{precision:?}: {:?}", v.first());
        assert_eq!(run.report.dispatches.len() % 2, 0);
        // 30 layers of 5 dispatches (every fusion) and the head, per token.
        assert!(run.report.dispatches.len() > 300);
    }
}

#[test]
fn every_kernel_of_the_decode_and_prefill_graphs_has_a_cpu_executor() {
    let Some(gpu) = common::gpu() else { return };
    for format in WeightFormat::ALL {
        let w = common::weights(Preset::Tiny, format);
        let dec = gpuscope_model::GpuDecoder::new(gpu, &w, decoder_options()).unwrap();
        // The batched prefill graph is not built with the CPU-style gemv (`rows`, the
        // default on lavapipe): a decoder with a lanes-frame gemv over packed weights
        // (q4_0, q4_1, q8_0) covers it.
        let mut plan = gpuscope_model::KernelPlan::for_adapter(gpu);
        plan.gemv = gpuscope_ops::gemv::GemvVariant::Shared;
        plan.weights = gpuscope_ops::gemv::WeightLayout::Packed;
        let mut batched =
            gpuscope_model::GpuDecoder::with_plan(gpu, &w, decoder_options(), plan).unwrap();
        batched.enable_prefill(gpu, 4).unwrap();
        let prefill = batched.prefill_graph().unwrap();
        assert!(prefill.dispatch_count() > 0);
        for d in dec
            .graph()
            .dispatches()
            .chain(batched.graph().dispatches())
            .chain(prefill.dispatches())
        {
            let e = gpuscope_ops::exec::executor(d.pipeline.shader())
                .unwrap_or_else(|e| panic!("{format}: {}: {e}", d.label));
            assert_eq!(
                e.bindings.len(),
                d.bind_group.bindings().len(),
                "{}",
                d.label
            );
        }
    }
    let err = gpuscope_ops::exec::executor("fused_rms_norm_gemv").unwrap_err();
    assert!(err
        .to_string()
        .contains("no CPU executor for shader `fused_rms_norm_gemv`"));
}

#[test]
fn validate_runs_serially_and_reports_the_layer() {
    if common::gpu().is_none() {
        return;
    }
    let gpu = gpuscope_runtime::Gpu::new(&gpuscope_runtime::GpuOptions {
        validate: true,
        timing: gpuscope_runtime::TimingRequest::Exactly(gpuscope_trace::TimingMode::Off),
        ..Default::default()
    })
    .unwrap();
    let w = common::weights(Preset::Tiny, WeightFormat::Q8_0);
    let mut o = options(1);
    o.validate = true;
    let run = check(&gpu, &w, &o).unwrap();
    // Our dispatches give the layer nothing to say.
    assert!(run
        .report
        .dispatches
        .iter()
        .all(|d| d.validation.is_empty()));
    assert!(verdict(&run.report).passed());
    let expected = if gpuscope_runtime::validation::vulkan_layer_installed() {
        "Vulkan validation layer on"
    } else {
        "not installed"
    };
    assert!(
        run.report.notes.iter().any(|n| n.contains(expected)),
        "{:?}",
        run.report.notes
    );
}

#[test]
fn vulkan_is_compared_with_gl_dispatch_by_dispatch() {
    if common::gpu().is_none() {
        return;
    }
    let w = common::weights(Preset::Tiny, WeightFormat::Q4_1);
    let mut o = options(2);
    o.against = Against::Gpu(gpuscope_runtime::GpuOptions {
        backend: Some("gl".into()),
        timing: gpuscope_runtime::TimingRequest::Exactly(gpuscope_trace::TimingMode::Off),
        ..Default::default()
    });
    let subject = gpuscope_runtime::Gpu::new(&gpuscope_runtime::GpuOptions {
        backend: Some("vulkan".into()),
        timing: gpuscope_runtime::TimingRequest::Exactly(gpuscope_trace::TimingMode::Off),
        ..Default::default()
    })
    .unwrap();
    let run = match check(&subject, &w, &o) {
        Ok(r) => r,
        Err(e) if std::env::var_os("CI").is_none() => {
            eprintln!("SKIPPED (not in CI): no GL adapter: {e}");
            return;
        }
        Err(e) => panic!("{e}"),
    };
    assert!(
        run.report.reference.contains("(Gl)"),
        "{}",
        run.report.reference
    );
    assert!(
        verdict(&run.report).passed(),
        "{:?}",
        verdict(&run.report).first()
    );
    let outputs: Vec<_> = run
        .report
        .dispatches
        .iter()
        .flat_map(|d| &d.outputs)
        .collect();
    assert!(outputs.len() >= run.report.dispatches.len());
    // Local: GL's kernel on Vulkan's inputs, for every output.
    assert!(outputs.iter().all(|o| o.local.is_some()));
}

/// A matrix whose int8 x does not fit the device's workgroup memory (28672 columns: 36 KB,
/// lavapipe allows 32) runs the fallback variant, not a dp4a kernel that cannot be built.
#[test]
fn dp4a_too_wide_for_workgroup_memory_falls_back() {
    use gpuscope_ops::gemv::{Gemv, GemvVariant, WeightLayout};
    let Some(gpu) = common::gpu() else { return };
    let mut plan = gpuscope_model::KernelPlan::for_adapter(gpu);
    plan.set_kernel("gemv=dp4a").unwrap();
    let (f, l) = (WeightFormat::Q4_0, WeightLayout::Packed);
    for cols in [4096, 28672] {
        let m = Gemv {
            rows: 64,
            cols,
            format: f,
            out_offset: 0,
            layout: l,
        };
        let v = plan.gemv_for(gpu, f, l, 64, cols);
        assert_eq!(v == GemvVariant::Dp4a, m.dp4a_fits(gpu), "{cols}: {v:?}");
    }
    let limit = gpu.limits().max_compute_workgroup_storage_size;
    if limit < 36 * 1024 {
        assert_ne!(plan.gemv_for(gpu, f, l, 64, 28672), GemvVariant::Dp4a);
    }
}

/// The dp4a gemv (int8 activations) in the decoder: every dispatch against its executor,
/// which quantizes x the way the kernel does, in f32 and in f64; q4_0 / q4_1 / q8_0
/// (packed) and q5_0 / q5_1 / q4_K / q5_K (GGUF blocks) run dp4a (the K-quants unless
/// `dp4a_k=off`;
/// (the down projection, the one matrix 256 wide), f16 falls back to the float variant
/// (the settings say which).
#[test]
fn dp4a_decoder_matches_its_executors_for_every_format_it_runs() {
    use gpuscope_ops::gemv::GemvVariant;
    let Some(gpu) = common::gpu() else { return };
    if let Err(why) = GemvVariant::Dp4a.supported(gpu) {
        eprintln!("SKIPPED: {why}");
        return;
    }
    for format in [
        WeightFormat::Q4_0,
        WeightFormat::Q4_1,
        WeightFormat::Q8_0,
        WeightFormat::Q5_0,
        WeightFormat::Q5_1,
        WeightFormat::Q4_K,
        WeightFormat::Q5_K,
        WeightFormat::F16,
    ] {
        let w = common::weights(Preset::Tiny, format);
        let mut plan = gpuscope_model::KernelPlan::for_adapter(gpu);
        plan.set_kernel("gemv=dp4a").unwrap();
        // The `groups` attention, as discrete GPUs run it by default: it takes the output
        // projection (`attention+gemv`), whose heads' outputs are int8 too.
        plan.set_kernel("attention=groups").unwrap();
        let k_quant = matches!(format, WeightFormat::Q4_K | WeightFormat::Q5_K);
        if k_quant {
            // Taken by default; `dp4a_k=off` leaves them to the float variant.
            let mut off = plan;
            off.set_kernel("dp4a_k=off").unwrap();
            let opts = CheckOptions {
                plan: Some(off),
                ..options(1)
            };
            let run = check(gpu, &w, &opts).unwrap();
            let own = format!("gemv_{}.dp4a", format.name());
            assert!(!run
                .report
                .dispatches
                .iter()
                .any(|d| d.shader.contains(&own)));
        }
        // The GGUF-block formats' own code is the kernel's block load and dot product,
        // which the f64 check covers; the f32 one is the frame's, as q4_0's.
        let gguf_blocks = matches!(
            format,
            WeightFormat::Q5_0 | WeightFormat::Q5_1 | WeightFormat::Q4_K | WeightFormat::Q5_K
        );
        let precisions: &[Precision] = if gguf_blocks {
            &[Precision::F64]
        } else {
            &[Precision::F32, Precision::F64]
        };
        for &precision in precisions {
            let opts = CheckOptions {
                plan: Some(plan),
                precision,
                ..options(3)
            };
            let run = check(gpu, &w, &opts).unwrap();
            let v = verdict(&run.report);
            assert!(v.passed(), "{format} {precision:?}: {:?}", v.first());
            let dp4a = run
                .report
                .dispatches
                .iter()
                .filter(|d| d.shader.contains(".dp4a"))
                .count();
            let widened = run.report.notes.iter().any(|n| n.contains("int8"));
            if format == WeightFormat::F16 {
                assert_eq!(dp4a, 0, "f16 has no dp4a kernel");
                assert_eq!(run.report.thresholds, Thresholds::default());
                assert!(!widened);
            } else {
                assert!(dp4a > 0, "{format}: no dp4a dispatch checked");
                let own = format!("gemv_{}.dp4a", format.name());
                assert!(
                    run.report
                        .dispatches
                        .iter()
                        .any(|d| d.shader.contains(&own)),
                    "{format}: no {own} dispatch"
                );
                // Int8 activations: local limits for their rounding, said in a note, for
                // exactly the dp4a dispatches; chained, the default limits, since the CPU
                // reference follows the GPU's rounding to neighbouring steps.
                assert_eq!(run.report.thresholds.chained, Thresholds::default().chained);
                assert_eq!(run.report.thresholds.int8_local, Some(INT8_LOCAL));
                assert!(widened, "{:?}", run.report.notes);
                // The dp4a gemvs, and attention with the output projection (on adapters
                // that run the `groups` attention), which quantizes each head's output
                // to int8 as the dp4a gemv does its input.
                for d in &run.report.dispatches {
                    assert_eq!(
                        d.int8_activations,
                        d.shader.contains(".dp4a")
                            || d.shader
                                .starts_with(gpuscope_ops::attention::AttnOutput::OP),
                        "{}",
                        d.shader
                    );
                }
            }
        }
        if format == WeightFormat::Q4_0 {
            // Chained limits given with --threshold are kept.
            let mut thresholds = Thresholds::default();
            thresholds.set("chained.nmse=5e-3").unwrap();
            let opts = CheckOptions {
                plan: Some(plan),
                thresholds,
                ..options(2)
            };
            let run = check(gpu, &w, &opts).unwrap();
            let chained = run.report.thresholds.chained;
            assert_eq!(chained.nmse, 5e-3);
            assert_eq!(chained.max_err, Thresholds::default().chained.max_err);
        }
    }
}

/// Split-K attention in the decoder: its split pass (partials per head and chunk) and its
/// merge each against their executors, in f32 and in f64, at a context of several
/// chunks (80 positions: 32-position chunks, 3 splits, the last partly filled).
#[test]
fn split_attention_decoder_matches_its_executors() {
    let Some(gpu) = common::gpu() else { return };
    let w = common::weights(Preset::Tiny, WeightFormat::Q8_0);
    let mut plan = gpuscope_model::KernelPlan::for_adapter(gpu);
    plan.set_kernel("attention=split").unwrap();
    for precision in [Precision::F32, Precision::F64] {
        let opts = CheckOptions {
            plan: Some(plan),
            precision,
            max_ctx: 80,
            prompt: (1..70).collect(),
            ..options(4)
        };
        let run = check(gpu, &w, &opts).unwrap();
        let v = verdict(&run.report);
        assert!(v.passed(), "{precision:?}: {:?}", v.first());
        let combines = run
            .report
            .dispatches
            .iter()
            .filter(|d| d.shader == "attention_combine")
            .count();
        assert!(combines > 0, "no attention_combine dispatch checked");
    }
}

/// Split-K attention's partials cover every layer: a windowed layer's op (its ring's 512
/// rows) splits 8 ways where the whole context (516) splits 5. Gemma 3 270M under a
/// 512-token prompt and 4 tokens was refused on an H100 ("scratch buffer
/// \"attn_partials\" has 20640 bytes, needs 33024"). Here the split decoder builds and
/// its logits follow the adapter's default decoder's over the same tokens.
#[test]
fn split_attention_sizes_its_partials_for_the_windowed_layers() {
    use gpuscope_model::{GpuDecoder, KernelPlan};
    let Some(gpu) = common::gpu() else { return };
    let mut w = common::weights(Preset::TinyGemma3, WeightFormat::Q8_0);
    w.config.arch.sliding_window = 512;
    assert!(w.config.arch.is_swa(0));
    let options = || DecoderOptions {
        max_ctx: 516,
        read_logits: true,
    };
    let mut split = KernelPlan::for_adapter(gpu);
    split.set_kernel("attention=split").unwrap();
    let mut a = GpuDecoder::with_plan(gpu, &w, options(), split).unwrap();
    let mut b = GpuDecoder::with_plan(gpu, &w, options(), KernelPlan::for_adapter(gpu)).unwrap();
    for token in [1, 5, 9] {
        let (la, lb) = (
            a.step(gpu, Some(token)).unwrap().logits.unwrap(),
            b.step(gpu, Some(token)).unwrap().logits.unwrap(),
        );
        let scale = lb.iter().fold(0f32, |m, v| m.max(v.abs()));
        let worst = la
            .iter()
            .zip(&lb)
            .fold(0f32, |m, (x, y)| m.max((x - y).abs()));
        assert!(worst <= 1e-3 * scale, "token {token}: {worst} of {scale}");
    }
}

/// `--break-at` and `--filter` take the labels of the unfused graph: every dispatch of
/// each architecture's `--fuse none` graph is found in its default graph, as itself or as
/// the fused dispatch that does its work.
#[test]
fn every_unfused_label_names_a_dispatch_of_the_fused_graph() {
    use gpuscope_model::check::select::{find_label, FOLDED_POST_OP};
    use gpuscope_model::{Fusions, GpuDecoder, KernelPlan};
    use gpuscope_ops::gemv::GemvVariant;
    let Some(gpu) = common::gpu() else { return };
    let opts = DecoderOptions {
        max_ctx: 8,
        read_logits: false,
    };
    // The default plan, and every gemv in the dp4a frame with the `groups` attention
    // (where Gemma 3's post norms fold into the next gemv, of the next layer for the
    // post-FFN norm, and attention takes the output projection: `attention_output`, the
    // default on discrete GPUs, which lavapipe runs only when asked).
    let dp4a = |plan: KernelPlan| KernelPlan {
        gemv: GemvVariant::Dp4a,
        gemv_large: Some(GemvVariant::Dp4a),
        attention: Some(gpuscope_ops::attention::AttnVariant::Groups),
        ..plan
    };
    let mut folded = 0;
    let mut attention_output = 0;
    for preset in Preset::ALL.iter().filter(|p| p.name().starts_with("tiny")) {
        let w = common::weights(*preset, WeightFormat::Q8_0);
        for int8 in [false, true] {
            let mut plan = KernelPlan::for_adapter(gpu);
            if int8 {
                plan = dp4a(plan);
            }
            let fused = GpuDecoder::with_plan(gpu, &w, opts.clone(), plan).unwrap();
            plan.fusions = Fusions::none();
            let unfused = GpuDecoder::with_plan(gpu, &w, opts.clone(), plan).unwrap();
            let graph: Vec<_> = fused.graph().dispatches().cloned().collect();
            assert!(
                graph.len() < unfused.graph().dispatches().count(),
                "{preset:?}"
            );
            for d in unfused.graph().dispatches() {
                let (i, host) = find_label(&graph, &d.label)
                    .unwrap_or_else(|| panic!("{preset:?}: {} is in no fused dispatch", d.label));
                // The host is of the same layer (the next one for a post-FFN norm folded
                // into the q/k/v gemv), and named only when it is another dispatch.
                let folded_on = graph[i].op.starts_with(FOLDED_POST_OP)
                    && (d.label.ends_with(".post_ffw_norm") || d.label.ends_with(".ffn_down_add"));
                let layer = d.layer.map(|l| l + u32::from(folded_on));
                assert_eq!(graph[i].layer, layer, "{preset:?} {}", d.label);
                assert_eq!(host.is_some(), graph[i].label != d.label);
                folded += usize::from(graph[i].op.starts_with(FOLDED_POST_OP));
                attention_output += usize::from(graph[i].label.ends_with(".attention_output"));
            }
        }
    }
    assert!(folded > 0, "no post norm folded into a gemv in any graph");
    assert!(
        attention_output > 0,
        "no attention with the output projection in any graph"
    );
}
