//! Adapter choice, feature negotiation and the [`Gpu`] handle every layer above uses.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use gpuscope_trace::{AdapterDesc, Counters, TimingMode};

use crate::error::GpuError;
use crate::resources::PipelineCache;

pub use gpuscope_record::TimingRequest;

/// How to pick and open the device.
#[derive(Debug, Clone, Default)]
pub struct GpuOptions {
    /// Case-insensitive substring of the adapter name; `GPUSCOPE_ADAPTER` when `None`.
    pub adapter: Option<String>,
    /// `vulkan`, `metal`, `dx12` or `gl`; `GPUSCOPE_BACKEND` when `None`.
    pub backend: Option<String>,
    pub timing: TimingRequest,
    /// Turn on the backend's validation (the Vulkan validation layer when installed) and
    /// collect its messages ([`crate::validation`]).
    pub validate: bool,
}

/// Counters of the work the runtime's tools (per-command benchmarks, output walks,
/// readbacks for tests) do with plain wgpu, outside the recorder; kept with atomics so
/// that `&Gpu` can be shared; each bump is one relaxed add. Everything a decoder does
/// goes through the recorder and is counted there.
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
    /// The instrumentation every decoder step goes through (the public API).
    pub(crate) rec: gpuscope_record::Recorder,
    pub(crate) counters: AtomicCounters,
    pub(crate) pipelines: PipelineCache,
    pub(crate) next_buffer_id: AtomicU64,
    pub(crate) staging: crate::pool::SharedPool,
    /// Errors wgpu reports outside any error scope (device loss, late validation).
    pub(crate) uncaptured: Arc<Mutex<Option<String>>>,
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

/// 16x16x16 with f16 A and B and f32 C: the cooperative-matrix shape the prompt gemm uses.
fn is_coopmat_f16_16x16(p: &wgpu::CooperativeMatrixProperties) -> bool {
    (p.m_size, p.n_size, p.k_size) == (16, 16, 16)
        && p.ab_type == wgpu::CooperativeScalarType::F16
        && p.cr_type == wgpu::CooperativeScalarType::F32
}

fn env_nonempty(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The adapter [`Gpu::new`] opens: the best of those matching `--adapter` and
/// `--backend` (or their environment variables), or an error listing them all.
fn choose_adapter(opts: &GpuOptions) -> Result<wgpu::Adapter, GpuError> {
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
    if opts.validate {
        crate::validation::install();
    }
    let adapters = enumerate(backends, opts.validate);
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
    adapter.ok_or_else(|| {
        let mut filter = String::new();
        if let Some(f) = &adapter_filter {
            filter.push_str(&format!(" matching \"{f}\""));
        }
        if let Some(b) = &backend_name {
            filter.push_str(&format!(" on {b}"));
        }
        GpuError::NoAdapter {
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
        }
    })
}

/// The device features [`Gpu::new`] asks for.
struct WantedFeatures {
    features: wgpu::Features,
    /// Enabled only for cooperative matrices.
    experimental: wgpu::ExperimentalFeatures,
}

/// The timestamp features timing `mode` needs, and the optional features kernel
/// variants use where `adapter` offers them.
fn features(adapter: &wgpu::Adapter, mode: TimingMode) -> WantedFeatures {
    let offered = adapter.features();
    let mut features = match mode {
        TimingMode::Off => wgpu::Features::empty(),
        TimingMode::Pass => wgpu::Features::TIMESTAMP_QUERY,
        TimingMode::Dispatch => {
            wgpu::Features::TIMESTAMP_QUERY | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        }
    };
    if mode != TimingMode::Off {
        features |= offered & wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS;
    }
    // f16 arithmetic where offered (`peak` measures its FMA rate); subgroups and 64-bit
    // integers where offered: kernels pick subgroup variants, and on CPU adapters the
    // gemv frame over 32-byte `vec4<u64>` loads, where the device has them (the ops
    // crate reads `Gpu::features`); asking costs nothing when they go unused.
    features |= offered
        & (wgpu::Features::SHADER_F16 | wgpu::Features::SUBGROUP | wgpu::Features::SHADER_INT64);
    // Cooperative matrices (tensor cores) for the prompt gemm, where the adapter has
    // the one configuration its kernel uses: 16x16x16, f16 inputs, f32 accumulators.
    // wgpu marks the feature experimental; GPUSCOPE_NO_COOPMAT=1 leaves it off.
    let coopmat = offered.contains(wgpu::Features::SHADER_F16)
        && offered.contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
        && env_nonempty("GPUSCOPE_NO_COOPMAT").is_none()
        && adapter
            .cooperative_matrix_properties()
            .iter()
            .any(is_coopmat_f16_16x16);
    let mut experimental = wgpu::ExperimentalFeatures::disabled();
    if coopmat {
        features |= wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX;
        // SAFETY: wgpu asks callers of experimental features to accept that its
        // implementation may have bugs. The feature is used by one kernel family
        // (`gemm_coopmat_*`), whose results the tests and `check` compare with the
        // CPU oracle on the adapters that run it; GPUSCOPE_NO_COOPMAT turns it off.
        experimental = unsafe { wgpu::ExperimentalFeatures::enabled() };
    }
    WantedFeatures {
        features,
        experimental,
    }
}

/// Error callbacks: the first error wgpu reports outside any error scope, or the
/// device's loss, lands in the slot returned; the next step fails with it.
fn watch_errors(device: &wgpu::Device) -> Arc<Mutex<Option<String>>> {
    let uncaptured: Arc<Mutex<Option<String>>> = Arc::default();
    let sink = uncaptured.clone();
    device.on_uncaptured_error(Arc::new(move |e: wgpu::Error| {
        let mut slot = sink.lock().unwrap();
        if slot.is_none() {
            *slot = Some(match e {
                wgpu::Error::OutOfMemory { .. } => format!("{OUT_OF_MEMORY}: {e}"),
                e => e.to_string(),
            });
        }
    }));
    let lost = uncaptured.clone();
    // `Destroyed` counts too: a device destroyed while the Gpu still uses it (the
    // `--fault device-lost-after` test hook) fails the next step like any loss.
    device.set_device_lost_callback(move |reason, message| {
        let message = if message.is_empty() {
            String::new()
        } else {
            format!(": {message}")
        };
        *lost.lock().unwrap() = Some(format!("device lost ({reason:?}){message}"));
    });
    uncaptured
}

impl Gpu {
    /// Picks the best adapter matching `opts` (discrete before integrated before
    /// software; Vulkan before Metal, DX12, GL) and opens it with the adapter's own limits
    /// (wgpu's defaults are lower), the timestamp features the timing mode needs, and
    /// SUBGROUP and SHADER_F16 when offered (kernel variants use them).
    pub fn new(opts: &GpuOptions) -> Result<Gpu, GpuError> {
        let _span = tracing::info_span!("gpu_open").entered();
        let adapter = choose_adapter(opts)?;
        let info = adapter.get_info();
        // The mode is checked against what the adapter offers first, so a missing feature
        // names the adapter; the recorder then picks the same mode on the device.
        let timing = gpuscope_record::choose_timing(opts.timing, adapter.features(), &info)
            .map_err(|e| missing_feature(e, &info.name))?;
        let wanted = features(&adapter, timing.mode);
        let limits = adapter.limits();
        let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
            label: Some("gpuscope"),
            required_features: wanted.features,
            required_limits: limits.clone(),
            experimental_features: wanted.experimental,
            ..Default::default()
        }))
        .map_err(|e| GpuError::RequestDevice {
            adapter: info.name.clone(),
            message: e.to_string(),
        })?;
        let rec = gpuscope_record::Recorder::new(
            &device,
            &queue,
            gpuscope_record::RecorderOptions {
                timing: opts.timing,
                ..Default::default()
            },
        )
        .map_err(|e| missing_feature(e, &info.name))?;
        let uncaptured = watch_errors(&device);
        Ok(Gpu {
            device,
            queue,
            info,
            features: wanted.features,
            limits,
            rec,
            counters: AtomicCounters::default(),
            pipelines: PipelineCache::default(),
            next_buffer_id: AtomicU64::new(1),
            staging: Default::default(),
            uncaptured,
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

    /// Whether the device was opened with cooperative matrices of 16x16x16 f16 inputs and
    /// f32 accumulators (subgroup scope), the configuration `gemm_coopmat_*` uses.
    pub fn cooperative_matrix_f16(&self) -> bool {
        self.features
            .contains(wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX)
    }

    pub fn adapter_info(&self) -> &wgpu::AdapterInfo {
        &self.info
    }

    /// The timing mode this device was opened for.
    pub fn timing(&self) -> TimingMode {
        self.rec.timing()
    }

    /// Why this timing mode, in words.
    pub fn timing_reason(&self) -> String {
        self.rec.timing_reason()
    }

    /// The timing as the profile records it (mode, reason, timestamp period, sampling).
    pub fn timing_info(&self) -> gpuscope_trace::TimingInfo {
        gpuscope_trace::TimingInfo {
            mode: self.rec.timing(),
            reason: self.rec.timing_reason(),
            timestamp_period_ns: self.queue.get_timestamp_period() as f64,
            sampling: self.rec.sampling(),
        }
    }

    /// The stride steps of `dispatches` will be sampled with; `None` when not sampled.
    pub fn sampling_stride_for(&self, dispatches: u32) -> Option<u32> {
        self.rec.sampling_stride_for(dispatches)
    }

    /// Switches the timing mode between steps (the device must have been opened with
    /// the features the mode needs).
    pub fn set_timing(&self, request: TimingRequest) -> Result<(), GpuError> {
        self.rec
            .set_timing(request)
            .map_err(|e| missing_feature(e, &self.info.name))
    }

    /// The request that gives the timing in use again (to restore it after a switch).
    pub fn timing_request(&self) -> TimingRequest {
        match self.rec.sampling() {
            Some(s) => TimingRequest::Sampled { stride: s.stride },
            None => TimingRequest::Exactly(self.rec.timing()),
        }
    }

    /// The recorder every step of this device goes through: the same public
    /// instrumentation API any wgpu program uses.
    pub fn recorder(&self) -> &gpuscope_record::Recorder {
        &self.rec
    }

    /// Plain-data description of the adapter for profiles.
    pub fn adapter_desc(&self) -> AdapterDesc {
        self.rec.adapter_desc()
    }

    /// All counters since the device was opened: the recorder's and the tools'.
    pub fn counters(&self) -> Counters {
        let (a, b) = (self.rec.counters(), self.counters.snapshot());
        let (a, b) = (a.fields(), b.fields());
        Counters::from_values(std::array::from_fn(|i| a[i].1 + b[i].1))
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
            Some(m) if m.starts_with(OUT_OF_MEMORY) => Err(GpuError::OutOfMemory {
                what: what.to_string(),
            }),
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
        self.rec.create_buffer(&wgpu::BufferDescriptor {
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
        self.rec
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| GpuError::Poll {
                message: e.to_string(),
            })?;
        self.check_uncaptured("waiting for the GPU")
    }
}

/// How an out-of-memory error reported outside an error scope is marked, so the next
/// check reports it as one (a run that fails this way keeps what it measured).
const OUT_OF_MEMORY: &str = "out of memory";

/// The recorder's timing error as the runtime's, naming the adapter.
fn missing_feature(e: gpuscope_record::RecorderError, adapter: &str) -> GpuError {
    match e {
        gpuscope_record::RecorderError::MissingFeature {
            mode,
            feature,
            instead,
            ..
        } => GpuError::MissingFeature {
            mode,
            feature,
            adapter: adapter.to_string(),
            instead: format!("--timing {instead}"),
        },
        other => GpuError::Invalid(other.to_string()),
    }
}

/// One line per adapter wgpu can see (GL only when nothing else answers): name,
/// backend, type, driver, finest timing mode.
pub fn list_adapters() -> Vec<String> {
    enumerate(wgpu::Backends::all(), false)
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
fn enumerate(backends: wgpu::Backends, validate: bool) -> Vec<wgpu::Adapter> {
    let query = |b: wgpu::Backends| {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
        desc.backends = b;
        if validate {
            desc.flags |= wgpu::InstanceFlags::VALIDATION;
        }
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

    #[test]
    fn a_missing_timing_feature_names_the_adapter_the_feature_and_the_way_out() {
        let info = wgpu::AdapterInfo::new(wgpu::DeviceType::Cpu, wgpu::Backend::Vulkan);
        let e = gpuscope_record::choose_timing(
            TimingRequest::Exactly(TimingMode::Dispatch),
            wgpu::Features::TIMESTAMP_QUERY,
            &info,
        )
        .unwrap_err();
        let err = missing_feature(e, "GPU X").to_string();
        assert!(
            err.contains("TIMESTAMP_QUERY_INSIDE_PASSES")
                && err.contains("--timing pass")
                && err.contains("GPU X"),
            "{err}"
        );
    }
}
