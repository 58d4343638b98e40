//! Benchmark results in llama-bench's terms: one [`BenchRecord`] per test (pp512,
//! tg128, pp512+tg128), with llama-bench's field names, order and statistics, so that
//! scripts written for llama-bench's CSV / JSON / JSONL output (and llama.cpp's
//! `compare-llama-bench.py`) read `gpuscope bench`'s.
//!
//! The fields are those of `test::get_fields()` in llama.cpp's
//! `tools/llama-bench/llama-bench.cpp` (ggml-org/llama.cpp, commit 0104b151), in that
//! order, followed by `samples_ns` and `samples_ts` as its JSON printers add them.
//! Fields that mean something else in gpuscope, or nothing, carry the value documented
//! in `docs/bench.md`. Statistics are llama-bench's: the mean and the sample standard
//! deviation (Bessel's correction) of the repetitions' times, and of their rates
//! (`n_tokens · 10^9 / ns`), so `avg_ts` is the mean of the per-repetition rates.

use serde::Serialize;

/// llama-bench's fields, in its order (see the module doc for the source).
pub const LLAMA_BENCH_FIELDS: [&str; 40] = [
    "build_commit",
    "build_number",
    "cpu_info",
    "gpu_info",
    "backends",
    "model_filename",
    "model_type",
    "model_size",
    "model_n_params",
    "n_batch",
    "n_ubatch",
    "n_threads",
    "cpu_mask",
    "cpu_strict",
    "poll",
    "type_k",
    "type_v",
    "n_gpu_layers",
    "n_cpu_moe",
    "split_mode",
    "main_gpu",
    "no_kv_offload",
    "flash_attn",
    "devices",
    "tensor_split",
    "tensor_buft_overrides",
    "load_mode",
    "embeddings",
    "no_op_offload",
    "no_host",
    "fit_target",
    "fit_min_ctx",
    "n_prompt",
    "n_gen",
    "n_depth",
    "test_time",
    "avg_ns",
    "stddev_ns",
    "avg_ts",
    "stddev_ts",
];

/// One field's value, typed as llama-bench types it (strings quoted in JSON, booleans
/// `true`/`false` in JSON and `0`/`1` in CSV).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum FieldValue {
    Str(String),
    Int(i64),
    Bool(bool),
    Float(f64),
}

impl FieldValue {
    /// The value as llama-bench's `get_values()` writes it (CSV, SQL, Markdown).
    pub fn to_plain(&self) -> String {
        match self {
            FieldValue::Str(s) => s.clone(),
            FieldValue::Int(i) => i.to_string(),
            FieldValue::Bool(b) => u8::from(*b).to_string(),
            FieldValue::Float(f) => format!("{f:.6}"),
        }
    }
}

/// What describes the run, shared by every test of one `gpuscope bench`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BenchContext {
    pub build_commit: String,
    pub build_number: u64,
    pub cpu_info: String,
    /// The adapter's name.
    pub gpu_info: String,
    /// `wgpu-<backend>`, e.g. `wgpu-Vulkan`.
    pub backends: String,
    /// The GGUF path, or `preset:<name>` for a synthetic model.
    pub model_filename: String,
    /// `<architecture> <size> <weights>`, as llama.cpp's `llama_model_desc`.
    pub model_type: String,
    /// Bytes of the weights.
    pub model_size: u64,
    pub model_n_params: u64,
    /// Most prompt rows one prefill submit processes.
    pub n_batch: u32,
    /// Layers on the GPU: every repeating layer plus the output layer, llama.cpp's count
    /// for a fully offloaded model.
    pub n_gpu_layers: u32,
    /// `auto`, or the adapter asked for with `--adapter`.
    pub devices: String,
    /// `mmap` for a GGUF file (memory-mapped), `none` for synthetic weights.
    pub load_mode: String,
}

/// How much slower than the others' median a first repetition must run for
/// [`BenchRecord::slow_first`] to name it: 10%, well above a settled run's spread
/// (gpuscope's tg128 varies by under 1% between repetitions on an H100, BENCHMARKS.md).
pub const SLOW_FIRST: f64 = 0.10;

/// One test (pp, tg or pg) repeated: its shape and the time of every repetition.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchRecord {
    pub n_prompt: u32,
    pub n_gen: u32,
    /// When the test started, RFC 3339 in UTC.
    pub test_time: String,
    pub samples_ns: Vec<u64>,
    /// Whether the test's attention ran as one fused kernel (llama-bench's
    /// `flash_attn`): a prompt always does (the batched kernel); generation unless the
    /// decode graph's attention is unfused (`--fuse` without `attention`).
    pub flash_attn: bool,
    /// The kernel choices of this test's configuration (`attention=split`), where one
    /// run compared several (`--kernel OP=V1,V2`, as llama-bench's `-fa 0,1`).
    pub variant: Option<String>,
}

impl BenchRecord {
    /// llama-bench's name of the test: `pp512`, `tg128`, `pp512+tg128`.
    pub fn name(&self) -> String {
        match (self.n_prompt, self.n_gen) {
            (p, 0) => format!("pp{p}"),
            (0, g) => format!("tg{g}"),
            (p, g) => format!("pp{p}+tg{g}"),
        }
    }

    /// Tokens per second of each repetition.
    pub fn samples_ts(&self) -> Vec<f64> {
        let tokens = (self.n_prompt + self.n_gen) as f64;
        self.samples_ns
            .iter()
            .map(|&ns| 1e9 * tokens / ns.max(1) as f64)
            .collect()
    }

    /// Where the first repetition ran slower than the others: its rate and the others'
    /// median, when it is below `1 - SLOW_FIRST` of that median and at least two others
    /// ran. A GPU that ramps its clocks over the first repetition does this after
    /// llama-bench's warm-up of one token (docs/bench.md); the mean includes it.
    pub fn slow_first(&self) -> Option<(f64, f64)> {
        let ts = self.samples_ts();
        let (first, rest) = ts.split_first()?;
        if rest.len() < 2 {
            return None;
        }
        let mut rest = rest.to_vec();
        rest.sort_by(f64::total_cmp);
        let mid = rest.len() / 2;
        let median = if rest.len() % 2 == 1 {
            rest[mid]
        } else {
            (rest[mid - 1] + rest[mid]) / 2.0
        };
        (*first < (1.0 - SLOW_FIRST) * median).then_some((*first, median))
    }

    /// Mean time per repetition (integer ns, as llama-bench).
    pub fn avg_ns(&self) -> u64 {
        mean(
            &self
                .samples_ns
                .iter()
                .map(|&n| n as f64)
                .collect::<Vec<_>>(),
        ) as u64
    }

    pub fn stddev_ns(&self) -> u64 {
        stddev(
            &self
                .samples_ns
                .iter()
                .map(|&n| n as f64)
                .collect::<Vec<_>>(),
        ) as u64
    }

    pub fn avg_ts(&self) -> f64 {
        mean(&self.samples_ts())
    }

    pub fn stddev_ts(&self) -> f64 {
        stddev(&self.samples_ts())
    }

    /// Every field of [`LLAMA_BENCH_FIELDS`], in order, with its value.
    pub fn fields(&self, c: &BenchContext) -> Vec<(&'static str, FieldValue)> {
        use FieldValue::{Bool, Float, Int, Str};
        let s = |v: &str| Str(v.to_string());
        let values = [
            s(&c.build_commit),
            Int(c.build_number as i64),
            s(&c.cpu_info),
            s(&c.gpu_info),
            s(&c.backends),
            s(&c.model_filename),
            s(&c.model_type),
            Int(c.model_size as i64),
            Int(c.model_n_params as i64),
            Int(c.n_batch.into()),
            Int(c.n_batch.into()),
            // One CPU thread records and submits the GPU work.
            Int(1),
            s("0x0"),
            Bool(false),
            // llama-bench's default; gpuscope waits on the GPU with a blocking poll.
            Int(50),
            // The KV cache holds f32.
            s("f32"),
            s("f32"),
            Int(c.n_gpu_layers.into()),
            Int(0),
            s("none"),
            Int(0),
            Bool(false),
            Int(self.flash_attn.into()),
            s(&c.devices),
            s("0.00"),
            s("none"),
            s(&c.load_mode),
            Bool(false),
            Int(0),
            Bool(false),
            Int(0),
            Int(0),
            Int(self.n_prompt.into()),
            Int(self.n_gen.into()),
            Int(0),
            s(&self.test_time),
            Int(self.avg_ns() as i64),
            Int(self.stddev_ns() as i64),
            Float(self.avg_ts()),
            Float(self.stddev_ts()),
        ];
        LLAMA_BENCH_FIELDS.into_iter().zip(values).collect()
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.iter().sum::<f64>() / v.len() as f64
}

/// Sample standard deviation (n - 1); 0 for fewer than two values, as llama-bench.
fn stddev(v: &[f64]) -> f64 {
    if v.len() < 2 {
        return 0.0;
    }
    let m = mean(v);
    let ss: f64 = v.iter().map(|x| (x - m) * (x - m)).sum();
    (ss / (v.len() - 1) as f64).sqrt()
}

#[cfg(test)]
mod tests {
    use super::BenchRecord;

    fn record(samples_ns: &[u64]) -> BenchRecord {
        BenchRecord {
            flash_attn: true,
            variant: None,
            n_prompt: 0,
            n_gen: 128,
            test_time: String::new(),
            samples_ns: samples_ns.to_vec(),
        }
    }

    /// Llama-8B on an H100 after a one-token warm-up (session 18's call 4): 292 tok/s,
    /// then 431-451.
    #[test]
    fn a_first_repetition_below_the_others_is_named() {
        let ts = [292.3, 450.6, 451.3, 450.7, 442.7, 431.7];
        let ns: Vec<u64> = ts.iter().map(|t| (128e9 / t) as u64).collect();
        let (first, median) = record(&ns).slow_first().expect("a slow first repetition");
        assert!((first - 292.3).abs() < 0.1, "{first}");
        assert!((median - 450.6).abs() < 0.1, "{median}");
    }

    #[test]
    fn a_settled_run_or_too_few_repetitions_name_nothing() {
        let settled: Vec<u64> = [448.0, 450.6, 451.3, 446.0]
            .iter()
            .map(|t| (128e9 / t) as u64)
            .collect();
        assert_eq!(record(&settled).slow_first(), None);
        // A slow repetition later is noise, not warm-up.
        let late: Vec<u64> = [450.0, 450.6, 300.0, 451.0]
            .iter()
            .map(|t| (128e9 / t) as u64)
            .collect();
        assert_eq!(record(&late).slow_first(), None);
        let two = [(128e9 / 300.0) as u64, (128e9 / 450.0) as u64];
        assert_eq!(record(&two).slow_first(), None);
    }
}
