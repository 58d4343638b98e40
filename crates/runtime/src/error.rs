//! Runtime errors: each says what went wrong, where, and what to do instead.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum GpuError {
    #[error("no GPU adapter{filter}; adapters found: {available}. {hint}")]
    NoAdapter {
        /// The filter that was applied, e.g. ` matching "nvidia" on vulkan`.
        filter: String,
        available: String,
        hint: String,
    },
    #[error("could not open a device on \"{adapter}\": {message}")]
    RequestDevice { adapter: String, message: String },
    #[error("timing mode `{mode}` needs the GPU feature {feature}, which \"{adapter}\" does not offer; use {instead}")]
    MissingFeature {
        mode: String,
        feature: &'static str,
        adapter: String,
        instead: String,
    },
    #[error("buffer \"{label}\" needs {size} bytes but this device allows at most {limit} bytes ({limit_name}); {hint}")]
    BufferTooLarge {
        label: String,
        size: u64,
        limit: u64,
        limit_name: &'static str,
        hint: &'static str,
    },
    #[error("shader `{shader}` entry `{entry}` failed to build: {message}")]
    Shader {
        shader: String,
        entry: String,
        message: String,
    },
    #[error("out of GPU memory while {what}")]
    OutOfMemory { what: String },
    #[error("GPU validation error while {what}: {message}")]
    Validation { what: String, message: String },
    #[error("GPU device lost: {message}")]
    DeviceLost { message: String },
    #[error("waiting for the GPU failed: {message}")]
    Poll { message: String },
    #[error("reading buffer \"{label}\" back failed: {message}")]
    Readback { label: String, message: String },
    #[error("{0}")]
    Invalid(String),
    /// The recorder refused (a step left open, a timing mode the device cannot do).
    #[error(transparent)]
    Record(#[from] gpuscope_record::RecorderError),
}
