//! Measured device peaks: the bandwidth a plain copy kernel reaches, and the cost of a
//! dependent tiny dispatch. Rooflines use these, never datasheet figures.

use crate::device::Gpu;
use crate::dispatch::{Cost, Dispatch, Graph, Section};
use crate::error::GpuError;
use crate::resources::ShaderSource;
use crate::step::StepRunner;

const COPY: ShaderSource = ShaderSource {
    name: "peak_copy",
    wgsl: r#"
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
override N: u32;
@compute @workgroup_size(256)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // A grid-stride loop: a fixed grid covers any size within the 65535 limit.
    let stride = nwg.x * 256u;
    for (var i = gid.x; i < N; i += stride) {
        dst[i] = src[i];
    }
}
"#,
};

const TINY: ShaderSource = ShaderSource {
    name: "peak_tiny",
    wgsl: r#"
@group(0) @binding(0) var<storage, read_write> v: array<f32>;
@compute @workgroup_size(1)
fn main() {
    v[0] = v[0] + 1.0;
}
"#,
};

/// What `peak` measured.
#[derive(Debug, Clone)]
pub struct PeakReport {
    pub copy_bytes: u64,
    /// Read + write bytes per second of the copy kernel, median of the repetitions, GB/s.
    pub copy_gbps_median: f64,
    pub copy_gbps_max: f64,
    /// GPU time of one dependent tiny dispatch (a chain of them in one pass), µs.
    pub tiny_dispatch_us: Option<f64>,
    pub repetitions: usize,
    /// How the times were measured: GPU timestamps or wall-clock.
    pub method: String,
}

/// Measures copy bandwidth over `bytes` (capped by the device's binding limit) and the
/// cost of a dependent tiny dispatch.
pub fn measure_peak(gpu: &Gpu, bytes: u64, repetitions: usize) -> Result<PeakReport, GpuError> {
    let max_binding = gpu.limits().max_storage_buffer_binding_size as u64;
    let bytes = bytes.min(max_binding).min(gpu.limits().max_buffer_size) / 16 * 16;
    let n = (bytes / 16) as u32;
    let src = gpu.create_buffer("peak.src", bytes)?;
    let dst = gpu.create_buffer("peak.dst", bytes)?;
    // Never benchmark on zeros: fill the source with a pattern.
    let pattern: Vec<u8> = (0..(1u64 << 20).min(bytes))
        .map(|i| (i * 31 % 251) as u8)
        .collect();
    let mut off = 0;
    while off < bytes {
        let len = pattern.len().min((bytes - off) as usize);
        gpu.write_buffer(&src, off, &pattern[..len]);
        off += len as u64;
    }
    let pipeline = gpu.pipeline(&COPY, "main", &[("N", n as f64)])?;
    let bind = gpu.bind_group(&pipeline, &[&src, &dst])?;
    let workgroups = n.div_ceil(256).clamp(1, 65535);
    let copy = Dispatch::new(
        "peak_copy",
        pipeline,
        bind,
        [workgroups, 1, 1],
        Cost {
            bytes: 2 * bytes,
            flops: 0,
        },
        &[&src],
        &[&dst],
    );
    let graph = Graph {
        sections: vec![Section::new("copy", None, vec![copy])],
    };
    let mut runner = StepRunner::new(gpu, &graph, &[])?;
    let timed = gpu.timing() != gpuscope_trace::TimingMode::Off;
    let mut rates = Vec::new();
    for i in 0..repetitions + 3 {
        let out = runner.step(gpu, &graph, &[])?;
        let ns = if timed {
            out.gpu_busy_ns
        } else {
            Some(out.wall_ns)
        };
        if i >= 3 {
            if let Some(ns) = ns.filter(|&n| n > 0) {
                rates.push(2.0 * bytes as f64 / ns as f64);
            }
        }
    }
    rates.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let tiny_dispatch_us = if gpu.timing() != gpuscope_trace::TimingMode::Off {
        let v = gpu.create_buffer("peak.tiny", 16)?;
        let p = gpu.pipeline(&TINY, "main", &[])?;
        let b = gpu.bind_group(&p, &[&v])?;
        const CHAIN: usize = 1000;
        let chain: Vec<Dispatch> = (0..CHAIN)
            .map(|_| {
                Dispatch::new(
                    "peak_tiny",
                    p.clone(),
                    b.clone(),
                    [1, 1, 1],
                    Cost::default(),
                    &[&v],
                    &[&v],
                )
            })
            .collect();
        let g = Graph {
            sections: vec![Section::new("tiny", None, chain)],
        };
        let mut r = StepRunner::with_timing(gpu, &g, &[], gpuscope_trace::TimingMode::Pass)
            .or_else(|_| StepRunner::new(gpu, &g, &[]))?;
        let mut per = Vec::new();
        for i in 0..8 {
            let out = r.step(gpu, &g, &[])?;
            if i >= 2 {
                if let Some(ns) = out.gpu_busy_ns {
                    per.push(ns as f64 / CHAIN as f64 / 1000.0);
                }
            }
        }
        per.sort_by(|a, b| a.partial_cmp(b).unwrap());
        per.get(per.len() / 2).copied()
    } else {
        None
    };
    Ok(PeakReport {
        copy_bytes: bytes,
        copy_gbps_median: rates.get(rates.len() / 2).copied().unwrap_or(0.0),
        copy_gbps_max: rates.last().copied().unwrap_or(0.0),
        tiny_dispatch_us,
        repetitions: rates.len(),
        method: if timed {
            "GPU timestamps around the pass".into()
        } else {
            "wall-clock with a sync".into()
        },
    })
}
