//! What can go wrong when a program uses the recorder, each said with what and where.

use thiserror::Error;

#[derive(Debug, Error, Clone, PartialEq)]
pub enum RecorderError {
    /// A timing mode was asked for that the device was not created with.
    #[error(
        "timing mode `{mode}` needs the device feature {feature}, which this device was not created with{offered}; \
         create the device with it, or use timing `{instead}`"
    )]
    MissingFeature {
        mode: String,
        feature: &'static str,
        /// ` (the adapter offers it)` when only the device lacks it.
        offered: String,
        /// The finest mode that works without it: `pass` or `off`.
        instead: &'static str,
    },
    /// Misuse of the API: the program did something the recorder cannot attribute.
    #[error("{0}")]
    Misuse(String),
    /// A step was begun while another was open, or ended when none was.
    #[error("{0}")]
    Step(String),
    /// Objects the recorder did not see created (from another device, or created with
    /// plain wgpu and never registered).
    #[error("{what} was not created through this recorder (or registered with it): {hint}")]
    Unknown { what: String, hint: &'static str },
    /// Waiting for the GPU failed or the device was lost.
    #[error("GPU error while {what}: {message}")]
    Gpu { what: String, message: String },
    /// A capture could not be made.
    #[error("capture: {0}")]
    Capture(String),
}
