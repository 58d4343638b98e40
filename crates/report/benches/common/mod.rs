//! A generator of large, realistic profiles for the scale benchmarks: a SmolLM2-shaped
//! decode (30 layers of 9 dispatches, plus embedding and head: 274 dispatches and 32
//! passes per token) timed per dispatch, with CPU spans, buffers, the graph's bindings
//! and ceilings, a 20-token clock ramp, jitter and a few flagged timestamps. Values
//! come from a fixed-seed generator, so every run builds the same profile.

use gpuscope_trace::ceilings::{Ceilings, CeilingsIdentity, FillWorkgroups, Measured};
use gpuscope_trace::graph::{Binding, GraphBuffer, GraphDesc, GraphDispatch};
use gpuscope_trace::*;

const LAYERS: u32 = 30;
const LAYER_OPS: [(&str, &str, u64, u64, u32); 9] = [
    // (op, label suffix, bytes, flops, workgroups)
    ("rms_norm", "attn_norm", 4_000, 3_000, 1),
    ("gemv_q4_1", "attn_qkv", 700_000, 1_300_000, 240),
    ("rope", "rope", 3_000, 2_000, 8),
    ("attention", "attention", 300_000, 200_000, 9),
    ("gemv_q4_1", "attn_output", 420_000, 800_000, 144),
    ("rms_norm", "ffn_norm", 4_000, 3_000, 1),
    ("gemv_q4_1", "ffn_gate_up", 2_200_000, 4_200_000, 768),
    ("silu_mul", "ffn_act", 18_000, 9_000, 6),
    ("gemv_q4_1", "ffn_down", 1_100_000, 2_100_000, 144),
];

/// Minimal xorshift: no dependency for deterministic jitter.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Multiplier in [1 - spread, 1 + spread].
    fn jitter(&mut self, spread: f64) -> f64 {
        1.0 + spread * ((self.next() % 2001) as f64 / 1000.0 - 1.0)
    }
}

struct Op {
    op: String,
    label: String,
    layer: Option<u32>,
    pass: u32,
    bytes: u64,
    flops: u64,
    workgroups: u32,
    ns: u64,
}

fn graph_ops() -> Vec<Op> {
    let mut ops = vec![Op {
        op: "embedding_q8_0".into(),
        label: "embed".into(),
        layer: None,
        pass: 0,
        bytes: 2_000,
        flops: 0,
        workgroups: 3,
        ns: 3_000,
    }];
    for l in 0..LAYERS {
        for (op, suffix, bytes, flops, wg) in LAYER_OPS {
            ops.push(Op {
                op: op.into(),
                label: format!("L{l}.{suffix}"),
                layer: Some(l),
                pass: l + 1,
                bytes,
                flops,
                workgroups: wg,
                ns: 2_000 + bytes / 200,
            });
        }
    }
    for (op, label, bytes, ns, pass) in [
        ("rms_norm", "output_norm", 4_000, 2_000, LAYERS + 1),
        ("gemv_q8_0", "output", 28_000_000, 25_000, LAYERS + 1),
        ("argmax", "argmax", 200_000, 8_000, LAYERS + 1),
    ] {
        ops.push(Op {
            op: op.into(),
            label: label.into(),
            layer: None,
            pass,
            bytes,
            flops: bytes,
            workgroups: 64,
            ns,
        });
    }
    ops
}

/// A profile with at least `dispatches` dispatch events (whole tokens).
pub fn large_profile(dispatches: usize) -> Profile {
    let ops = graph_ops();
    let per_token = ops.len();
    let passes_per_token = LAYERS + 2;
    let tokens = dispatches.div_ceil(per_token) as u32;
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut p = Profile {
        tool: "gpuscope 0.1.0".into(),
        adapter: AdapterDesc {
            name: "Synthetic GPU".into(),
            backend: "Vulkan".into(),
            device_type: "DiscreteGpu".into(),
            driver: "synthetic".into(),
            driver_info: "1.0".into(),
            features: vec!["TIMESTAMP_QUERY".into()],
            max_storage_buffer_binding_size: 2 << 30,
            max_buffer_size: 4 << 30,
        },
        timing: TimingInfo {
            mode: TimingMode::Dispatch,
            reason: "synthetic".into(),
            timestamp_period_ns: 1.0,
            sampling: None,
        },
        workload: WorkloadDesc {
            name: "smollm2-135m (synthetic, large)".into(),
            architecture: "llama".into(),
            weights: "q4_1".into(),
            params: 134_515_008,
            weight_bytes: 96_580_000,
            layers: LAYERS,
            graph_dispatches_per_token: per_token as u32,
            graph_passes_per_token: passes_per_token,
            settings: Default::default(),
        },
        warmup_tokens: Some(3),
        threads: vec!["main".into()],
        ..Default::default()
    };
    p.dispatches.reserve(tokens as usize * per_token);
    p.passes
        .reserve(tokens as usize * passes_per_token as usize);
    let mut gpu_ns = 0u64;
    let mut cpu_ns = 0u64;
    for token in 0..tokens {
        // A clock ramp: the first 20 tokens run 3x slower.
        let slow = if token < 20 { 3.0 } else { 1.0 };
        let step_start = cpu_ns;
        let submit_start = step_start + 200_000;
        cpu_ns = submit_start + 20_000;
        gpu_ns = gpu_ns.max(cpu_ns - 1_000) + 5_000;
        let token_gpu_start = gpu_ns;
        let mut pass_start = gpu_ns;
        for (i, o) in ops.iter().enumerate() {
            let ns = (o.ns as f64 * slow * rng.jitter(0.05)) as u64;
            let span = GpuSpan {
                start_ns: gpu_ns,
                end_ns: gpu_ns + ns,
            };
            gpu_ns = span.end_ns;
            let issue = rng
                .next()
                .is_multiple_of(100_000)
                .then_some(TimestampIssue::Zero);
            p.dispatches.push(DispatchEvent {
                token,
                index: i as u32,
                op: o.op.clone().into(),
                label: o.label.clone().into(),
                layer: o.layer,
                pass: o.pass,
                pipeline: format!("{}:main", o.op).into(),
                workgroups: [o.workgroups, 1, 1],
                bytes: o.bytes,
                flops: o.flops,
                cpu_encode_ns: 600,
                gpu: issue.is_none().then_some(span),
                timestamp_issue: issue,
            });
            let last_of_pass = ops.get(i + 1).is_none_or(|n| n.pass != o.pass);
            if last_of_pass {
                p.passes.push(PassEvent {
                    token,
                    index: o.pass,
                    name: match o.layer {
                        Some(l) => format!("L{l}").into(),
                        None if o.pass == 0 => "embed".into(),
                        None => "head".into(),
                    },
                    layer: o.layer,
                    dispatches: ops.iter().filter(|x| x.pass == o.pass).count() as u32,
                    gpu: Some(GpuSpan {
                        start_ns: pass_start,
                        end_ns: gpu_ns,
                    }),
                    timestamp_issue: None,
                });
                gpu_ns += 1_000;
                pass_start = gpu_ns;
            }
        }
        let done = gpu_ns + 30_000;
        let busy = gpu_ns - token_gpu_start;
        for (name, start, end) in [
            ("step", step_start, done + 10_000),
            ("upload", step_start, step_start + 5_000),
            ("encode", step_start + 5_000, submit_start),
            ("submit", submit_start, submit_start + 20_000),
            ("wait", submit_start + 20_000, done),
            ("readback", done, done + 10_000),
        ] {
            p.cpu_spans.push(CpuSpan {
                name: name.into(),
                thread: 0,
                token: Some(token),
                start_ns: start,
                end_ns: end,
                detail: None,
            });
        }
        cpu_ns = done + 10_000;
        p.tokens.push(TokenRecord {
            index: token,
            position: token,
            token_id: (rng.next() % 49_152) as u32,
            other_counters: Default::default(),
            gpu_track: 0,
            wall_ns: cpu_ns - step_start,
            gpu_busy_ns: Some(busy),
            counters: Counters {
                dispatches: per_token as u64,
                passes: passes_per_token as u64,
                submits: 1,
                syncs: 1,
                barriers: per_token as u64 - passes_per_token as u64,
                bytes_uploaded: 16,
                bytes_downloaded: 8 * (per_token as u64 + 2),
                ..Default::default()
            },
            cpu: CpuTimes {
                upload_ns: 5_000,
                encode_ns: 195_000,
                submit_ns: 20_000,
                wait_ns: done - submit_start - 20_000,
            },
            name: None,
        });
    }
    p.buffers = ops
        .iter()
        .map(|o| BufferRecord {
            label: format!("{}.weight", o.label),
            kind: MemoryKind::Weights,
            bytes: o.bytes,
            created_token: None,
            dropped_token: None,
        })
        .chain([
            BufferRecord {
                label: "kv".into(),
                kind: MemoryKind::KvCache,
                bytes: 64 << 20,
                created_token: None,
                dropped_token: None,
            },
            BufferRecord {
                label: "x".into(),
                kind: MemoryKind::Activations,
                bytes: 4 << 10,
                created_token: None,
                dropped_token: None,
            },
        ])
        .collect();
    p.graph = Some(GraphDesc {
        buffers: vec![
            GraphBuffer {
                label: "x".into(),
                bytes: 4096,
            },
            GraphBuffer {
                label: "tmp".into(),
                bytes: 4096,
            },
        ],
        dispatches: (0..per_token)
            .map(|i| {
                let (a, b) = if i % 2 == 0 { (0, 1) } else { (1, 0) };
                let bind = |buffer| Binding {
                    buffer,
                    offset: 0,
                    bytes: 4096,
                };
                GraphDispatch {
                    reads: vec![bind(a)],
                    writes: vec![bind(b)],
                }
            })
            .collect(),
    });
    let m = |median: f64| Measured {
        median,
        p10: median * 0.97,
        p90: median * 1.03,
        n: 20,
    };
    p.ceilings = Some(Ceilings {
        format: gpuscope_trace::ceilings::CEILINGS_FORMAT,
        identity: CeilingsIdentity {
            adapter: p.adapter.name.clone(),
            backend: p.adapter.backend.clone(),
            driver: p.adapter.driver.clone(),
            driver_info: p.adapter.driver_info.clone(),
            tool: p.tool.clone(),
            measured_at: "2026-11-23T00:00:00Z".into(),
        },
        method: "synthetic".into(),
        copy_gbps: Some(m(4000.0)),
        read_gbps: Some(m(4400.0)),
        write_gbps: Some(m(4100.0)),
        f32_gflops: Some(m(60_000.0)),
        f16_gflops: Some(m(120_000.0)),
        dispatch_ns: Some(m(1_600.0)),
        cpu_dispatch_ns: Some(m(700.0)),
        timestamp_ns: None,
        fill: Some(FillWorkgroups {
            workgroups: 132,
            workgroup_size: 64,
        }),
        settings: Default::default(),
    });
    p
}
