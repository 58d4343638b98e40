//! Errors of the model layer.

use gpuscope_runtime::GpuError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum ModelError {
    #[error(transparent)]
    Gpu(#[from] GpuError),
    #[error("invalid model configuration: {0}")]
    Config(String),
    #[error("the KV cache is full ({max_ctx} tokens); raise the context size")]
    ContextFull { max_ctx: u32 },
}
