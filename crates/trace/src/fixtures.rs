//! Test fixtures (feature `fixtures`): small profiles with known numbers, built in code,
//! shared by this crate's tests and the report crate's.
//!
//! `small()`: 2 layers, 3 tokens, timing `dispatch`. Each token runs 4 passes (embed,
//! L0, L1, head) and 7 dispatches:
//!
//! | pass  | op        | ns (token 0 / 1 / 2)   | bytes   | flops   |
//! |-------|-----------|------------------------|---------|---------|
//! | embed | embedding | 1000                   | 2000    | 0       |
//! | L0    | rms_norm  | 2000                   | 4000    | 3000    |
//! | L0    | gemv_q4_1 | 12000 / 10000 / 10000  | 100000  | 200000  |
//! | L1    | rms_norm  | 2000 (token 1: out of order) |   |         |
//! | L1    | gemv_q4_1 | 12000 / 10000 / 10000  |         |         |
//! | head  | gemv_f16  | 20000                  | 300000  | 400000  |
//! | head  | argmax    | 1500 (token 2: zero)   | 1000    | 1000    |
//!
//! Dispatches in a pass are 500 ns apart; a pass spans its first start to its last
//! end. Token 0's head pass is flagged negative. Wall: 2.0 / 0.4 / 0.3 ms; GPU busy:
//! 0.2 / 0.15 ms / none.

use crate::ceilings::Ceilings;
use crate::*;

pub const GAP_NS: u64 = 500;

pub fn counters(first: bool) -> Counters {
    Counters {
        dispatches: 7,
        passes: 4,
        submits: 1,
        syncs: 1,
        barriers: 3,
        buffers_created: if first { 2 } else { 0 },
        bind_groups_created: if first { 5 } else { 0 },
        pipelines_created: if first { 5 } else { 0 },
        bytes_uploaded: 16,
        bytes_downloaded: 4,
    }
}

struct Op {
    pass: u32,
    op: &'static str,
    label: &'static str,
    bytes: u64,
    flops: u64,
}

const OPS: [Op; 7] = [
    Op {
        pass: 0,
        op: "embedding",
        label: "embed",
        bytes: 2000,
        flops: 0,
    },
    Op {
        pass: 1,
        op: "rms_norm",
        label: "L0.attn_norm",
        bytes: 4000,
        flops: 3000,
    },
    Op {
        pass: 1,
        op: "gemv_q4_1",
        label: "L0.ffn_down",
        bytes: 100_000,
        flops: 200_000,
    },
    Op {
        pass: 2,
        op: "rms_norm",
        label: "L1.attn_norm",
        bytes: 4000,
        flops: 3000,
    },
    Op {
        pass: 2,
        op: "gemv_q4_1",
        label: "L1.ffn_down",
        bytes: 100_000,
        flops: 200_000,
    },
    Op {
        pass: 3,
        op: "gemv_f16",
        label: "output",
        bytes: 300_000,
        flops: 400_000,
    },
    Op {
        pass: 3,
        op: "argmax",
        label: "argmax",
        bytes: 1000,
        flops: 1000,
    },
];

const PASSES: [(&str, Option<u32>); 4] = [
    ("embed", None),
    ("L0", Some(0)),
    ("L1", Some(1)),
    ("head", None),
];

fn duration(token: u32, op: &Op) -> u64 {
    match op.op {
        "embedding" => 1000,
        "rms_norm" => 2000,
        "gemv_q4_1" if token == 0 => 12_000,
        "gemv_q4_1" => 10_000,
        "gemv_f16" => 20_000,
        _ => 1500,
    }
}

fn issue(token: u32, index: u32) -> Option<TimestampIssue> {
    match (token, index) {
        (1, 3) => Some(TimestampIssue::OutOfOrder),
        (2, 6) => Some(TimestampIssue::Zero),
        _ => None,
    }
}

pub fn small() -> Profile {
    let mut dispatches = Vec::new();
    let mut passes = Vec::new();
    for token in 0..3u32 {
        let mut cursor = token as u64 * 1_000_000;
        for (pi, (name, layer)) in PASSES.iter().enumerate() {
            let start = cursor;
            let ops: Vec<(u32, &Op)> = (0u32..)
                .zip(OPS.iter())
                .filter(|(_, o)| o.pass == pi as u32)
                .collect();
            for (index, op) in &ops {
                let span = GpuSpan {
                    start_ns: cursor,
                    end_ns: cursor + duration(token, op),
                };
                cursor = span.end_ns + GAP_NS;
                let issue = issue(token, *index);
                dispatches.push(DispatchEvent {
                    token,
                    index: *index,
                    op: op.op.into(),
                    label: op.label.into(),
                    layer: *layer,
                    pass: pi as u32,
                    pipeline: format!("{}/main", op.op).into(),
                    workgroups: [4, 1, 1],
                    bytes: op.bytes,
                    flops: op.flops,
                    cpu_encode_ns: 2000,
                    gpu: issue.is_none().then_some(span),
                    timestamp_issue: issue,
                });
            }
            let span = GpuSpan {
                start_ns: start,
                end_ns: cursor - GAP_NS,
            };
            let bad = token == 0 && *name == "head";
            passes.push(PassEvent {
                token,
                index: pi as u32,
                name: name.to_string().into(),
                layer: *layer,
                dispatches: ops.len() as u32,
                gpu: (!bad).then_some(span),
                timestamp_issue: bad.then_some(TimestampIssue::Negative),
            });
            cursor += 1000;
        }
    }
    let walls = [2_000_000, 400_000, 300_000];
    let busy = [Some(200_000), Some(150_000), None];
    let tokens = (0..3u32)
        .map(|i| TokenRecord {
            index: i,
            position: 5 + i,
            token_id: [17, 42, 99][i as usize],
            wall_ns: walls[i as usize],
            gpu_busy_ns: busy[i as usize],
            counters: counters(i == 0),
            cpu: Default::default(),
            name: None,
            other_counters: Default::default(),
            gpu_track: 0,
        })
        .collect();
    Profile {
        format: PROFILE_FORMAT,
        tool: "gpuscope 0.1.0".into(),
        adapter: AdapterDesc {
            name: "Test GPU".into(),
            backend: "Vulkan".into(),
            device_type: "Cpu".into(),
            driver: "llvmpipe".into(),
            driver_info: "Mesa 22.3.6".into(),
            features: vec!["TIMESTAMP_QUERY".into()],
            max_storage_buffer_binding_size: 128 << 20,
            max_buffer_size: 2 << 30,
        },
        timing: TimingInfo {
            mode: TimingMode::Dispatch,
            reason: "TIMESTAMP_QUERY_INSIDE_PASSES offered".into(),
            timestamp_period_ns: 1.0,
            sampling: None,
        },
        workload: WorkloadDesc {
            name: "tiny (synthetic)".into(),
            architecture: "llama".into(),
            weights: "q4_1".into(),
            params: 1_500_000,
            weight_bytes: 900_000,
            layers: 2,
            graph_dispatches_per_token: 7,
            graph_passes_per_token: 4,
            settings: Default::default(),
        },
        setup: Counters {
            buffers_created: 20,
            pipelines_created: 5,
            bytes_uploaded: 900_000,
            ..Default::default()
        },
        setup_wall_ns: 12_000_000,
        tokens,
        dispatches,
        passes,
        overhead: None,
        prompt: None,
        ..Default::default()
    }
}

/// `small()` with every span removed and timing off.
pub fn untimed() -> Profile {
    let mut p = small();
    p.timing.mode = TimingMode::Off;
    p.timing.reason = "--timing off".into();
    for d in &mut p.dispatches {
        d.gpu = None;
        d.timestamp_issue = None;
    }
    for s in &mut p.passes {
        s.gpu = None;
        s.timestamp_issue = None;
    }
    for t in &mut p.tokens {
        t.gpu_busy_ns = None;
    }
    p
}

/// `small()` with pass spans removed (per-section times come from dispatches).
pub fn without_pass_spans() -> Profile {
    let mut p = small();
    for s in &mut p.passes {
        s.gpu = None;
        s.timestamp_issue = None;
    }
    p
}

/// A profile with `n_tokens` tokens and `n_layers` layers, one dispatch per layer,
/// layer `l` taking `1000 * (l + 1)` ns: for the shortened report.
pub fn long(n_tokens: u32, n_layers: u32) -> Profile {
    let mut p = small();
    p.workload.layers = n_layers;
    p.workload.graph_dispatches_per_token = n_layers;
    p.workload.graph_passes_per_token = n_layers;
    p.dispatches.clear();
    p.passes.clear();
    p.tokens.clear();
    for token in 0..n_tokens {
        let mut cursor = token as u64 * 10_000_000;
        for l in 0..n_layers {
            let span = GpuSpan {
                start_ns: cursor,
                end_ns: cursor + 1000 * (l as u64 + 1),
            };
            cursor = span.end_ns + GAP_NS;
            p.dispatches.push(DispatchEvent {
                token,
                index: l,
                op: "gemv_q4_1".into(),
                label: format!("L{l}.ffn_down").into(),
                layer: Some(l),
                pass: l,
                pipeline: "gemv_q4_1/main".into(),
                workgroups: [1, 1, 1],
                bytes: 1000,
                flops: 2000,
                cpu_encode_ns: 1000,
                gpu: Some(span),
                timestamp_issue: None,
            });
            p.passes.push(PassEvent {
                token,
                index: l,
                name: format!("L{l}").into(),
                layer: Some(l),
                dispatches: 1,
                gpu: Some(span),
                timestamp_issue: None,
            });
        }
        let mut c = counters(token == 0);
        c.dispatches = n_layers as u64;
        c.passes = n_layers as u64;
        p.tokens.push(TokenRecord {
            index: token,
            position: token,
            token_id: 1000 + token,
            wall_ns: 1_000_000 + token as u64 * 1000,
            gpu_busy_ns: Some(900_000),
            counters: c,
            cpu: Default::default(),
            name: None,
            other_counters: Default::default(),
            gpu_track: 0,
        });
    }
    p
}

/// Path of a file under `tests/data`.
pub fn data(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

/// True when golden files should be rewritten (`GPUSCOPE_BLESS=1 cargo test`).
pub fn bless() -> bool {
    std::env::var_os("GPUSCOPE_BLESS").is_some()
}

/// A profile of tokens only (no events): wall and GPU-busy time per token.
pub fn tokens_only(times: &[(u64, Option<u64>)]) -> Profile {
    let mut p = small();
    p.dispatches.clear();
    p.passes.clear();
    p.tokens = times
        .iter()
        .enumerate()
        .map(|(i, &(wall_ns, gpu_busy_ns))| TokenRecord {
            index: i as u32,
            position: i as u32,
            token_id: 1,
            wall_ns,
            gpu_busy_ns,
            counters: counters(i == 0),
            cpu: Default::default(),
            name: None,
            other_counters: Default::default(),
            gpu_track: 0,
        })
        .collect();
    p
}

/// The H200 clock ramp of issue 7: Llama-8B q4_0, 16 tokens after 3 warm-up tokens;
/// tokens 0-9 at 21.3 ms (GPU busy 21.0 ms), tokens 10-15 at 6.3 ms (GPU busy 6.0 ms).
pub fn clock_ramp() -> Profile {
    let times: Vec<(u64, Option<u64>)> = (0..16)
        .map(|i| {
            if i < 10 {
                (21_300_000, Some(21_000_000))
            } else {
                (6_300_000, Some(6_000_000))
            }
        })
        .collect();
    let mut p = tokens_only(&times);
    p.warmup_tokens = Some(3);
    p
}

/// Measured ceilings for `small()`'s adapter: copy 100 GB/s (100 bytes/ns), f32 1000
/// GFLOP/s, dependent dispatch 2 µs, CPU 1 µs per dispatch, fill 64 workgroups of 64.
pub fn ceilings() -> Ceilings {
    let m = |median: f64| Measured {
        median,
        p10: median * 0.9,
        p90: median * 1.1,
        n: 10,
    };
    let a = small().adapter;
    Ceilings {
        format: crate::ceilings::CEILINGS_FORMAT,
        identity: CeilingsIdentity {
            adapter: a.name,
            backend: a.backend,
            driver: a.driver,
            driver_info: a.driver_info,
            tool: "gpuscope 0.1.0".into(),
            measured_at: "2026-11-23T12:00:00Z".into(),
        },
        method: "GPU timestamps around each pass".into(),
        copy_gbps: Some(m(100.0)),
        read_gbps: Some(m(120.0)),
        write_gbps: Some(m(90.0)),
        f32_gflops: Some(m(1000.0)),
        f16_gflops: None,
        dispatch_ns: Some(m(2000.0)),
        cpu_dispatch_ns: Some(m(1000.0)),
        timestamp_ns: None,
        fill: Some(crate::ceilings::FillWorkgroups {
            workgroups: 64,
            workgroup_size: 64,
        }),
        settings: Default::default(),
    }
}

/// `small()` with `ceilings()` embedded.
pub fn small_with_ceilings() -> Profile {
    let mut p = small();
    p.ceilings = Some(ceilings());
    p
}

/// One dispatch event for hand-built timelines.
pub fn dispatch(token: u32, index: u32, op: &str, span: Option<(u64, u64)>) -> DispatchEvent {
    DispatchEvent {
        token,
        index,
        op: op.into(),
        label: format!("{op}#{index}").into(),
        layer: Some(0),
        pass: 0,
        pipeline: format!("{op}/main").into(),
        workgroups: [8, 1, 1],
        bytes: 1000,
        flops: 1000,
        cpu_encode_ns: 100,
        gpu: span.map(|(start_ns, end_ns)| GpuSpan { start_ns, end_ns }),
        timestamp_issue: None,
    }
}

/// Two tokens of three dispatches with known gaps, an overlap and CPU spans:
///
/// | token | spans (ns)                          | wall |
/// |-------|-------------------------------------|------|
/// | 0     | 0-100, 100-300, 350-400             | 500  |
/// | 1     | 1000-1100, 1050-1200, 1200-1300     | 900  |
///
/// CPU spans (token 0 / 1): step 0-2000 / 1500-3000, submit 500-520 / 1700-1720,
/// wait 520-1500 / 1720-2900. The clocks align at offset 700 (token 1 starts at its
/// submit), with 400 ns of slack (token 0's wait ends 1100 ns after its last kernel).
pub fn timeline() -> Profile {
    let mut p = tokens_only(&[(500, Some(350)), (900, Some(300))]);
    let spans = [
        (0, 100),
        (100, 300),
        (350, 400),
        (1000, 1100),
        (1050, 1200),
        (1200, 1300),
    ];
    p.dispatches = spans
        .iter()
        .enumerate()
        .map(|(i, &s)| dispatch(i as u32 / 3, i as u32 % 3, "gemv_q4_1", Some(s)))
        .collect();
    p.threads = vec!["main".into()];
    let span = |name: &str, token: u32, start_ns: u64, end_ns: u64| CpuSpan {
        name: name.into(),
        thread: 0,
        token: Some(token),
        start_ns,
        end_ns,
        detail: None,
    };
    p.cpu_spans = vec![
        span("step", 0, 0, 2000),
        span("submit", 0, 500, 520),
        span("wait", 0, 520, 1500),
        span("step", 1, 1500, 3000),
        span("submit", 1, 1700, 1720),
        span("wait", 1, 1720, 2900),
    ];
    p
}

pub use captures::{write_capture, COPY_WGSL};

/// A small capture written to disk (no GPU needed).
mod captures {
    use std::path::Path;

    use crate::capture::*;
    use crate::{AdapterDesc, TimingInfo, TimingMode, WorkloadDesc};

    pub const COPY_WGSL: &str = "override N: u32 = 1u;\n@group(0) @binding(0) var<storage, read> x: array<f32>;\n\
    @group(0) @binding(1) var<storage, read_write> y: array<f32>;\n\
    @compute @workgroup_size(64) fn main(@builtin(global_invocation_id) i: vec3<u32>) { if i.x < N { y[i.x] = x[i.x]; } }\n";

    /// A capture of one shader built with `variants` constant sets, one dispatch each, run
    /// for `steps` steps with a 16-byte upload each.
    pub fn write_capture(dir: &Path, variants: usize, steps: u32) {
        let c = commands(variants);
        let stream = stream(variants, steps);
        let mut w = CaptureWriter::create(dir, OnExisting::Refuse).unwrap();
        w.write_file("shaders/copy.wgsl", "shader", COPY_WGSL.as_bytes())
            .unwrap();
        w.write_file("blobs/uploads.bin", "blob", &vec![7u8; 16 * steps as usize])
            .unwrap();
        w.write_file("blobs/buffer-1.bin", "blob", &[1u8; 256])
            .unwrap();
        let data = CapturedData {
            initial: vec![BufferContents {
                buffer: 1,
                data: BlobSlice {
                    blob: "blobs/buffer-1.bin".into(),
                    start: 0,
                    len: 256,
                },
            }],
            outputs: vec![],
        };
        w.finish(manifest(), &c, &stream, Some(&data)).unwrap();
    }

    /// The shader, its layout, buffers `x` (id 1) and `y` (id 2), and per variant `v` a
    /// constant set `N = v + 1`, its pipeline and its bind group.
    fn commands(variants: usize) -> Commands {
        let mut c = Commands {
            shaders: vec![ShaderDesc {
                name: "copy".into(),
                source: "shaders/copy.wgsl".into(),
                entry_points: vec!["main".into()],
            }],
            layouts: vec![LayoutDesc {
                entries: vec![
                    LayoutEntry {
                        binding: 0,
                        access: Access::Read,
                    },
                    LayoutEntry {
                        binding: 1,
                        access: Access::ReadWrite,
                    },
                ],
            }],
            buffers: vec![
                BufferDesc {
                    id: 1,
                    label: "x".into(),
                    size: 256,
                    usage: vec!["STORAGE".into()],
                },
                BufferDesc {
                    id: 2,
                    label: "y".into(),
                    size: 256,
                    usage: vec!["STORAGE".into()],
                },
            ],
            ..Commands::default()
        };
        for v in 0..variants {
            c.constant_sets.push(ConstantSet {
                values: vec![("N".into(), (v + 1) as f64)],
            });
            c.pipelines.push(PipelineDesc {
                name: format!("copy:main{{N={}}}", v + 1),
                shader: 0,
                entry: "main".into(),
                constants: v,
                layout: 0,
            });
            c.bind_groups.push(BindGroupDesc {
                pipeline: v,
                entries: vec![
                    BindingDesc {
                        binding: 0,
                        buffer: 1,
                        offset: 0,
                        size: 256,
                        label: "x".into(),
                    },
                    BindingDesc {
                        binding: 1,
                        buffer: 2,
                        offset: 0,
                        size: 256,
                        label: "y".into(),
                    },
                ],
            });
        }
        c
    }

    /// One graph (a dispatch per variant, in one pass), a 4-byte readback of `y`, and
    /// `steps` measured steps.
    fn stream(variants: usize, steps: u32) -> Stream {
        let dispatches: Vec<DispatchDesc> = (0..variants)
            .map(|v| DispatchDesc {
                pipeline: v,
                bind_group: v,
                workgroups: [1, 1, 1],
                op: "copy".into(),
                label: format!("copy{v}"),
                layer: None,
                reads: vec![1],
                writes: vec![2],
            })
            .collect();
        Stream {
            graphs: vec![GraphDesc {
                passes: vec![PassDesc {
                    name: "all".into(),
                    layer: None,
                    dispatches,
                }],
            }],
            readbacks: vec![BufferRange {
                buffer: 2,
                offset: 0,
                size: 4,
            }],
            steps: (0..steps).map(|i| step(i, variants)).collect(),
        }
    }

    /// Step `i`: its 16 bytes of `blobs/uploads.bin` into `x`, and a measurement of each
    /// of its `dispatches` (dispatch `d` took `100 * (d + 1)` ns).
    fn step(i: u32, dispatches: usize) -> StepDesc {
        StepDesc {
            index: i,
            position: i,
            token_id: 0,
            graph: 0,
            uploads: vec![Upload {
                buffer: 1,
                offset: 0,
                data: BlobSlice {
                    blob: "blobs/uploads.bin".into(),
                    start: 16 * i as u64,
                    len: 16,
                },
            }],
            measured: Some(StepMeasurement {
                wall_ns: 1000,
                gpu_busy_ns: Some(500),
                counters: Default::default(),
                dispatches: (0..dispatches)
                    .map(|d| DispatchMeasurement {
                        gpu: Some(crate::GpuSpan {
                            start_ns: 0,
                            end_ns: 100 * (d as u64 + 1),
                        }),
                        issue: None,
                        cpu_encode_ns: 10,
                        bytes: 512,
                        flops: 0,
                    })
                    .collect(),
            }),
        }
    }

    fn manifest() -> Manifest {
        Manifest {
            format: CAPTURE_FORMAT,
            tool: "test".into(),
            name: "fixture".into(),
            adapter: AdapterDesc::default(),
            limits: Default::default(),
            timing: TimingInfo {
                mode: TimingMode::Dispatch,
                reason: "test".into(),
                timestamp_period_ns: 1.0,
                sampling: None,
            },
            workload: WorkloadDesc::default(),
            files: vec![],
            incomplete: None,
        }
    }
}

/// `full` (every dispatch timed) as sampled timing with `stride` would have recorded it:
/// dispatch `i` of token `t` keeps its span only when `(i + t) % stride == 0` (the
/// recorder's rotation), passes and tokens lose their GPU times.
pub fn sampled_from(full: &Profile, stride: u32) -> Profile {
    let mut p = full.clone();
    p.timing.mode = crate::TimingMode::Dispatch;
    p.timing.sampling = Some(crate::Sampling { stride });
    for d in &mut p.dispatches {
        if !(crate::Sampling { stride }).is_timed(d.token, d.index) {
            d.gpu = None;
            d.timestamp_issue = None;
        }
    }
    for s in &mut p.passes {
        s.gpu = None;
        s.timestamp_issue = None;
    }
    for t in &mut p.tokens {
        t.gpu_busy_ns = None;
    }
    p
}
