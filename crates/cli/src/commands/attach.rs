//! `gpuscope attach -- PROGRAM ARGS`: profile a Vulkan program gpuscope did not build.
//!
//! The program starts with the Vulkan loader told to load gpuscope's layer
//! (`VK_ADD_LAYER_PATH` pointing at a manifest written for this run, and the layer
//! enabled by `VK_LOADER_LAYERS_ENABLE` and, for loaders older than 1.3.234,
//! `VK_INSTANCE_LAYERS`); its stdin, stdout and stderr are the terminal's and its exit
//! code is `attach`'s. When it ends, the layer's recording becomes a profile: the report
//! goes to stderr (stdout is the program's), `--json` / `--compact` / `--trace` are
//! written, `--output DIR` keeps the raw recording for `gpuscope report DIR`.
//!
//! `attach` also asks for names: `GGML_VK_DEBUG_MARKERS=1` (llama.cpp names its
//! pipelines and labels each node), `GPUSCOPE_DEBUG_MARKERS=1` (gpuscope's own runtime
//! labels each dispatch) and `WGPU_DEBUG=1` (wgpu names its objects). Labels that exist
//! only because `attach` asked for them end at the layer (see [`labels_end_at_layer`]).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context};
use gpuscope_layer::config as layer;
use gpuscope_report::analysis::token_stats_steady;
use gpuscope_trace::recording::{is_recording, read_recording, RecordingError, ERROR_FILE};
use gpuscope_trace::{Overhead, Profile};

use crate::args::AttachArgs;
use crate::exit::Exit;

/// The layer library's file name on this platform.
const LIBRARY: &str = if cfg!(target_os = "macos") {
    "libgpuscope_layer.dylib"
} else if cfg!(windows) {
    "gpuscope_layer.dll"
} else {
    "libgpuscope_layer.so"
};

pub fn run(args: &AttachArgs) -> Result<(), Exit> {
    let library = layer_library(args.layer.as_deref())?;
    let manifest_dir = tempfile::tempdir().context("a directory for the layer's manifest")?;
    std::fs::write(
        manifest_dir.path().join("VkLayer_gpuscope.json"),
        gpuscope_layer::manifest(&library),
    )
    .context("writing the layer's manifest")?;
    let baseline = if args.overhead {
        eprintln!("gpuscope: attach --overhead: first a run with timing off");
        let off = launch(args, manifest_dir.path(), "off", None)?;
        match off.recording.as_ref().map(|d| read_recording(d.path())) {
            Some(Ok(r)) => Some(r.to_profile()),
            _ => None,
        }
    } else {
        None
    };
    let output = args.output.clone();
    let run = launch(args, manifest_dir.path(), &args.timing, output.as_deref())?;
    let dir = output
        .as_deref()
        .or(run.recording.as_ref().map(|d| d.path()));
    let layer_error = dir
        .and_then(|d| std::fs::read_to_string(d.join(ERROR_FILE)).ok())
        .map(|why| why.trim().to_string());
    if let Some(why) = &layer_error {
        eprintln!(
            "gpuscope: the layer could not record {}: {why}; the program ran on",
            program_name(args)
        );
    }
    let Some(dir) = dir.filter(|d| is_recording(d)) else {
        if layer_error.is_some() {
            return Err(Exit::program(run.status));
        }
        eprintln!(
            "gpuscope: {} created no Vulkan device with the layer loaded: nothing to profile (a program on CUDA, Metal or DX12, or one that stopped before it reached Vulkan)",
            program_name(args)
        );
        return Err(Exit::program(run.status));
    };
    let mut profile = match read_recording(dir) {
        Ok(r) => r.to_profile(),
        Err(RecordingError::Empty { .. }) => {
            eprintln!(
                "gpuscope: {} created no Vulkan device with the layer loaded: nothing to profile",
                program_name(args)
            );
            return Err(Exit::program(run.status));
        }
        Err(e) => {
            return Err(anyhow::Error::new(e)
                .context("reading the layer's recording")
                .into())
        }
    };
    // The adapter's measured ceilings, as `profile` embeds them: rooflines, and spans
    // corrected for the timestamps around them (`peak` measures what they add).
    if let Some((c, path)) = super::ceilings::cached(&profile.adapter, false) {
        eprintln!("gpuscope: using the measured ceilings in {path}");
        profile.ceilings = Some(c);
    }
    if let Some(why) = killed(run.status) {
        profile.incomplete = Some(why);
    } else if let Some(why) = layer_error {
        profile.incomplete = Some(format!("the layer stopped recording: {why}"));
    }
    if let Some(off) = baseline {
        profile.overhead = Some(Overhead {
            mode: profile.timing.mode,
            tok_per_s_profiled: steady_rate(&profile).unwrap_or(0.0),
            tok_per_s_off: steady_rate(&off).unwrap_or(0.0),
            off_wall_ns: off.tokens.iter().map(|t| t.wall_ns).collect(),
        });
    }
    write_outputs(args, &profile)?;
    if let Some(d) = &args.output {
        eprintln!(
            "gpuscope: the layer's recording is in {} (`gpuscope report {}` reads it)",
            d.display(),
            d.display()
        );
    }
    let text = gpuscope_report::render::render_text(&profile);
    std::io::stderr().write_all(text.as_bytes())?;
    Err(Exit::program(run.status))
}

/// The layer library: `--layer`, else `$GPUSCOPE_LAYER_LIBRARY`, else beside this binary
/// (where `cargo build` puts both) or in its `deps/` folder, the newer of the two.
fn layer_library(given: Option<&Path>) -> Result<PathBuf, Exit> {
    let from_env = std::env::var_os("GPUSCOPE_LAYER_LIBRARY").map(PathBuf::from);
    if let Some(p) = given.map(Path::to_path_buf).or(from_env).as_deref() {
        return p
            .canonicalize()
            .with_context(|| format!("--layer {}", p.display()))
            .map_err(Exit::from);
    }
    let exe = std::env::current_exe().context("finding the gpuscope binary")?;
    let dir = exe.parent().unwrap_or(Path::new("."));
    // Both exist after a workspace build; a build of the CLI alone refreshes only the
    // one in deps/: the newer is this build's.
    [dir.join(LIBRARY), dir.join("deps").join(LIBRARY)]
        .into_iter()
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p)
        .ok_or_else(|| {
            anyhow!(
                "the layer library {LIBRARY} is not beside {}: build it (`cargo build --release -p gpuscope-layer`) or give --layer PATH",
                exe.display()
            )
            .into()
        })
}

struct Launched {
    status: ExitStatus,
    /// The temporary recording directory, when `--output` was not given.
    recording: Option<tempfile::TempDir>,
}

/// Runs the program once under the layer, recording into `output` (else a temporary
/// directory); SIGINT and SIGTERM sent to `attach` go on to the program.
fn launch(
    args: &AttachArgs,
    manifest_dir: &Path,
    timing: &str,
    output: Option<&Path>,
) -> Result<Launched, Exit> {
    let temp = match output {
        Some(d) => {
            std::fs::create_dir_all(d).with_context(|| format!("--output {}", d.display()))?;
            None
        }
        None => Some(tempfile::tempdir().context("a directory for the recording")?),
    };
    let dir = output.map_or_else(
        || temp.as_ref().expect("made above").path().to_path_buf(),
        Path::to_path_buf,
    );
    let (program, rest) = args
        .program
        .split_first()
        .ok_or_else(|| anyhow!("no program to run"))?;
    let mut command = Command::new(program);
    command.args(rest);
    let enable = gpuscope_layer::LAYER_NAME;
    command
        .env(
            "VK_ADD_LAYER_PATH",
            append_path("VK_ADD_LAYER_PATH", manifest_dir),
        )
        .env(
            "VK_LOADER_LAYERS_ENABLE",
            append_list("VK_LOADER_LAYERS_ENABLE", enable, ','),
        )
        .env(
            "VK_INSTANCE_LAYERS",
            append_list("VK_INSTANCE_LAYERS", enable, ':'),
        )
        .env(layer::ENV_OUT, &dir)
        .env(layer::ENV_TIMING, timing)
        .env(layer::ENV_STEP, &args.step)
        .env(
            layer::ENV_STRIDE,
            args.stride.map_or(String::new(), |s| s.to_string()),
        )
        .env(
            layer::ENV_LABELS,
            labels_end_at_layer(|k| std::env::var_os(k).is_some()),
        )
        .envs(NAME_SWITCHES.map(|k| (k, "1")));
    let mut child = command
        .spawn()
        .with_context(|| format!("starting {}", program.to_string_lossy()))?;
    let status = wait_forwarding_signals(&mut child)?;
    Ok(Launched {
        status,
        recording: temp,
    })
}

/// The environment variables with which `attach` asks programs for names.
const NAME_SWITCHES: [&str; 3] = [
    "GGML_VK_DEBUG_MARKERS",
    "GPUSCOPE_DEBUG_MARKERS",
    "WGPU_DEBUG",
];

/// `stop` when the program's debug labels will exist only because `attach` asked for
/// them (none of [`NAME_SWITCHES`] `is_set` in attach's environment): the layer reads
/// them and the driver does no work for them. When the user had asked for labels
/// (for a capture tool below the layer, say), they go on to the driver.
fn labels_end_at_layer(is_set: impl Fn(&str) -> bool) -> &'static str {
    if NAME_SWITCHES.iter().any(|k| is_set(k)) {
        "pass"
    } else {
        "stop"
    }
}

/// Waits for the child; a SIGINT or SIGTERM sent to `attach` alone is passed on (one
/// sent to the terminal's process group reaches the program by itself).
fn wait_forwarding_signals(child: &mut std::process::Child) -> Result<ExitStatus, Exit> {
    let caught = Arc::new(AtomicUsize::new(0));
    #[cfg(unix)]
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let caught = caught.clone();
        // SAFETY: the closure stores to an atomic, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                caught.store(sig as usize, Ordering::SeqCst)
            })
            .context("installing the signal handler")?;
        }
    }
    let mut forwarded = false;
    loop {
        if let Some(status) = child.try_wait().context("waiting for the program")? {
            return Ok(status);
        }
        let sig = caught.load(Ordering::SeqCst);
        if sig != 0 && !forwarded {
            forwarded = true;
            #[cfg(unix)]
            // SAFETY: kill(2) on our own child's pid.
            unsafe {
                libc::kill(child.id() as libc::pid_t, sig as libc::c_int);
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn append_path(var: &str, dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    if let Some(old) = std::env::var_os(var) {
        paths.extend(std::env::split_paths(&old));
    }
    std::env::join_paths(paths).unwrap_or_else(|_| dir.as_os_str().to_owned())
}

fn append_list(var: &str, item: &str, sep: char) -> String {
    match std::env::var(var) {
        Ok(old) if !old.is_empty() => format!("{old}{sep}{item}"),
        _ => item.to_string(),
    }
}

/// Why the profile is incomplete when the program was killed.
fn killed(status: ExitStatus) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        status.signal().map(|s| {
            format!("the program was killed by signal {s}; the steps it completed are kept")
        })
    }
    #[cfg(not(unix))]
    None
}

/// Steps per second over the steady steps, if there are any.
fn steady_rate(p: &Profile) -> Option<f64> {
    token_stats_steady(p).tok_per_s
}

fn write_outputs(args: &AttachArgs, p: &Profile) -> Result<(), Exit> {
    if let Some(path) = &args.json {
        gpuscope_trace::io::save_profile(path, p)?;
        eprintln!("gpuscope: profile written to {}", path.display());
    }
    if let Some(path) = &args.compact {
        gpuscope_trace::compact::save(path, p)?;
        eprintln!("gpuscope: compact profile written to {}", path.display());
    }
    if let Some(path) = &args.trace {
        super::report::write_trace(path, p, None)?;
    }
    Ok(())
}

fn program_name(args: &AttachArgs) -> String {
    args.program
        .first()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::{labels_end_at_layer, NAME_SWITCHES};

    #[test]
    fn labels_end_at_the_layer_only_when_attach_alone_asked_for_them() {
        assert_eq!(labels_end_at_layer(|_| false), "stop");
        for switch in NAME_SWITCHES {
            assert_eq!(labels_end_at_layer(|k| k == switch), "pass", "{switch}");
        }
    }
}
