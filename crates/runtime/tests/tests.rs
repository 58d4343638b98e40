//! The runtime test binary: resources, errors and the step runner on a real adapter.
mod capture;
mod errors;
mod step;
