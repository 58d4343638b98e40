//! The check loop (see the module docs of [`super`]).

use std::collections::{HashMap, HashSet};
use std::path::Path;

use gpuscope_ops::exec::{executor, Call, Executor, Kind, Output};
use gpuscope_ops::Real;
use gpuscope_runtime::capture::{CaptureRecorder, StepRecord};
use gpuscope_runtime::{BufferId, Dispatch, Gpu, GpuBuffer, GpuError, StepRunner};
use gpuscope_trace::check::{CheckReport, DispatchCheck, OutputCheck, CHECK_FORMAT};
use gpuscope_trace::compare::{tensor_error, word_error, TensorError};
use gpuscope_trace::tensors::{TraceEntry, TraceIndex, TraceTensor, TRACE_FORMAT};
use gpuscope_trace::WorkloadDesc;

use super::host::{Initial, Store};
use super::path::{sub_graph, GpuPath, StepBytes};
use super::trace::{safe, TraceWriter};
use super::{Against, CheckError, CheckOptions, CheckRun, Fault, Precision};
use crate::decoder::{DecoderOptions, GpuDecoder};
use crate::weights::ModelWeights;

/// A reference result for one binding.
enum Expected {
    Floats(Vec<f64>),
    Words(Vec<u32>),
}

fn kind_of(exec: Option<&Executor>, b: u32) -> Kind {
    exec.and_then(|e| e.bindings.get(b as usize).copied())
        .unwrap_or(Kind::F32)
}

fn words_of(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks_exact(4)
        .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
        .collect()
}

fn f32s_of(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|w| f32::from_le_bytes(w.try_into().unwrap()))
        .collect()
}

fn expected_from_bytes(kind: Kind, bytes: &[u8]) -> Expected {
    match kind {
        Kind::U32 => Expected::Words(words_of(bytes)),
        _ => Expected::Floats(f32s_of(bytes).into_iter().map(f64::from).collect()),
    }
}

fn expected_from_output<T: Real>(out: &Output<T>) -> Expected {
    match out {
        Output::Floats(v) => Expected::Floats(v.iter().map(|x| x.as_f64()).collect()),
        Output::Words(w) => Expected::Words(w.clone()),
    }
}

/// The expected value of binding `b` from a store: what the executor wrote, else the
/// binding's current contents (a kernel that should leave it alone).
fn expected_from_store<T: Real>(
    store: &Store<T>,
    buf: &GpuBuffer,
    kind: Kind,
    written: Option<&Output<T>>,
) -> Expected {
    if let Some(o) = written {
        return expected_from_output(o);
    }
    match kind {
        Kind::U32 => Expected::Words(words_of(store.bytes(buf))),
        _ => {
            let d = store.binding(buf);
            Expected::Floats(match d.wide {
                Some(w) => w.iter().map(|x| x.as_f64()).collect(),
                None => f32s_of(d.bytes).into_iter().map(f64::from).collect(),
            })
        }
    }
}

fn compare(kind: Kind, found: &[u8], expected: &Expected) -> TensorError {
    match (kind, expected) {
        (Kind::U32, Expected::Words(w)) => word_error(&words_of(found), w),
        (_, Expected::Floats(f)) => tensor_error(&f32s_of(found), f),
        (_, Expected::Words(w)) => word_error(&words_of(found), w),
    }
}

/// Runs dispatch `d`'s executor on the bindings held by `store`; with `subject`, the
/// tested GPU's state, whose int8 rounding of activations the executor follows where the
/// two round to neighbouring steps (docs/check.md).
fn execute<T: Real>(
    exec: &Executor,
    d: &Dispatch,
    store: &Store<T>,
    subject: Option<&Store<T>>,
) -> Result<HashMap<u32, Output<T>>, CheckError> {
    let bindings = d.bind_group.bindings();
    let own = bindings.iter().map(|b| store.binding(b)).collect();
    let mut call = Call::new(d.pipeline.shader(), d.pipeline.constants(), own);
    if let Some(gpu) = subject {
        call = call.following(bindings.iter().map(|b| gpu.bytes(b)).collect());
    }
    exec.run(&mut call)?;
    Ok(call.into_outputs().into_iter().collect())
}

/// Buffers a graph's dispatches write (read-write bindings), plus the uploaded ones.
fn mutable_ids(path: &GpuPath, uploaded: &[&GpuBuffer]) -> HashSet<BufferId> {
    let mut ids: HashSet<BufferId> = uploaded.iter().map(|b| b.id()).collect();
    for (d, w) in path.dispatches.iter().zip(&path.written) {
        for &b in w {
            if let Some(buf) = d.bind_group.bindings().get(b as usize) {
                ids.insert(buf.id());
            }
        }
    }
    ids
}

fn step_uploads(dec: &GpuDecoder, pos: u32, token: u32) -> Vec<(GpuBuffer, u64, Vec<u8>)> {
    let step: [u32; 4] = [pos, pos + 1, 0, 0];
    vec![
        (
            dec.acts.step.clone(),
            0,
            bytemuck::cast_slice(&step).to_vec(),
        ),
        (dec.acts.token.clone(), 0, token.to_le_bytes().to_vec()),
    ]
}

/// A GPU reference: a second decoder (on another device, or the same one run serially)
/// and its path.
struct GpuReference<'g> {
    path: GpuPath<'g>,
    decoder: GpuDecoder,
    /// The buffers its graph writes or the steps upload.
    mutable: HashSet<BufferId>,
}

/// The reference path's state.
enum Reference<'s, 'g, T> {
    Cpu {
        store: Store<'s, T>,
    },
    Gpu {
        other: Box<GpuReference<'g>>,
        /// The reference's buffers as they should be after its own run.
        mirror: Store<'s, f32>,
    },
}

/// Runs the check (see [`super`]).
pub fn check(
    gpu: &Gpu,
    weights: &ModelWeights,
    opts: &CheckOptions,
) -> Result<CheckRun, CheckError> {
    match opts.precision {
        Precision::F32 => check_in::<f32>(gpu, weights, opts),
        Precision::F64 => check_in::<f64>(gpu, weights, opts),
    }
}

fn check_in<T: Real>(
    gpu: &Gpu,
    weights: &ModelWeights,
    opts: &CheckOptions,
) -> Result<CheckRun, CheckError> {
    let first = check_options(weights, opts)?;
    let dec_opts = DecoderOptions {
        max_ctx: opts.max_ctx,
        read_logits: false,
    };
    let dec = match &opts.plan {
        Some(plan) => GpuDecoder::with_plan(gpu, weights, dec_opts.clone(), *plan)?,
        None => GpuDecoder::new(gpu, weights, dec_opts.clone())?,
    };
    let subject = GpuPath::new(gpu, dec.graph(), opts.serial || opts.validate)?;
    let selection = refuse_before_run(opts, &subject)?;
    let break_seq = selection.break_seq;
    // The filter's labels as this graph names them (a fused dispatch for an unfused label).
    let opts = &CheckOptions {
        filter: selection.filter,
        ..opts.clone()
    };
    let subject_name = describe(gpu);
    let reference_name = match &opts.against {
        Against::Cpu => "cpu".to_string(),
        Against::Serial => format!("{subject_name} serial (a submit and a wait per dispatch)"),
        Against::Gpu(_) => String::new(),
    };
    let mut tracer = match &opts.trace_dir {
        Some(dir) => Some(TraceWriter::create(
            dir,
            TraceIndex {
                format: TRACE_FORMAT,
                model: opts.model.clone(),
                subject: subject_name.clone(),
                reference: reference_name.clone(),
                precision: T::NAME.into(),
                entries: Vec::new(),
                capture: None,
            },
        )?),
        None => None,
    };

    // The reference.
    let other_gpu;
    let ref_gpu: Option<&Gpu> = match &opts.against {
        Against::Cpu => None,
        Against::Serial => Some(gpu),
        Against::Gpu(o) => {
            other_gpu = Gpu::new(o)?;
            Some(&other_gpu)
        }
    };
    let subject_mutable = mutable_ids(&subject, &[&dec.acts.step, &dec.acts.token]);
    let init = Initial::read(gpu, dec.graph(), &subject_mutable)?;
    let other = match ref_gpu {
        None => None,
        Some(g) => Some(GpuReference::build(
            g,
            weights,
            dec_opts,
            &dec,
            &subject,
            matches!(opts.against, Against::Serial),
        )?),
    };
    let ref_init = match &other {
        Some(r) => Some(Initial::read(r.path.gpu, r.decoder.graph(), &r.mutable)?),
        None => None,
    };
    let reference: Reference<T> = match (other, &ref_init) {
        (Some(other), Some(ref_init)) => Reference::Gpu {
            other: Box::new(other),
            mirror: Store::new(ref_init),
        },
        _ => Reference::Cpu {
            store: Store::new(&init),
        },
    };
    let reference_name = match &reference {
        Reference::Gpu { other, .. } if !matches!(opts.against, Against::Serial) => {
            describe(other.path.gpu)
        }
        _ => reference_name,
    };
    if let Some(t) = &mut tracer {
        t.index.reference = reference_name.clone();
    }
    let mut report = new_report::<T>(opts, &subject, subject_name, reference_name, ref_gpu);
    report.notes.extend(selection.notes);
    let mut run = Run {
        gpu,
        opts,
        dec: &dec,
        subject: &subject,
        subject_mutable,
        per_step: subject.dispatches.len(),
        break_seq,
        reference,
        mirror: Store::new(&init),
        tracer,
        report,
        capture_written: false,
    };
    let mut token_in = first;
    for t in 0..opts.tokens {
        match run.token(t, token_in)? {
            Some(next) => token_in = next,
            None => break,
        }
    }
    run.finish()
}

/// Refuses options that cannot run on the model; returns the first token.
fn check_options(weights: &ModelWeights, opts: &CheckOptions) -> Result<u32, CheckError> {
    let c = &weights.config;
    let invalid = |m: String| CheckError::Invalid(m);
    if opts.tokens == 0 {
        return Err(invalid("--tokens must be at least 1".into()));
    }
    if opts.tokens > opts.max_ctx {
        return Err(invalid(format!(
            "--tokens {} is more than the KV cache holds ({})",
            opts.tokens, opts.max_ctx
        )));
    }
    let Some(&first) = opts.prompt.first() else {
        return Err(invalid("no token to start from".into()));
    };
    if let Some(&t) = opts.prompt.iter().find(|&&t| t >= c.vocab) {
        return Err(invalid(format!(
            "token {t} is outside the vocabulary ({})",
            c.vocab
        )));
    }
    if matches!(opts.against, Against::Gpu(_) | Against::Serial) && opts.precision == Precision::F64
    {
        return Err(invalid(
            "--precision f64 applies to the CPU reference; a GPU reference computes in f32".into(),
        ));
    }
    Ok(first)
}

/// The breakpoint and filter as the tested graph names its dispatches.
struct Selection {
    break_seq: Option<u64>,
    /// The filter with unfused labels replaced by the fused dispatches' labels.
    filter: Option<super::select::Filter>,
    /// What was resolved to a fused dispatch.
    notes: Vec<String>,
}

/// Everything that can be refused about the tested graph is refused before the run: a
/// breakpoint or a label that names no dispatch, a breakpoint without a trace
/// directory, a filter that selects nothing, a fault past the end, a dispatch the CPU
/// reference has no executor for.
fn refuse_before_run(opts: &CheckOptions, subject: &GpuPath) -> Result<Selection, CheckError> {
    let invalid = |m: String| CheckError::Invalid(m);
    let per_step = subject.dispatches.len();
    let mut notes = Vec::new();
    let break_seq = match &opts.break_at {
        Some(b) => {
            let (seq, note) = b
                .resolve(&subject.dispatches, opts.tokens)
                .map_err(invalid)?;
            notes.extend(note);
            Some(seq)
        }
        None => None,
    };
    let filter = match &opts.filter {
        Some(f) => {
            let (f, fused) = f.for_graph(&subject.dispatches).map_err(invalid)?;
            notes.extend(fused);
            Some(f)
        }
        None => None,
    };
    if break_seq.is_some() && opts.trace_dir.is_none() {
        return Err(invalid(
            "--break-at writes the dispatch's tensors and capture: give --trace-tensors DIR".into(),
        ));
    }
    if let Some(f) = &filter {
        if !subject.dispatches.iter().any(|d| f.matches_dispatch(d))
            || !(0..opts.tokens).any(|t| f.matches_token(t))
        {
            return Err(invalid(format!(
                "--filter selects no dispatch of the {} tokens checked (ops here: {})",
                opts.tokens,
                unique_ops(&subject.dispatches)
            )));
        }
    }
    if let Some(Fault::CorruptOutput { seq }) = opts.fault {
        if seq >= per_step as u64 * opts.tokens as u64 {
            return Err(invalid(format!(
                "fault at dispatch {seq}: past the end of the run"
            )));
        }
    }
    if matches!(opts.against, Against::Cpu) {
        for d in &subject.dispatches {
            executor(d.pipeline.shader())?;
        }
    }
    Ok(Selection {
        break_seq,
        filter,
        notes,
    })
}

impl<'g> GpuReference<'g> {
    /// A second decoder on `g` with the subject's kernel plan where `g` can run it (plans
    /// are chosen per adapter), refused unless its graph has the subject's dispatches.
    /// `serial`: a submit and a wait after every dispatch.
    fn build(
        g: &'g Gpu,
        weights: &ModelWeights,
        dec_opts: DecoderOptions,
        subject_decoder: &GpuDecoder,
        subject: &GpuPath,
        serial: bool,
    ) -> Result<GpuReference<'g>, CheckError> {
        let plan = match subject_decoder.plan().check(g) {
            Ok(()) => *subject_decoder.plan(),
            Err(_) => crate::plan::KernelPlan::for_adapter(g),
        };
        let decoder = GpuDecoder::with_plan(g, weights, dec_opts, plan)?;
        let path = GpuPath::new(g, decoder.graph(), serial)?;
        let per_step = subject.dispatches.len();
        if path.dispatches.len() != per_step
            || path
                .dispatches
                .iter()
                .zip(&subject.dispatches)
                // Same ops on the same buffers; the kernel variant may differ per
                // adapter (a backend without subgroups composes another gemv).
                .any(|(a, b)| a.label != b.label)
        {
            return Err(CheckError::Invalid(format!(
                "the reference device builds a different graph ({} dispatches, the tested one {per_step}); they cannot be compared dispatch by dispatch",
                path.dispatches.len()
            )));
        }
        let mutable = mutable_ids(&path, &[&decoder.acts.step, &decoder.acts.token]);
        Ok(GpuReference {
            path,
            decoder,
            mutable,
        })
    }
}

/// The report before any token: who is compared with whom, the limits, and notes on
/// int8 activations and validation.
fn new_report<T: Real>(
    opts: &CheckOptions,
    subject: &GpuPath,
    subject_name: String,
    reference_name: String,
    ref_gpu: Option<&Gpu>,
) -> CheckReport {
    let mut report = CheckReport {
        format: CHECK_FORMAT,
        tool: format!("gpuscope {}", env!("CARGO_PKG_VERSION")),
        subject: subject_name,
        reference: reference_name,
        precision: match ref_gpu {
            None => T::NAME.into(),
            Some(_) => "f32".into(),
        },
        model: opts.model.clone(),
        tokens: Vec::new(),
        thresholds: opts.thresholds.clone(),
        dispatches: Vec::new(),
        stopped_at: None,
        notes: Vec::new(),
    };
    // Int8 activations: local limits for their rounding; chained limits to match where
    // the reference rounds on its own (a second GPU). The CPU reference follows the GPU's
    // rounding (`XRounding::Int8Following`; see `Thresholds::for_int8_activations`).
    let int8 = subject
        .dispatches
        .iter()
        .filter(|d| gpuscope_ops::gemv::rounds_activations(d.pipeline.shader()))
        .count();
    if int8 > 0 {
        report.thresholds.for_int8_activations(ref_gpu.is_some());
        let l = report.thresholds.int8_local.expect("just set");
        let chained = match ref_gpu {
            None => "the reference follows the GPU's rounding to a neighbouring int8 step (chained"
                .to_string(),
            Some(_) => "the second GPU rounds on its own (chained".to_string(),
        };
        report.notes.push(format!(
            "{int8} dispatch(es) a token round activations to int8 (dp4a gemvs): their local limits NMSE {:.0e}, max err {:.0e}·rms; {chained} NMSE {:.0e}, max err {}·rms); `--kernel gemv_large=none` checks the float path (docs/check.md)",
            l.nmse, l.max_err, report.thresholds.chained.nmse, report.thresholds.chained.max_err
        ));
    }
    if opts.validate {
        report.notes.push(if !gpuscope_runtime::validation::installed() {
            "--validate: another logger is set, validation-layer messages go there (only wgpu's own validation errors are attributed)".into()
        } else if gpuscope_runtime::validation::vulkan_layer_installed() {
            "--validate: Vulkan validation layer on; the tested GPU runs serially and each message is attributed to the dispatch before it".into()
        } else {
            "--validate: the Vulkan validation layer is not installed (Debian: vulkan-validationlayers); wgpu's own validation only".into()
        });
    }
    report
}

/// The tested path's outputs of one step, and the validation messages each dispatch
/// was followed by.
struct SubjectStep {
    outs: StepBytes,
    messages: Vec<Vec<String>>,
}

/// What one output of a dispatch should have been: the reference op on the tested
/// path's inputs (`local`) and on its own (`chained`), by binding.
struct Expectations {
    local: HashMap<u32, Expected>,
    chained: HashMap<u32, Expected>,
}

/// A check in progress: both paths, the host mirror of the tested GPU's buffers, the
/// trace and the report.
struct Run<'r, 's, 'g, T: Real> {
    gpu: &'r Gpu,
    opts: &'r CheckOptions,
    dec: &'r GpuDecoder,
    subject: &'r GpuPath<'r>,
    /// The buffers the tested graph writes or the steps upload.
    subject_mutable: HashSet<BufferId>,
    per_step: usize,
    break_seq: Option<u64>,
    reference: Reference<'s, 'g, T>,
    /// The tested GPU's buffers as of the dispatch being checked.
    mirror: Store<'s, T>,
    tracer: Option<TraceWriter>,
    report: CheckReport,
    /// The breakpoint's capture was written into the trace.
    capture_written: bool,
}

impl<T: Real> Run<'_, '_, '_, T> {
    /// Checks token `t` (fed `token_in`) dispatch by dispatch; the next token to feed,
    /// or `None` when the run stopped here (a breakpoint, a command the device refused).
    fn token(&mut self, t: u32, token_in: u32) -> Result<Option<u32>, CheckError> {
        self.report.tokens.push(token_in);
        let uploads = step_uploads(self.dec, t, token_in);
        for (b, at, data) in &uploads {
            self.mirror.write_bytes(b, *at, data);
        }
        let ref_outs = self.reference_step(t, token_in, &uploads)?;
        let Some(mut step) = self.subject_step(t, &uploads)? else {
            return Ok(None);
        };
        for i in 0..self.per_step {
            let messages = std::mem::take(&mut step.messages[i]);
            if self.check_dispatch(t, i, &step.outs[i], ref_outs.as_ref(), messages, token_in)? {
                return Ok(None);
            }
        }
        if let Reference::Gpu { other, mirror } = &self.reference {
            restore(other.path.gpu, &other.decoder, mirror, &other.mutable);
        }
        Ok(Some(match self.opts.prompt.get(t as usize + 1) {
            Some(&p) => p,
            None => u32::from_le_bytes(
                self.mirror.bytes(&self.dec.acts.token)[..4]
                    .try_into()
                    .unwrap(),
            ),
        }))
    }

    /// Feeds the step's uploads to the reference; a GPU reference runs its whole step
    /// now, and its outputs are returned.
    fn reference_step(
        &mut self,
        t: u32,
        token_in: u32,
        uploads: &[(GpuBuffer, u64, Vec<u8>)],
    ) -> Result<Option<StepBytes>, CheckError> {
        let (subject, per_step) = (self.subject, self.per_step);
        match &mut self.reference {
            Reference::Cpu { store } => {
                for (b, at, data) in uploads {
                    store.write_bytes(b, *at, data);
                }
                Ok(None)
            }
            Reference::Gpu { other, mirror } => {
                let ups = step_uploads(&other.decoder, t, token_in);
                for (b, at, data) in &ups {
                    mirror.write_bytes(b, *at, data);
                }
                let outs = other
                    .path
                    .run_step(&ups, &|_| false, &mut |_, _, _, _| {})
                    .map_err(|(i, e)| at_dispatch(&subject.dispatches, t, per_step, i, e))?;
                Ok(Some(outs))
            }
        }
    }

    /// Runs the tested path's step, planting the fault and collecting validation
    /// messages; `None` when the device refused a command (recorded at its dispatch).
    fn subject_step(
        &mut self,
        t: u32,
        uploads: &[(GpuBuffer, u64, Vec<u8>)],
    ) -> Result<Option<SubjectStep>, CheckError> {
        let (opts, subject, per_step) = (self.opts, self.subject, self.per_step);
        let base = t as u64 * per_step as u64;
        let fault_at = match opts.fault {
            Some(Fault::CorruptOutput { seq }) if seq >= base && seq < base + per_step as u64 => {
                Some((seq - base) as usize)
            }
            _ => None,
        };
        let mut notes = Vec::new();
        let mut messages: Vec<Vec<String>> = vec![Vec::new(); per_step];
        if opts.validate {
            let before = gpuscope_runtime::validation::take();
            if let Some(first) = before.first() {
                notes.push(format!(
                    "{} validation message(s) before token {t}, while building or uploading (first: {})",
                    before.len(),
                    first.lines().nth(1).unwrap_or(first).trim()
                ));
            }
        }
        let outs = subject.run_step(
            uploads,
            &|i| fault_at == Some(i) || opts.validate,
            &mut |g, i, d, outs| {
                if fault_at == Some(i) {
                    plant(g, d, outs, base + i as u64, &mut notes);
                }
                if opts.validate {
                    messages[i] = gpuscope_runtime::validation::take();
                }
            },
        );
        self.report.notes.extend(notes);
        match outs {
            Ok(outs) => Ok(Some(SubjectStep { outs, messages })),
            Err((i, GpuError::Validation { what, message })) => {
                // The device refused a command: record it at the dispatch and stop.
                let d = &subject.dispatches[i];
                self.report.dispatches.push(dispatch_check(
                    d,
                    t,
                    i,
                    base,
                    Vec::new(),
                    vec![format!("{what}: {message}")],
                ));
                self.report.stopped_at = Some(base + i as u64);
                Ok(None)
            }
            Err((i, e)) => Err(at_dispatch(&subject.dispatches, t, per_step, i, e)),
        }
    }

    /// Compares dispatch `i`'s outputs `outs` with the reference's, traces it, and
    /// updates the mirror; whether the run stops here (the breakpoint).
    fn check_dispatch(
        &mut self,
        t: u32,
        i: usize,
        outs: &[(u32, Vec<u8>)],
        ref_outs: Option<&StepBytes>,
        messages: Vec<String>,
        token_in: u32,
    ) -> Result<bool, CheckError> {
        let (opts, subject) = (self.opts, self.subject);
        let d = &subject.dispatches[i];
        let base = t as u64 * self.per_step as u64;
        let seq = base + i as u64;
        let exec = executor(d.pipeline.shader()).ok();
        let expected = self.expectations(t, i, exec, outs, ref_outs)?;
        let checks = self.output_checks(d, exec, outs, &expected);
        self.report
            .dispatches
            .push(dispatch_check(d, t, i, base, checks, messages));
        let traced = opts
            .filter
            .as_ref()
            .is_none_or(|f| f.matches_dispatch(d) && f.matches_token(t));
        let breaking = self.break_seq == Some(seq);
        if let Some(tr) = &mut self.tracer {
            if traced || breaking {
                let entry =
                    trace_entry(tr, d, t, i, seq, exec, &self.mirror, outs, &expected.local)?;
                tr.add(entry);
            }
            if breaking {
                let dir = tr.work_dir().join("capture");
                write_capture(self.gpu, d, &self.mirror, &dir, t, token_in)?;
                tr.index.capture = Some("capture".into());
                self.capture_written = true;
            }
        }
        let bindings = d.bind_group.bindings();
        for (b, bytes) in outs {
            self.mirror.write_bytes(&bindings[*b as usize], 0, bytes);
        }
        if breaking {
            self.report.stopped_at = Some(seq);
        }
        Ok(breaking)
    }

    /// The local and chained expectations of each binding dispatch `i` wrote (`outs`),
    /// advancing the reference past the dispatch.
    fn expectations(
        &mut self,
        t: u32,
        i: usize,
        exec: Option<&Executor>,
        outs: &[(u32, Vec<u8>)],
        ref_outs: Option<&StepBytes>,
    ) -> Result<Expectations, CheckError> {
        let (subject, per_step) = (self.subject, self.per_step);
        let d = &subject.dispatches[i];
        let bindings = d.bind_group.bindings();
        let mut local: HashMap<u32, Expected> = HashMap::new();
        let mut chained: HashMap<u32, Expected> = HashMap::new();
        match &mut self.reference {
            Reference::Cpu { store } => {
                let e = exec.expect("checked before the run");
                let on_gpu_inputs = execute(e, d, &self.mirror, None)?;
                let own = execute(e, d, store, Some(&self.mirror))?;
                for (b, _) in outs {
                    let buf = &bindings[*b as usize];
                    let kind = kind_of(exec, *b);
                    local.insert(
                        *b,
                        expected_from_store(&self.mirror, buf, kind, on_gpu_inputs.get(b)),
                    );
                    chained.insert(*b, expected_from_store(store, buf, kind, own.get(b)));
                }
                for (b, out) in &own {
                    store.write_output(&bindings[*b as usize], out);
                }
            }
            Reference::Gpu { other, mirror } => {
                let ref_step = &ref_outs.expect("GPU reference ran")[i];
                let rbind = other.path.dispatches[i].bind_group.bindings();
                for (b, bytes) in ref_step {
                    chained.insert(*b, expected_from_bytes(kind_of(exec, *b), bytes));
                    mirror.write_bytes(&rbind[*b as usize], 0, bytes);
                }
                let inputs: Vec<(u32, &[u8])> = bindings
                    .iter()
                    .enumerate()
                    .filter(|(_, b)| self.subject_mutable.contains(&b.id()))
                    .map(|(k, b)| (k as u32, self.mirror.bytes(b)))
                    .collect();
                let outs = other
                    .path
                    .run_one(i, &inputs)
                    .map_err(|e| at_dispatch(&subject.dispatches, t, per_step, i, e))?;
                for (b, bytes) in outs {
                    local.insert(b, expected_from_bytes(kind_of(exec, b), &bytes));
                }
            }
        }
        Ok(Expectations { local, chained })
    }

    /// Each written binding's errors against its expectations; a binding whose
    /// reference has another size (device alignment) gets a note instead.
    fn output_checks(
        &mut self,
        d: &Dispatch,
        exec: Option<&Executor>,
        outs: &[(u32, Vec<u8>)],
        expected: &Expectations,
    ) -> Vec<OutputCheck> {
        let bindings = d.bind_group.bindings();
        let mut checks = Vec::new();
        for (b, found) in outs {
            let kind = kind_of(exec, *b);
            let buf = &bindings[*b as usize];
            let sizes_differ = |e: &Expected| match e {
                Expected::Floats(v) => v.len() * 4 != found.len(),
                Expected::Words(v) => v.len() * 4 != found.len(),
            };
            let Some(ch) = expected.chained.get(b) else {
                continue;
            };
            if sizes_differ(ch) {
                self.report.notes.push(format!(
                    "{} binding {b}: the reference's binding has another size (device alignment); not compared",
                    d.label
                ));
                continue;
            }
            checks.push(OutputCheck {
                binding: *b,
                buffer: buf.label().to_string(),
                local: expected
                    .local
                    .get(b)
                    .filter(|e| !sizes_differ(e))
                    .map(|e| compare(kind, found, e)),
                chained: compare(kind, found, ch),
            });
        }
        checks
    }

    /// The finished trace (with the breakpoint's capture) and the report.
    fn finish(self) -> Result<CheckRun, CheckError> {
        let trace_dir = match self.tracer {
            Some(t) => Some(t.finish()?),
            None => None,
        };
        let capture_dir = trace_dir
            .as_ref()
            .filter(|_| self.capture_written)
            .map(|d| d.join("capture"));
        Ok(CheckRun {
            report: self.report,
            trace_dir,
            capture_dir,
        })
    }
}

fn describe(gpu: &Gpu) -> String {
    let i = gpu.adapter_info();
    format!("\"{}\" ({:?})", i.name, i.backend)
}

fn unique_ops(ds: &[Dispatch]) -> String {
    let mut ops: Vec<&str> = ds.iter().map(|d| d.op.as_str()).collect();
    ops.sort();
    ops.dedup();
    ops.join(", ")
}

fn at_dispatch(ds: &[Dispatch], t: u32, per_step: usize, i: usize, e: GpuError) -> CheckError {
    CheckError::AtDispatch {
        token: t,
        seq: t as u64 * per_step as u64 + i as u64,
        label: ds[i].label.clone(),
        source: e,
    }
}

fn dispatch_check(
    d: &Dispatch,
    t: u32,
    i: usize,
    base: u64,
    outputs: Vec<OutputCheck>,
    validation: Vec<String>,
) -> DispatchCheck {
    DispatchCheck {
        seq: base + i as u64,
        token: t,
        index: i as u32,
        layer: d.layer,
        section: match d.layer {
            Some(l) => format!("L{l}"),
            None if d.label == "token_embd" => "embed".into(),
            None => "head".into(),
        },
        op: d.op.clone(),
        label: d.label.clone(),
        shader: d.pipeline.shader().to_string(),
        outputs,
        validation,
        int8_activations: gpuscope_ops::gemv::rounds_activations(d.pipeline.shader()),
    }
}

/// The planted fault: element 0 of the dispatch's first output changes on the GPU.
fn plant(gpu: &Gpu, d: &Dispatch, outs: &mut [(u32, Vec<u8>)], seq: u64, notes: &mut Vec<String>) {
    let Some((b, bytes)) = outs.first_mut() else {
        return;
    };
    let exec = executor(d.pipeline.shader()).ok();
    let word: [u8; 4] = bytes[..4].try_into().unwrap();
    let (before, after, new) = match kind_of(exec, *b) {
        Kind::U32 => {
            let v = u32::from_le_bytes(word);
            (
                v as f64,
                v.wrapping_add(1) as f64,
                v.wrapping_add(1).to_le_bytes(),
            )
        }
        _ => {
            let v = f32::from_le_bytes(word);
            let n = v + 1.0 + v.abs();
            (v as f64, n as f64, n.to_le_bytes())
        }
    };
    bytes[..4].copy_from_slice(&new);
    let buf = &d.bind_group.bindings()[*b as usize];
    gpu.write_buffer(&buf.whole(), buf.offset(), &new);
    notes.push(format!(
        "planted fault: dispatch {seq} ({}) binding {b} element 0 changed from {before} to {after} on the GPU",
        d.label
    ));
}

/// Writes the reference GPU's own state back after the local runs overwrote it.
fn restore(gpu: &Gpu, decoder: &GpuDecoder, mirror: &Store<f32>, mutable: &HashSet<BufferId>) {
    let mut done = HashSet::new();
    for d in decoder.graph().dispatches() {
        for b in d.bind_group.bindings() {
            if mutable.contains(&b.id()) && done.insert(b.id()) {
                gpu.write_buffer(&b.whole(), 0, mirror.whole_bytes(b));
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn trace_entry<T: Real>(
    tr: &TraceWriter,
    d: &Dispatch,
    t: u32,
    i: usize,
    seq: u64,
    exec: Option<&Executor>,
    mirror: &Store<T>,
    outs: &[(u32, Vec<u8>)],
    local: &HashMap<u32, Expected>,
) -> Result<TraceEntry, CheckError> {
    let stem = format!("t{t}-{seq:06}-{}", safe(&d.label));
    let descr = |k: Kind| match k {
        Kind::F32 => "<f4",
        Kind::U32 => "<u4",
        Kind::Bytes => "|u1",
    };
    let mut tensors = Vec::new();
    for (b, buf) in d.bind_group.bindings().iter().enumerate() {
        let b = b as u32;
        let kind = kind_of(exec, b);
        let bytes = mirror.bytes(buf);
        let shape = if kind == Kind::Bytes {
            bytes.len()
        } else {
            bytes.len() / 4
        };
        let (file, note) = if kind == Kind::Bytes {
            (
                None,
                Some("weights: not written (the model's tensor bytes)".to_string()),
            )
        } else {
            let name = format!("{stem}-in{b}-{}.npy", safe(buf.label()));
            (Some(tr.npy(&name, descr(kind), shape, bytes)?), None)
        };
        tensors.push(TraceTensor {
            role: "input".into(),
            binding: b,
            buffer: buf.label().to_string(),
            dtype: kind.name().into(),
            shape: vec![shape],
            file,
            note,
        });
    }
    for (b, bytes) in outs {
        let kind = kind_of(exec, *b);
        let label = d.bind_group.bindings()[*b as usize].label();
        let name = format!("{stem}-out{b}-{}.npy", safe(label));
        let shape = bytes.len() / 4;
        tensors.push(TraceTensor {
            role: "output".into(),
            binding: *b,
            buffer: label.to_string(),
            dtype: kind.name().into(),
            shape: vec![shape],
            file: Some(tr.npy(&name, descr(kind), shape, bytes)?),
            note: None,
        });
        if let Some(e) = local.get(b) {
            let name = format!("{stem}-expected{b}-{}.npy", safe(label));
            let (descr, data, n, dtype): (&str, Vec<u8>, usize, &str) = match e {
                Expected::Floats(v) => (
                    "<f8",
                    v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    v.len(),
                    "f64",
                ),
                Expected::Words(v) => (
                    "<u4",
                    v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    v.len(),
                    "u32",
                ),
            };
            tensors.push(TraceTensor {
                role: "expected".into(),
                binding: *b,
                buffer: label.to_string(),
                dtype: dtype.into(),
                shape: vec![n],
                file: Some(tr.npy(&name, descr, n, &data)?),
                note: Some("the reference op on the same inputs".into()),
            });
        }
    }
    Ok(TraceEntry {
        seq,
        token: t,
        index: i as u32,
        layer: d.layer,
        op: d.op.clone(),
        label: d.label.clone(),
        shader: d.pipeline.shader().to_string(),
        constants: d.pipeline.constants().to_vec(),
        tensors,
    })
}

/// A one-dispatch capture of `d` from the state before it ran (the mirror's), with its
/// recorded outputs: `gpuscope replay DIR` runs it alone and compares them.
fn write_capture<T: Real>(
    gpu: &Gpu,
    d: &Dispatch,
    mirror: &Store<T>,
    dir: &Path,
    position: u32,
    token: u32,
) -> Result<(), CheckError> {
    for b in d.bind_group.bindings() {
        gpu.write_buffer(&b.whole(), 0, mirror.whole_bytes(b));
    }
    let graph = sub_graph(std::slice::from_ref(d));
    let workload = WorkloadDesc {
        name: format!("{} (one dispatch, from gpuscope check --break-at)", d.label),
        graph_dispatches_per_token: 1,
        graph_passes_per_token: 1,
        ..Default::default()
    };
    let mut rec = CaptureRecorder::new(gpu, &graph, "capture", workload)?;
    rec.begin(gpu, true)?;
    let mut runner = StepRunner::new(gpu, &graph, &[])?;
    let out = runner.step(gpu, &graph, &[])?;
    rec.end(
        gpu,
        &[StepRecord {
            index: 0,
            position,
            token_id: token,
            output: &out,
        }],
    )?;
    rec.capture_outputs(gpu, 0..1)?;
    // A new directory inside the trace being written.
    rec.write(dir, gpuscope_trace::capture::OnExisting::Refuse)?;
    Ok(())
}
