//! Errors of the model layer.

use gpuscope_runtime::GpuError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ModelError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("invalid model configuration: {0}")]
    Config(String),
    #[error("kernel choice: {0}")]
    Kernel(String),
    #[error("the KV cache is full ({max_ctx} tokens); raise the context size")]
    ContextFull { max_ctx: u32 },
    /// The KV cache, sized from the token count, is over a limit: the user's lever is
    /// the token count.
    #[error("the KV cache for {positions} tokens needs {bytes} bytes per layer for K (and as many for V), this device allows {limit} ({limit_name}): lower --tokens (at most {fits} tokens fit, prompt included)")]
    KvCacheTooLarge {
        positions: u32,
        bytes: u64,
        limit: u64,
        limit_name: &'static str,
        fits: u64,
    },
    /// The stop flag was set (an interrupt) while the prompt was being fed.
    #[error("interrupted")]
    Interrupted,
}
