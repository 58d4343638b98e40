//! The `gguf_reader` fuzz target's seed: a tiny but complete Llama GGUF (one layer,
//! q4_0 matrices, a byte-level BPE tokenizer) made by the project's own writer. The test
//! checks the committed seed is what the writer makes today and that it goes through the
//! whole path the fuzz target drives (reader, Llama mapping, tokenizer); with
//! `GPUSCOPE_BLESS=1` it rewrites the seed instead.

use std::path::PathBuf;

use gpuscope_model::gguf::{Gguf, GgufWriter, MetaArray, MetaValue};
use gpuscope_model::{load_model, synthetic_weights, LlamaConfig, Tokenizer};
use gpuscope_ops::WeightFormat;

fn seed_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/gguf_reader/tiny-llama.gguf")
}

fn strings(v: &[&str]) -> MetaValue {
    MetaValue::Array(MetaArray::String(v.iter().map(|s| s.to_string()).collect()))
}

/// The seed's bytes: deterministic (seeded weights, fixed metadata).
pub fn tiny_llama_gguf() -> Vec<u8> {
    let config = LlamaConfig {
        n_layers: 1,
        dim: 32,
        n_heads: 1,
        n_kv_heads: 1,
        head_dim: 32,
        ffn_dim: 32,
        vocab: 8,
        rope_base: 10000.0,
        rope_dims: 32,
        rms_eps: 1e-5,
        tied_embeddings: true,
        arch: Default::default(),
    };
    let weights = synthetic_weights(&config, WeightFormat::Q4_0, 1, "tiny");
    let mut w = GgufWriter::new();
    let u32v = |v: u32| MetaValue::U32(v);
    w.meta("general.architecture", MetaValue::String("llama".into()))
        .meta("general.name", MetaValue::String("tiny".into()))
        .meta("llama.block_count", u32v(1))
        .meta("llama.embedding_length", u32v(32))
        .meta("llama.attention.head_count", u32v(1))
        .meta("llama.attention.head_count_kv", u32v(1))
        .meta("llama.feed_forward_length", u32v(32))
        .meta("llama.context_length", u32v(64))
        .meta("llama.rope.freq_base", MetaValue::F32(10000.0))
        .meta(
            "llama.attention.layer_norm_rms_epsilon",
            MetaValue::F32(1e-5),
        )
        .meta("tokenizer.ggml.model", MetaValue::String("gpt2".into()))
        .meta("tokenizer.ggml.pre", MetaValue::String("smollm".into()))
        .meta(
            "tokenizer.ggml.tokens",
            strings(&["<s>", "</s>", "a", "b", "ab", "Ġ", "Ġab", "c"]),
        )
        .meta(
            "tokenizer.ggml.token_type",
            MetaValue::Array(MetaArray::I32(vec![3, 3, 1, 1, 1, 1, 1, 1])),
        )
        .meta("tokenizer.ggml.merges", strings(&["a b", "Ġ ab"]))
        .meta("tokenizer.ggml.bos_token_id", u32v(0))
        .meta("tokenizer.ggml.eos_token_id", u32v(1));
    let f32_bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let matrix = |w: &mut GgufWriter, t: &gpuscope_model::Tensor| {
        w.tensor(
            &t.name,
            &[t.cols as u64, t.rows as u64],
            t.format.ggml_type_id(),
            t.data.to_vec(),
        );
    };
    matrix(&mut w, &weights.token_embd);
    w.tensor(
        "output_norm.weight",
        &[32],
        0,
        f32_bytes(&weights.output_norm),
    );
    for (i, l) in weights.layers.iter().enumerate() {
        w.tensor(
            &format!("blk.{i}.attn_norm.weight"),
            &[32],
            0,
            f32_bytes(&l.attn_norm),
        );
        w.tensor(
            &format!("blk.{i}.ffn_norm.weight"),
            &[32],
            0,
            f32_bytes(&l.ffn_norm),
        );
        for t in [&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down] {
            matrix(&mut w, t);
        }
    }
    w.to_bytes()
}

#[test]
fn the_gguf_fuzz_seed_is_current_and_goes_through_mapping_and_tokenizer() {
    let bytes = tiny_llama_gguf();
    let path = seed_path();
    if std::env::var_os("GPUSCOPE_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &bytes).unwrap();
    }
    let committed = std::fs::read(&path).unwrap_or_default();
    assert!(
        committed == bytes,
        "{} is not what the writer makes now: regenerate it with GPUSCOPE_BLESS=1 cargo test -p gpuscope-model --test tests fuzz_seeds",
        path.display()
    );
    let gguf = Gguf::from_bytes(bytes).expect("the seed parses");
    let tokenizer = Tokenizer::from_gguf(&gguf.file.metadata).expect("its tokenizer builds");
    assert_eq!(tokenizer.encode("ab ab").unwrap(), vec![4, 6]);
    let model = load_model(gguf).expect("it maps to a Llama model");
    assert_eq!(model.weights.config.n_layers, 1);
    assert_eq!(model.weights.config.vocab, 8);
}
