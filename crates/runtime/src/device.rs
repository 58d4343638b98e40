//! Adapter choice, feature negotiation and the [`Gpu`] handle every layer above uses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use gpuscope_trace::{AdapterDesc, Counters, TimingMode};

use crate::error::GpuError;
use crate::resources::PipelineCache;

/// Which timing the caller wants. `Auto` takes the finest the adapter offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimingRequest {
    #[default]
    Auto,
    Exactly(TimingMode),
}

/// How to pick and open the device.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Case-insensitive substring of the adapter name; `GPUSCOPE_ADAPTER` when `None`.
    pub adapter: Option<String>,
    /// `vulkan`, `metal`, `dx12` or `gl`; `GPUSCOPE_BACKEND` when `None`.
    pub backend: Option<String>,
    pub timing: TimingRequest,
}

/// Counters kept with atomics so that `&Gpu` can be shared; each bump is one relaxed add.
#[derive(Default)]
pub(crate) struct AtomicCounters {
    pub dispatches: AtomicU64,
    pub passes: AtomicU64,
    pub submits: AtomicU64,
    pub syncs: AtomicU64,
    pub barriers: AtomicU64,
    pub buffers_created: AtomicU64,
    pub bind_groups_created: AtomicU64,
    pub pipelines_created: AtomicU64,
    pub bytes_uploaded: AtomicU64,
    pub bytes_downloaded: AtomicU64,
}

impl AtomicCounters {
    pub(crate) fn add(field: &AtomicU64, n: u64) {
        field.fetch_add(n, Ordering::Relaxed);
    }

    fn snapshot(&self) -> Counters {
        let g = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Counters {
            dispatches: g(&self.dispatches),
            passes: g(&self.passes),
            submits: g(&self.submits),
            syncs: g(&self.syncs),
            barriers: g(&self.barriers),
            buffers_created: g(&self.buffers_created),
            bind_groups_created: g(&self.bind_groups_created),
            pipelines_created: g(&self.pipelines_created),
            bytes_uploaded: g(&self.bytes_uploaded),
            bytes_downloaded: g(&self.bytes_downloaded),
        }
    }
}

/// An open device with its queue, the timing mode it supports, counters and caches.
pub struct Gpu {
    pub(crate) device: wgpu::Device,
    pub(crate) queue: wgpu::Queue,
    pub(crate) info: wgpu::AdapterInfo,
    pub(crate) features: wgpu::Features,
    pub(crate) limits: wgpu::Limits,
    pub(crate) timing: TimingMode,
    pub(crate) timing_reason: String,
    pub(crate) counters: AtomicCounters,
    pub(crate) pipelines: PipelineCache,
    pub(crate) next_buffer_id: AtomicU64,
    pub(crate) staging: crate::pool::SharedPool,
    /// Errors wgpu reports outside any error scope (device loss, late validation).
    pub(crate) uncaptured: Arc<Mutex<Option<String>>>,
    /// Records each step's uploads while a capture is being made (off: one atomic load).
    pub(crate) tap: crate::capture::StepTap,
}

fn backend_rank(b: wgpu::Backend) -> u32 {
    match b {
        wgpu::Backend::Vulkan => 0,
        wgpu::Backend::Metal => 1,
        wgpu::Backend::Dx12 => 2,
        wgpu::Backend::Gl => 3,
        _ => 4,
    }
}

fn device_rank(t: wgpu::DeviceType) -> u32 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Cpu => 3,
        wgpu::DeviceType::Other => 4,
    }
}

/// Parses `--backend` values.
pub fn parse_backend(name: &str) -> Result<wgpu::Backends, GpuError> {
    match name.to_ascii_lowercase().as_str() {
        "vulkan" | "vk" => Ok(wgpu::Backends::VULKAN),
        "metal" => Ok(wgpu::Backends::METAL),
        "dx12" | "d3d12" => Ok(wgpu::Backends::DX12),
        "gl" | "gles" | "opengl" => Ok(wgpu::Backends::GL),
        other => Err(GpuError::Invalid(format!(
            "unknown backend `{other}`: expected vulkan, metal, dx12 or gl"
        ))),
    }
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

impl Gpu {
    /// Picks the best adapter matching `opts` (discrete before integrated before
    /// software; Vulkan before Metal, DX12, GL) and opens it with the adapter's own limits
    /// (wgpu's defaults are lower) and the timestamp features the timing mode needs.
    pub fn new(opts: &GpuOptions) -> Result<Gpu, GpuError> {
        let _span = tracing::info_span!("gpu_open").entered();
        let adapter_filter = opts
            .adapter
            .clone()
            .or_else(|| env_nonempty("GPUSCOPE_ADAPTER"));
        let backend_name = opts
            .backend
            .clone()
            .or_else(|| env_nonempty("GPUSCOPE_BACKEND"));
        let backends = match &backend_name {
            Some(name) => parse_backend(name)?,
            None => wgpu::Backends::all(),
        };
        let adapters = enumerate(backends);
        let describe = |a: &wgpu::Adapter| {
            let i = a.get_info();
            format!("\"{}\" ({:?}, {:?})", i.name, i.backend, i.device_type)
        };
        let available: Vec<String> = adapters.iter().map(describe).collect();
        let adapter = adapters
            .into_iter()
            .filter(|a| match &adapter_filter {
                Some(f) => a.get_info().name.to_lowercase().contains(&f.to_lowercase()),
                None => true,
            })
            .min_by_key(|a| {
                let i = a.get_info();
                (device_rank(i.device_type), backend_rank(i.backend))
            });
        let Some(adapter) = adapter else {
            let mut filter = String::new();
            if let Some(f) = &adapter_filter {
                filter.push_str(&format!(" matching \"{f}\""));
            }
            if let Some(b) = &backend_name {
                filter.push_str(&format!(" on {b}"));
            }
            return Err(GpuError::NoAdapter {
                filter,
                available: if available.is_empty() {
                    "none".into()
                } else {
                    available.join(", ")
                },
                hint: "On a machine without a GPU install a software Vulkan driver \
                       (Debian/Ubuntu: `apt-get install mesa-vulkan-drivers`); \
                       otherwise check --adapter / --backend."
                    .into(),
            });
        };
        let info = adapter.get_info();
        let offered = adapter.features();
        let (timing, timing_reason) = choose_timing(opts.timing, offered, &info.name)?;
        let mut features = wgpu::Features::empty();
        match timing {
            TimingMode::Dispatch => {
                features |= wgpu::Features::TIMESTAMP_QUERY
                    | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
                    | (offered & wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS)
            }
            TimingMode::Pass => features |= wgpu::Features::TIMESTAMP_QUERY,
            TimingMode::Off => {}
        }
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("gpuscope"),
            required_features: features,
            required_limits: limits.clone(),
            ..Default::default()
        }))
        .map_err(|e| GpuError::RequestDevice {
            adapter: info.name.clone(),
            message: e.to_string(),
        })?;
        let uncaptured: Arc<Mutex<Option<String>>> = Arc::default();
        let sink = uncaptured.clone();
        device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
            let mut slot = sink.lock().unwrap();
            if slot.is_none() {
                *slot = Some(e.to_string());
            }
        }));
        let lost = uncaptured.clone();
        device.set_device_lost_callback(move |reason, message| {
            if reason != wgpu::DeviceLostReason::Destroyed {
                *lost.lock().unwrap() = Some(format!("device lost ({reason:?}): {message}"));
            }
        });
        Ok(Gpu {
            device,
            queue,
            info,
            features,
            limits,
            timing,
            timing_reason,
            counters: AtomicCounters::default(),
            pipelines: PipelineCache::default(),
            next_buffer_id: AtomicU64::new(1),
            staging: Default::default(),
            uncaptured,
            tap: Default::default(),
        })
    }

    pub fn device(&self) -> &wgpu::Device {
        &self.device
    }

    pub fn queue(&self) -> &wgpu::Queue {
        &self.queue
    }

    pub fn limits(&self) -> &wgpu::Limits {
        &self.limits
    }

    pub fn features(&self) -> wgpu::Features {
        self.features
    }

    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The timing mode this device was opened for.
    pub fn timing(&self) -> TimingMode {
        self.timing
    }

    pub fn timing_reason(&self) -> &str {
        &self.timing_reason
    }

    /// Plain-data description of the adapter for profiles.
    pub fn adapter_desc(&self) -> AdapterDesc {
        AdapterDesc {
            name: self.info.name.clone(),
            backend: format!("{:?}", self.info.backend),
            device_type: format!("{:?}", self.info.device_type),
            driver: self.info.driver.clone(),
            driver_info: self.info.driver_info.clone(),
            features: self
                .features
                .iter_names()
                .map(|(n, _)| n.to_string())
                .collect(),
            max_storage_buffer_binding_size: self.limits.max_storage_buffer_binding_size as u64,
            max_buffer_size: self.limits.max_buffer_size,
        }
    }

    /// All counters since the device was opened.
    pub fn counters(&self) -> Counters {
        self.counters.snapshot()
    }

    /// Returns (and clears) an error wgpu reported outside an error scope, such as a
    /// lost device.
    pub(crate) fn take_uncaptured(&self) -> Option<String> {
        self.uncaptured.lock().unwrap().take()
    }

    pub(crate) fn check_uncaptured(&self, what: &str) -> Result<(), GpuError> {
        match self.take_uncaptured() {
            None => Ok(()),
            Some(m) if m.contains("lost") => Err(GpuError::DeviceLost { message: m }),
            Some(m) => Err(GpuError::Validation {
                what: what.to_string(),
                message: m,
            }),
        }
    }

    /// A MAP_READ | COPY_DST buffer of `size` bytes from the pool, created (and counted)
    /// only when none is free.
    pub(crate) fn staging_buffer(&self, size: u64) -> wgpu::Buffer {
        if let Some(b) = self.staging.take(size) {
            return b;
        }
        AtomicCounters::add(&self.counters.buffers_created, 1);
        self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("gpuscope.staging"),
            size,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        })
    }

    /// Staging buffers waiting in the pool.
    pub fn pooled_staging_buffers(&self) -> usize {
        self.staging.free_count()
    }

    /// Blocks until all submitted work is done; counts one sync.
    pub fn wait_idle(&self) -> Result<(), GpuError> {
        let _span = tracing::info_span!("gpu_wait").entered();
        AtomicCounters::add(&self.counters.syncs, 1);
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Poll {
                message: e.to_string(),
            })?;
        self.check_uncaptured("waiting for the GPU")
    }
}

fn choose_timing(
    request: TimingRequest,
    offered: wgpu::Features,
    adapter: &str,
) -> Result<(TimingMode, String), GpuError> {
    let has_ts = offered.contains(wgpu::Features::TIMESTAMP_QUERY);
    let has_inside = has_ts && offered.contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);
    let missing = |mode: TimingMode, feature, instead: &str| GpuError::MissingFeature {
        mode: mode.to_string(),
        feature,
        adapter: adapter.to_string(),
        instead: instead.to_string(),
    };
    Ok(match request {
        TimingRequest::Auto if has_inside => (
            TimingMode::Dispatch,
            "per-dispatch GPU timestamps: TIMESTAMP_QUERY_INSIDE_PASSES offered".into(),
        ),
        TimingRequest::Auto if has_ts => (
            TimingMode::Pass,
            "per-pass GPU timestamps: TIMESTAMP_QUERY offered, TIMESTAMP_QUERY_INSIDE_PASSES not"
                .into(),
        ),
        TimingRequest::Auto => (
            TimingMode::Off,
            "wall-clock with a sync per token: the adapter offers no TIMESTAMP_QUERY".into(),
        ),
        TimingRequest::Exactly(TimingMode::Dispatch) if has_inside => (
            TimingMode::Dispatch,
            "per-dispatch GPU timestamps (requested)".into(),
        ),
        TimingRequest::Exactly(TimingMode::Dispatch) => {
            let feature = if has_ts {
                "TIMESTAMP_QUERY_INSIDE_PASSES"
            } else {
                "TIMESTAMP_QUERY"
            };
            return Err(missing(
                TimingMode::Dispatch,
                feature,
                if has_ts {
                    "--timing pass"
                } else {
                    "--timing off"
                },
            ));
        }
        TimingRequest::Exactly(TimingMode::Pass) if has_ts => (
            TimingMode::Pass,
            "per-pass GPU timestamps (requested)".into(),
        ),
        TimingRequest::Exactly(TimingMode::Pass) => {
            return Err(missing(TimingMode::Pass, "TIMESTAMP_QUERY", "--timing off"))
        }
        TimingRequest::Exactly(TimingMode::Off) => (
            TimingMode::Off,
            "wall-clock with a sync per token: GPU timing off (requested)".into(),
        ),
    })
}

/// One line per adapter wgpu can see (GL only when nothing else answers): name,
/// backend, type, driver, finest timing mode.
pub fn list_adapters() -> Vec<String> {
    enumerate(wgpu::Backends::all())
        .iter()
        .map(|a| {
            let i = a.get_info();
            let f = a.features();
            let timing = if f.contains(
                wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES,
            ) {
                "dispatch"
            } else if f.contains(wgpu::Features::TIMESTAMP_QUERY) {
                "pass"
            } else {
                "off"
            };
            format!(
                "\"{}\" backend={:?} type={:?} driver=\"{} {}\" finest-timing={}",
                i.name, i.backend, i.device_type, i.driver, i.driver_info, timing
            )
        })
        .collect()
}

/// Adapters on `backends`. GL is asked only when nothing else answers or it is named:
/// enumerating it starts EGL, which on headless Linux prints noise on stderr and is
/// never the best choice when Vulkan, Metal or DX12 is there.
fn enumerate(backends: wgpu::Backends) -> Vec<wgpu::Adapter> {
    let query = |b: wgpu::Backends| {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends = b;
        let instance = wgpu::Instance::new(desc);
        pollster::block_on(instance.enumerate_adapters(b))
    };
    let primary = backends & !wgpu::Backends::GL;
    if primary.is_empty() {
        return query(backends);
    }
    let found = query(primary);
    if found.is_empty() && backends.contains(wgpu::Backends::GL) {
        query(wgpu::Backends::GL)
    } else {
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL_TS: wgpu::Features =
        wgpu::Features::TIMESTAMP_QUERY.union(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES);

    #[test]
    fn auto_takes_the_finest_offered_and_says_why() {
        let (m, why) = choose_timing(TimingRequest::Auto, ALL_TS, "a").unwrap();
        assert_eq!(m, TimingMode::Dispatch);
        assert!(why.contains("TIMESTAMP_QUERY_INSIDE_PASSES"));
        let (m, _) =
            choose_timing(TimingRequest::Auto, wgpu::Features::TIMESTAMP_QUERY, "a").unwrap();
        assert_eq!(m, TimingMode::Pass);
        let (m, why) = choose_timing(TimingRequest::Auto, wgpu::Features::empty(), "a").unwrap();
        assert_eq!(m, TimingMode::Off);
        assert!(why.contains("wall-clock"));
    }

    #[test]
    fn a_requested_mode_without_its_feature_names_the_feature_and_the_way_out() {
        let err = choose_timing(
            TimingRequest::Exactly(TimingMode::Dispatch),
            wgpu::Features::TIMESTAMP_QUERY,
            "GPU X",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("TIMESTAMP_QUERY_INSIDE_PASSES")
                && err.contains("--timing pass")
                && err.contains("GPU X"),
            "{err}"
        );
        let err = choose_timing(
            TimingRequest::Exactly(TimingMode::Pass),
            wgpu::Features::empty(),
            "GPU X",
        )
        .unwrap_err()
        .to_string();
        assert!(
            err.contains("TIMESTAMP_QUERY") && err.contains("--timing off"),
            "{err}"
        );
    }
}
