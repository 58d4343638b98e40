#![allow(dead_code)]

use gpuscope_model::{synthetic_weights, ModelWeights, Preset};
use gpuscope_ops::WeightFormat;
use gpuscope_runtime::Gpu;

pub fn gpu() -> Option<&'static Gpu> {
    gpuscope_runtime::testing::shared_gpu()
}

pub fn weights(preset: Preset, format: WeightFormat) -> ModelWeights {
    synthetic_weights(&preset.config(), format, 7, preset.name())
}
