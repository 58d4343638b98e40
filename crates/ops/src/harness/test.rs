//! `ops test`: one case run on the GPU, compared with its CPU executor, guards checked.

use gpuscope_runtime::{Gpu, GpuError, Graph, Section};
use gpuscope_trace::compare::{tensor_error, word_error, TensorError, Thresholds};
use gpuscope_trace::opstest::OpTestResult;

use super::cases::{seed, Builder, Case};
use super::Fault;
use crate::exec::{executor, BindingData, Call, Kind, Output};

fn f32s(b: &[u8]) -> Vec<f32> {
    bytemuck::pod_collect_to_vec(b)
}

fn u32s(b: &[u8]) -> Vec<u32> {
    bytemuck::pod_collect_to_vec(b)
}

/// Runs `case` once and judges it with `thresholds` (local limits of its op).
pub fn run_test(
    gpu: &Gpu,
    case: &Case,
    thresholds: &Thresholds,
    fault: Option<Fault>,
) -> OpTestResult {
    let mut result = OpTestResult {
        backend_name: format!(
            "{} ({:?})",
            gpu.adapter_info().name,
            gpu.adapter_info().backend
        ),
        op_name: case.op.clone(),
        format: case.format.map_or("-".into(), |f| f.name().to_string()),
        shape: case.shape.clone(),
        op_params: case.op_params(),
        test_mode: "test".into(),
        supported: true,
        passed: false,
        error_message: String::new(),
        error: None,
        guard_words_changed: 0,
        used_by_plan: false,
    };
    if let Some(why) = case.unsupported(gpu) {
        result.supported = false;
        result.error_message = format!("not supported: {why}");
        return result;
    }
    if let Err(e) = judge(gpu, case, thresholds, fault, &mut result) {
        result.passed = false;
        result.error_message = e;
    }
    result
}

fn judge(
    gpu: &Gpu,
    case: &Case,
    thresholds: &Thresholds,
    fault: Option<Fault>,
    result: &mut OpTestResult,
) -> Result<(), String> {
    let gpu_err = |e: GpuError| e.to_string();
    let mut b = Builder::new(gpu, seed(case));
    let mut d = case.build(&mut b).map_err(gpu_err)?;
    // The executor of the kernel as built (before a planted fault swaps its source).
    let shader = d.pipeline.shader().to_string();
    let exec = executor(&shader).map_err(|e| e.to_string())?;
    if let Some(f) = fault {
        if let Some(faulty) = f.apply(gpu, &d).map_err(gpu_err)? {
            d = faulty;
        }
    }
    // Host copies of every binding before the run.
    let before: Vec<Vec<u8>> = d
        .bind_group
        .bindings()
        .iter()
        .map(|buf| gpu.read_buffer(buf))
        .collect::<Result<_, _>>()
        .map_err(gpu_err)?;
    gpu.run_once(&Graph {
        sections: vec![Section::new("ops test", None, vec![d.clone()])],
    })
    .map_err(gpu_err)?;
    let bindings: Vec<BindingData<f32>> = before
        .iter()
        .map(|bytes| BindingData { bytes, wide: None })
        .collect();
    let mut call = Call::new(&shader, d.pipeline.constants(), bindings);
    exec.run(&mut call).map_err(|e| e.to_string())?;
    let expected: Vec<(u32, Output<f32>)> = call.into_outputs();
    // A kernel that rounds its activations to int8 gets the int8 limits: two paths a
    // last bit apart may round an element of x to the neighbouring step. The prompt's
    // attention on tensor cores rounds q, k, v and its weights to f16 against an exact
    // oracle; it takes the same limits (its errors are far inside them).
    let coarse =
        crate::gemv::rounds_activations(&shader) || crate::attention::rounds_to_f16(&shader);
    let limits = thresholds.local_for_dispatch(&d.op, coarse);
    let mut problems = Vec::new();
    let mut worst: Option<TensorError> = None;
    for g in &b.outputs {
        let Some(binding) = d
            .bind_group
            .bindings()
            .iter()
            .position(|x| x.id() == g.view.id() && x.offset() == g.view.offset())
        else {
            continue;
        };
        let whole = gpu.read_buffer(&g.whole).map_err(gpu_err)?;
        let (changed, first) = g.changed(&whole);
        result.guard_words_changed += changed;
        if let Some(f) = first {
            problems.push(f);
        }
        let n = g.logical as usize;
        let found = &whole[g.before as usize..][..n];
        let initial = &before[binding][..n];
        let kind = exec.bindings.get(binding).copied().unwrap_or(Kind::F32);
        let written = expected
            .iter()
            .find(|(b, _)| *b as usize == binding)
            .map(|(_, o)| o);
        let e = match (kind, written) {
            (Kind::U32, Some(Output::Words(w))) => word_error(&u32s(found), &w[..n / 4]),
            (Kind::U32, _) => word_error(&u32s(found), &u32s(initial)),
            (_, Some(Output::Floats(v))) => {
                let v: Vec<f64> = v[..n / 4].iter().map(|&x| x as f64).collect();
                tensor_error(&f32s(found), &v)
            }
            (_, _) => {
                let v: Vec<f64> = f32s(initial).into_iter().map(f64::from).collect();
                tensor_error(&f32s(found), &v)
            }
        };
        if let Some(why) = limits.exceeded(&e) {
            let at = e.worst.first().map_or(String::new(), |w| {
                format!(" (worst at {}: {} vs {})", w.index, w.found, w.expected)
            });
            problems.push(format!("output \"{}\": {why}{at}", g.view.label()));
        }
        if worst
            .as_ref()
            .is_none_or(|w| e.nmse > w.nmse || e.nonfinite_mismatch > w.nonfinite_mismatch)
        {
            worst = Some(e);
        }
    }
    result.error = worst;
    result.passed = problems.is_empty();
    result.error_message = problems.join("; ");
    Ok(())
}
