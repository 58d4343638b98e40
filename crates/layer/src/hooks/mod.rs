//! The Vulkan functions the layer intercepts, by area. Each hook does its bookkeeping
//! inside `crate::guard` and always calls the next layer's function: a bug in the
//! layer costs the recording, never the program's call.

pub mod commands;
pub mod entry;
pub mod objects;
pub mod queues;
