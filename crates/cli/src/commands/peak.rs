use std::io::Write;

use anyhow::Context;
use gpuscope_report::cache;
use gpuscope_runtime::{measure_ceilings, Gpu, PeakOptions};

use super::ceilings::{cached, tool};
use crate::args::PeakArgs;
use crate::exit::Exit;

pub fn run(args: &PeakArgs) -> Result<(), Exit> {
    let gpu = Gpu::new(&args.device.gpu_options())?;
    let adapter = gpu.adapter_desc();
    let mut out = std::io::stdout().lock();
    if !args.refresh {
        if let Some((c, path)) = cached(&adapter, true) {
            out.write_all(gpuscope_report::render::render_ceilings(&c).as_bytes())?;
            writeln!(
                out,
                "Cached in {path}; `gpuscope peak --refresh` measures again"
            )?;
            return Ok(());
        }
    }
    let opts = PeakOptions {
        bytes: args.mib << 20,
        repetitions: args.repetitions.max(1),
        target_ns: (args.target_ms * 1e6) as u64,
        chain: args.chain,
        tool: tool(),
    };
    eprintln!("gpuscope: measuring the ceilings of {} ...", adapter.name);
    let c = measure_ceilings(&gpu, &opts, |what| eprintln!("gpuscope:   {what}"))?;
    // What was measured is printed before the cache is written: a failed write loses
    // nothing.
    out.write_all(gpuscope_report::render::render_ceilings(&c).as_bytes())?;
    let root = cache::cache_root().with_context(|| {
        format!(
            "no cache directory on this platform: set {} to keep the ceilings",
            cache::CACHE_DIR_ENV
        )
    })?;
    let path = cache::store(&root, &c)?;
    writeln!(out, "Cached in {}", path.display())?;
    Ok(())
}
