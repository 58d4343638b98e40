//! Test support shared by every crate's GPU tests.
//!
//! A GPU test that finds no adapter never passes silently: with `CI` set it fails, and
//! otherwise it prints `skipped: no adapter` with the reason and appends a line to the
//! file `$GPUSCOPE_SKIP_LOG` names (when set), so a run can say how many GPU tests did
//! not run (`.ci/run` sets both and fails on any skip).
//!
//! Also the fault the CLI's hidden `--fault oom-after=N` test hook provokes
//! ([`allocate_over_budget`]): GPU resources made on purpose belong with the runtime.

use std::io::Write;
use std::sync::OnceLock;

use crate::device::{Gpu, GpuOptions};

/// One GPU device for a whole test binary, or `None` on a developer machine without an
/// adapter (the skip is printed and counted, see the module doc).
///
/// With `CI` set, a missing adapter panics instead: a GPU test that silently skipped in
/// CI would pass without the GPU path having run.
pub fn shared_gpu() -> Option<&'static Gpu> {
    static GPU: OnceLock<Result<Gpu, String>> = OnceLock::new();
    match GPU.get_or_init(|| Gpu::new(&GpuOptions::default()).map_err(|e| e.to_string())) {
        Ok(gpu) => Some(gpu),
        Err(err) => {
            if std::env::var_os("CI").is_some() {
                panic!("no GPU adapter in CI: {err}");
            }
            skipped(&format!("no adapter: {err}"));
            None
        }
    }
}

/// Says that the calling test did not run its GPU part, and why: on stderr, and as one
/// line of `$GPUSCOPE_SKIP_LOG` when that is set.
pub fn skipped(why: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    eprintln!("skipped: {test}: {why}");
    if let Some(path) = std::env::var_os("GPUSCOPE_SKIP_LOG") {
        let line = format!("{test}: {why}\n");
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(line.as_bytes()));
        if let Err(e) = appended {
            eprintln!(
                "could not count the skip in {}: {e}",
                path.to_string_lossy()
            );
        }
    }
}

/// Caps the address space at what the process maps now plus 64 MiB, allocates a buffer
/// of the device's largest size outside any error scope (the driver's allocation
/// fails; wgpu reports it as out of memory to the device's error handler, which the
/// decode loop checks at every step), then restores the cap.
#[cfg(target_os = "linux")]
pub fn allocate_over_budget(gpu: &Gpu) {
    const MARGIN: u64 = 64 << 20;
    let mapped = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .map(|pages| pages * 4096)
        .expect("/proc/self/statm gives the mapped size");
    let mut old = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit with a valid rlimit struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_AS, &mut old);
        let capped = libc::rlimit {
            rlim_cur: (mapped + MARGIN).min(old.rlim_max) as libc::rlim_t,
            rlim_max: old.rlim_max,
        };
        libc::setrlimit(libc::RLIMIT_AS, &capped);
    }
    let size = gpu.limits().max_buffer_size;
    let buffer = gpu.device().create_buffer(&crate::wgpu::BufferDescriptor {
        label: Some("gpuscope.fault.over_budget"),
        size: size.max(MARGIN * 2),
        usage: crate::wgpu::BufferUsages::STORAGE,
        mapped_at_creation: false,
    });
    drop(buffer);
    // SAFETY: as above.
    unsafe {
        libc::setrlimit(libc::RLIMIT_AS, &old);
    }
}

#[cfg(not(target_os = "linux"))]
pub fn allocate_over_budget(_gpu: &Gpu) {
    eprintln!("gpuscope: --fault oom-after needs Linux (setrlimit on the address space)");
}
