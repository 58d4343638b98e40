//! The runtime test binary: resources, errors and the step runner on a real adapter.
mod errors;
mod step;
