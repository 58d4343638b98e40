//! What `gpuscope attach` asks of the layer, read from the environment once at load.
//! Without `GPUSCOPE_LAYER_OUT` the layer records nothing and only passes calls on.

use gpuscope_trace::TimingMode;

/// Where the recording goes (a directory `attach` made).
pub const ENV_OUT: &str = "GPUSCOPE_LAYER_OUT";
/// `auto`, `off`, `pass` (per command buffer), `dispatch`, `sampled`.
pub const ENV_TIMING: &str = "GPUSCOPE_LAYER_TIMING";
/// `sync` (a step ends at each host wait, the default) or `submit`.
pub const ENV_STEP: &str = "GPUSCOPE_LAYER_STEP";
/// In sampled mode, 1 in this many dispatches is timed (default 16).
pub const ENV_STRIDE: &str = "GPUSCOPE_LAYER_STRIDE";
/// `stop`: the program's command-buffer debug labels end at the layer, which reads them
/// for names, and are not passed to the driver. `attach` asks for it when the labels
/// exist only because it turned them on (`GGML_VK_DEBUG_MARKERS` and the like were not
/// set): the driver then does no work for labels nobody below the layer asked for.
/// Anything else (the default): labels go on to the driver as the program sent them.
pub const ENV_LABELS: &str = "GPUSCOPE_LAYER_LABELS";
/// Test hooks: `panic-at-dispatch=N` panics inside the layer's bookkeeping of the Nth
/// dispatch (no panic may reach the program: the call still goes through);
/// `fail-write` makes starting the recording fail as a full disk would.
pub const ENV_FAULT: &str = "GPUSCOPE_LAYER_FAULT";

/// The sampling stride of `sampled` when none is given: as `profile`'s sampled mode.
pub const DEFAULT_STRIDE: u32 = 16;

/// The sampling stride of `auto` on NVIDIA when none is given. A timed dispatch costs
/// the GPU about 6 µs there (`peak` on an H100): at 1 in 16, llama.cpp's 517 dispatches
/// of an 8B token paid ~32 x 6 µs, 3.5-6.4% of its 4 ms (BENCHMARKS.md, run 18). In
/// run 23 (variants' order rotated), llama-bench tg128 ran 6.7% below the plain run at
/// 1 in 64 and 4.4% below at 1 in 128, as with timing off: 1 in 128, and llama-bench's
/// 385 tokens still time each dispatch of a token about three times.
pub const AUTO_STRIDE: u32 = 128;

#[derive(Debug, Clone)]
pub struct Config {
    pub out: Option<std::path::PathBuf>,
    pub timing: TimingChoice,
    /// `GPUSCOPE_LAYER_STRIDE`, if set.
    pub stride: Option<u32>,
    pub step_per_submit: bool,
    /// Command-buffer labels end at the layer (`GPUSCOPE_LAYER_LABELS=stop`).
    pub stop_labels: bool,
    /// Panic in the bookkeeping of this dispatch (counted from 1), once.
    pub fault_at_dispatch: Option<u64>,
    /// Fail to start the recording.
    pub fault_write: bool,
}

/// The timing the user asked for; `Auto` is settled per device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimingChoice {
    Auto,
    Off,
    Pass,
    Dispatch,
    Sampled,
}

impl Config {
    pub fn from_env() -> Config {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let timing = match var(ENV_TIMING).as_deref() {
            Some("off") => TimingChoice::Off,
            Some("pass") => TimingChoice::Pass,
            Some("dispatch") => TimingChoice::Dispatch,
            Some("sampled") => TimingChoice::Sampled,
            _ => TimingChoice::Auto,
        };
        Config {
            out: var(ENV_OUT).map(Into::into),
            timing,
            stride: var(ENV_STRIDE)
                .and_then(|s| s.parse().ok())
                .filter(|&s| s >= 1),
            step_per_submit: var(ENV_STEP).as_deref() == Some("submit"),
            stop_labels: var(ENV_LABELS).as_deref() == Some("stop"),
            fault_write: var(ENV_FAULT).as_deref() == Some("fail-write"),
            fault_at_dispatch: var(ENV_FAULT)
                .and_then(|s| s.strip_prefix("panic-at-dispatch=").map(str::to_string))
                .and_then(|n| n.parse().ok()),
        }
    }

    /// The mode for a device: `auto` samples on NVIDIA, where a timestamp between
    /// dispatches costs microseconds of GPU time (as `profile`'s auto does), and times
    /// every dispatch elsewhere. Returns (mode, stride, why).
    pub fn timing_for(&self, vendor_id: u32) -> (TimingMode, u32, String) {
        const NVIDIA: u32 = 0x10de;
        match self.timing {
            TimingChoice::Off => (TimingMode::Off, 1, "requested".into()),
            TimingChoice::Pass => (
                TimingMode::Pass,
                1,
                "requested: a timestamp at each command buffer's start and end".into(),
            ),
            TimingChoice::Dispatch => (TimingMode::Dispatch, 1, "requested".into()),
            TimingChoice::Sampled => {
                let stride = self.stride.unwrap_or(DEFAULT_STRIDE);
                (
                    TimingMode::Dispatch,
                    stride,
                    format!(
                        "requested: 1 in {stride} dispatches, picked by a hash of their number"
                    ),
                )
            }
            TimingChoice::Auto if vendor_id == NVIDIA => {
                let stride = self.stride.unwrap_or(AUTO_STRIDE);
                (
                    TimingMode::Dispatch,
                    stride,
                    format!(
                        "auto: 1 in {stride} dispatches, picked by a hash of their number (a timestamp between dispatches costs microseconds of GPU time on NVIDIA)"
                    ),
                )
            }
            TimingChoice::Auto => (
                TimingMode::Dispatch,
                1,
                "auto: every dispatch (timestamps are cheap on this driver)".into(),
            ),
        }
    }
}

/// The timing the header states: that of the first device (set before the header is
/// written; see `hooks::create_device`).
pub fn timing_hint() -> (TimingMode, u32, String) {
    TIMING
        .get()
        .cloned()
        .unwrap_or((TimingMode::Off, 1, "no device".into()))
}

pub static TIMING: std::sync::OnceLock<(TimingMode, u32, String)> = std::sync::OnceLock::new();
