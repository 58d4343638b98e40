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

use crate::device::Gpu;

/// A GPU device for the calling test, or `None` on a developer machine without an
/// adapter (the skip is printed and counted, see the module doc).
///
/// The devices are shared by the whole test binary, one per test running at once: a
/// test (libtest gives each its own thread) takes the device no running test holds,
/// made when none is free, and gives it back when its thread ends. Two tests at once on
/// one device wait for each other in lavapipe, which compiles a pipeline at a time per
/// device: the ops tests with Mesa's shader cache empty took 175 s on one device against
/// 103 s on one per running test (2-core VM, BENCHMARKS.md). Every call from one thread
/// returns the same device, so a test's buffers and pipelines stay on one device;
/// threads a test spawns take devices of their own.
///
/// With `CI` set, a missing adapter panics instead: a GPU test that silently skipped in
/// CI would pass without the GPU path having run.
pub fn shared_gpu() -> Option<&'static Gpu> {
    match pool::device_of_this_thread() {
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

/// The devices of [`shared_gpu`] and which are held.
mod pool {
    use std::sync::Mutex;

    use crate::device::{Gpu, GpuOptions};

    struct Device {
        gpu: &'static Gpu,
        held: bool,
    }

    /// Every device made so far (leaked: they live as long as the test binary); the
    /// first error stays, so that every test sees why there is no adapter.
    static DEVICES: Mutex<Vec<Device>> = Mutex::new(Vec::new());
    static NO_ADAPTER: Mutex<Option<String>> = Mutex::new(None);

    /// Gives the device back when the thread that took it ends.
    struct Lease(usize, &'static Gpu);

    impl Drop for Lease {
        fn drop(&mut self) {
            let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(d) = devices.get_mut(self.0) {
                d.held = false;
            }
        }
    }

    thread_local! {
        static LEASE: std::cell::OnceCell<Lease> = const { std::cell::OnceCell::new() };
    }

    pub(super) fn device_of_this_thread() -> Result<&'static Gpu, String> {
        if let Some(gpu) = LEASE.with(|l| l.get().map(|l| l.1)) {
            return Ok(gpu);
        }
        if let Some(err) = NO_ADAPTER.lock().unwrap_or_else(|e| e.into_inner()).clone() {
            return Err(err);
        }
        let lease = take()?;
        let gpu = lease.1;
        LEASE.with(|l| {
            let _ = l.set(lease);
        });
        Ok(gpu)
    }

    /// A free device, made if none is (outside the lock: making one takes a while).
    fn take() -> Result<Lease, String> {
        {
            let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(i) = devices.iter().position(|d| !d.held) {
                devices[i].held = true;
                return Ok(Lease(i, devices[i].gpu));
            }
        }
        match Gpu::new(&GpuOptions::default()) {
            Ok(gpu) => {
                let gpu: &'static Gpu = Box::leak(Box::new(gpu));
                let mut devices = DEVICES.lock().unwrap_or_else(|e| e.into_inner());
                devices.push(Device { gpu, held: true });
                Ok(Lease(devices.len() - 1, gpu))
            }
            Err(e) => {
                let err = e.to_string();
                *NO_ADAPTER.lock().unwrap_or_else(|e| e.into_inner()) = Some(err.clone());
                Err(err)
            }
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
