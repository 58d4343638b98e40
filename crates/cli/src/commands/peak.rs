use std::io::Write;

use gpuscope_runtime::{measure_peak, Gpu};

use crate::args::DeviceArgs;
use crate::exit::Exit;

pub fn run(mib: u64, repetitions: usize, device: &DeviceArgs) -> Result<(), Exit> {
    let gpu = Gpu::new(&device.gpu_options())?;
    let r = measure_peak(&gpu, mib << 20, repetitions.max(1))?;
    let info = gpu.adapter_desc();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "Adapter: {} ({}, {})",
        info.name, info.backend, info.driver
    )?;
    writeln!(
        out,
        "copy kernel, {} MiB, read + write counted: median {:.1} GB/s, max {:.1} GB/s ({} runs, {})",
        r.copy_bytes >> 20,
        r.copy_gbps_median,
        r.copy_gbps_max,
        r.repetitions,
        r.method
    )?;
    match r.tiny_dispatch_us {
        Some(us) => writeln!(
            out,
            "dependent tiny dispatch: {us:.2} µs of GPU time each (chain of 1000 in one pass)"
        )?,
        None => writeln!(
            out,
            "dependent tiny dispatch: not measured (no GPU timestamps)"
        )?,
    }
    Ok(())
}
