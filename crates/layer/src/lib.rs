//! gpuscope-layer: a Vulkan layer that profiles any Vulkan compute program without a
//! change to it. `gpuscope attach -- PROGRAM ARGS` starts the program with the loader
//! told to load it; what it records (`gpuscope_trace::recording`) becomes a gpuscope
//! profile, so the report, `diff`, the gate, Perfetto, Markdown and HTML all work for
//! programs gpuscope did not build.
//!
//! What it records, per step (the work between two host syncs on a queue: a token of
//! a decode loop):
//! - every dispatch (`vkCmdDispatch`, `...Indirect`, `...Base`) with its pipeline, the
//!   debug-utils label open around it, its workgroups, and GPU timestamps around it
//!   (`dispatch`), on 1 in N dispatches (`sampled`), or around each command buffer
//!   (`pass`);
//! - counters: dispatches, command buffers, submits, host syncs, pipeline barriers (and
//!   the memory, buffer and image barriers in them), copies, fills and updates with
//!   their bytes, pipelines, buffers, allocations and descriptor updates;
//! - memory: every allocation by memory type, bound buffers by use;
//! - every SPIR-V module, with its compute entry points and workgroup sizes.
//!
//! Rules it keeps: query pools are its own, one set per command buffer, recycled; it
//! adds no wait and no submit to the program's queues and reads timestamps only after
//! the program's own sync; no panic crosses into the program (every hook's bookkeeping
//! runs under `guard`, which records the panic and lets the call go through); a
//! failure to write the recording is said once and the program runs on.
//!
//! Built on `ash` and `ash-layer`: ash for Vulkan's types and function pointer types (the
//! same ash wgpu builds on), ash-layer for the loader's layer-interface structs
//! (vk_layer.h). Google's `vulkan-layer` framework was the other candidate; it is not
//! published on crates.io (a git dependency would break `cargo install` and the
//! lockfile's reproducibility) and generates a hook for every Vulkan command, where this
//! layer needs about forty, written by hand in [`hooks`].

pub mod config;
mod device;
mod fns;
pub mod hooks;
mod registry;
pub mod spirv;
mod writer;

use std::sync::OnceLock;

/// The layer's name, as the manifest and `VK_INSTANCE_LAYERS` spell it.
pub const LAYER_NAME: &str = "VK_LAYER_GPUSCOPE_profile";

/// The layer's JSON manifest for the loader, with `library` as the path of the
/// shared library (absolute, so the manifest can live anywhere).
pub fn manifest(library: &std::path::Path) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "file_format_version": "1.2.0",
        "layer": {
            "name": LAYER_NAME,
            "type": "GLOBAL",
            "library_path": library,
            "api_version": "1.3.0",
            "implementation_version": "1",
            "description": "gpuscope: per-dispatch GPU timing, names, counters and memory of any Vulkan compute program",
            "functions": {
                "vkNegotiateLoaderLayerInterfaceVersion": "vkNegotiateLoaderLayerInterfaceVersion"
            },
            "instance_extensions": [{"name": "VK_EXT_debug_utils", "spec_version": "2"}],
            "disable_environment": {"GPUSCOPE_LAYER_DISABLE": "1"}
        }
    }))
    .expect("a JSON value serializes")
}

/// The configuration from the environment, read once.
pub(crate) fn config() -> &'static config::Config {
    static CONFIG: OnceLock<config::Config> = OnceLock::new();
    CONFIG.get_or_init(config::Config::from_env)
}

/// Runs the layer's bookkeeping `f`, catching any panic: the panic is recorded as a
/// problem of the recording and `None` returned, so the hook still calls the driver.
pub(crate) fn guard<R>(what: &'static str, f: impl FnOnce() -> R) -> Option<R> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => Some(r),
        Err(payload) => {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let _ = std::panic::catch_unwind(|| {
                writer::record(gpuscope_trace::recording::Record::Problem {
                    message: format!(
                        "panic in the layer's {what} bookkeeping: {why}; the call went through"
                    ),
                })
            });
            None
        }
    }
}

/// The `GPUSCOPE_LAYER_FAULT=panic-at-dispatch=N` test hook (see [`config::ENV_FAULT`]).
pub(crate) fn fault_check(dispatch: u64) {
    if config().fault_at_dispatch == Some(dispatch) {
        panic!("injected fault at dispatch {dispatch} (GPUSCOPE_LAYER_FAULT)");
    }
}
