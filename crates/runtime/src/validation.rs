//! `--validate`: the backend's validation messages, collected so a caller can attribute
//! them to the dispatch that caused them.
//!
//! [`crate::GpuOptions::validate`] opens the instance with `InstanceFlags::VALIDATION`,
//! which loads the Vulkan validation layer when it is installed (Debian:
//! `vulkan-validationlayers`; wgpu logs that it is missing otherwise). wgpu-hal reports
//! the layer's messages through the `log` crate; [`install`] sets a logger that keeps
//! those of warning level and above from wgpu's backend crates. wgpu's own API validation
//! is always on and surfaces as [`crate::GpuError::Validation`] instead.
//!
//! The logger is process-wide; when another one is already set (e.g. `GPUSCOPE_LOG`'s),
//! messages go there instead and [`installed`] says so.
//!
//! Left out: "Invalid source language operand" — layers older than naga's SPIR-V
//! (Debian 12's 1.3.239) do not know the WGSL source-language id naga writes into every
//! module; seen on lavapipe for every shader, harmless.
//!
//! Note that wgpu turns `VALIDATION` on by itself in builds with debug assertions, so a
//! debug build loads the layer (when installed) even without `--validate`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

struct Sink {
    /// Messages, and whether the last record was kept (wgpu logs a message's object
    /// list as records of their own that start with a tab).
    messages: Mutex<(Vec<String>, bool)>,
}

static SINK: Sink = Sink {
    messages: Mutex::new((Vec::new(), false)),
};

const KNOWN_FALSE_POSITIVE: &str = "Invalid source language operand";
static INSTALLED: AtomicBool = AtomicBool::new(false);

impl log::Log for Sink {
    fn enabled(&self, m: &log::Metadata) -> bool {
        // The Vulkan debug messenger's records (not other backends' warnings).
        m.level() <= log::Level::Warn && m.target().starts_with("wgpu_hal::vulkan")
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let text = record.args().to_string();
        let mut guard = self.messages.lock().unwrap();
        let (messages, last_kept) = &mut *guard;
        if text.starts_with('\t') {
            if *last_kept {
                if let Some(m) = messages.last_mut() {
                    m.push_str(&format!(" ({})", text.trim()));
                }
            }
            return;
        }
        *last_kept = !text.contains(KNOWN_FALSE_POSITIVE);
        if *last_kept {
            messages.push(format!("{}: {}", record.level(), text.replace('\n', " ")));
        }
    }

    fn flush(&self) {}
}

/// Sets the collecting logger (once per process).
pub fn install() {
    if log::set_logger(&SINK).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

/// Whether messages are being collected here.
pub fn installed() -> bool {
    INSTALLED.load(Ordering::Relaxed)
}

/// The messages since the last call.
pub fn take() -> Vec<String> {
    std::mem::take(&mut SINK.messages.lock().unwrap().0)
}

/// Whether the Vulkan validation layer is installed (its manifest in a standard place).
pub fn vulkan_layer_installed() -> bool {
    [
        "/usr/share/vulkan/explicit_layer.d",
        "/etc/vulkan/explicit_layer.d",
    ]
    .iter()
    .any(|d| {
        std::path::Path::new(d)
            .join("VkLayer_khronos_validation.json")
            .exists()
    })
}
