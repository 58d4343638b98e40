//! The recorder test binary: a small program of its own on a real adapter.
mod basics;
mod common;
