//! Qwen's byte-level BPE (`gpt2` vocabulary, `qwen2` pre-tokenizer) against a reference
//! implementation: Qwen's own vocabulary (`qwen.tiktoken`, the regular tokens of Qwen2,
//! Qwen2.5 and Qwen3, fetched as `test_model` says) is written into a GGUF here as
//! llama.cpp's converter writes one (each token's bytes as GPT-2's byte-level characters,
//! the merges recovered from the ranks), and gpuscope's encoding of each text must equal
//! the ids OpenAI's `tiktoken` gives with Qwen's split pattern
//! (`tests/data/qwen_tokenizations.json`, written by `scripts/qwen-tokenizer-reference.py`).

use std::collections::HashMap;
use std::sync::OnceLock;

use gpuscope_model::gguf::{parse_gguf, GgufWriter, MetaArray, MetaValue};
use gpuscope_model::test_model::{require_qwen_vocab, QWEN_VOCAB_SHA256};
use gpuscope_model::Tokenizer;

const REFERENCE: &str = include_str!("data/qwen_tokenizations.json");

/// The control tokens after the 151,643 regular ones, as Qwen's tokenizer numbers them.
const SPECIALS: [&str; 3] = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

/// GPT-2's `bytes_to_unicode`: printable bytes stand for themselves, the other 68 map to
/// U+0100 upward in byte order. Byte-level vocabularies store tokens in these characters.
fn byte_chars() -> [char; 256] {
    let printable = |b: u8| matches!(b, b'!'..=b'~' | 0xA1..=0xAC | 0xAE..=0xFF);
    let mut out = ['\0'; 256];
    let mut next = 256u32;
    for b in 0..=255u8 {
        out[b as usize] = if printable(b) {
            char::from(b)
        } else {
            next += 1;
            char::from_u32(next - 1).expect("below the surrogates")
        };
    }
    out
}

/// Qwen's vocabulary by rank, from the cached `hex(token) rank` lines.
fn ranked_tokens(path: &std::path::Path) -> Vec<Vec<u8>> {
    let text = std::fs::read_to_string(path).expect("the cached vocabulary reads");
    let mut tokens: Vec<(u32, Vec<u8>)> = text
        .lines()
        .map(|line| {
            let (hex, rank) = line.split_once(' ').expect("`hex rank` lines");
            let bytes = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
                .collect();
            (rank.parse().expect("a rank"), bytes)
        })
        .collect();
    tokens.sort();
    assert!(
        tokens.iter().enumerate().all(|(i, (r, _))| *r == i as u32),
        "ranks are 0..n"
    );
    tokens.into_iter().map(|(_, t)| t).collect()
}

/// Where the merge that makes token `rank` splits it: BPE over its bytes with only lower
/// ranks allowed ends in exactly two parts (as llama.cpp's converter recovers merges from
/// tiktoken ranks).
fn merge_cut(token: &[u8], rank: u32, ranks: &HashMap<&[u8], u32>) -> usize {
    let mut cuts: Vec<usize> = (0..=token.len()).collect();
    loop {
        let best = (0..cuts.len() - 2)
            .filter_map(|i| {
                let r = *ranks.get(&token[cuts[i]..cuts[i + 2]])?;
                (r < rank).then_some((r, i))
            })
            .min();
        let Some((_, i)) = best else { break };
        cuts.remove(i + 1);
    }
    assert_eq!(
        cuts.len(),
        3,
        "token {rank} is not one merge of two lower ranks"
    );
    cuts[1]
}

/// The tokenizer gpuscope builds from a GGUF holding Qwen's vocabulary.
fn qwen_tokenizer() -> Option<&'static Tokenizer> {
    static TOKENIZER: OnceLock<Option<Tokenizer>> = OnceLock::new();
    TOKENIZER
        .get_or_init(|| {
            let tokens = ranked_tokens(&require_qwen_vocab()?);
            assert_eq!(tokens.len(), 151_643);
            let chars = byte_chars();
            let text = |b: &[u8]| -> String { b.iter().map(|&c| chars[c as usize]).collect() };
            let ranks: HashMap<&[u8], u32> = tokens
                .iter()
                .enumerate()
                .map(|(r, t)| (t.as_slice(), r as u32))
                .collect();
            let merges: Vec<String> = tokens
                .iter()
                .enumerate()
                .filter(|(_, t)| t.len() > 1)
                .map(|(r, t)| {
                    let cut = merge_cut(t, r as u32, &ranks);
                    format!("{} {}", text(&t[..cut]), text(&t[cut..]))
                })
                .collect();
            let mut strings: Vec<String> = tokens.iter().map(|t| text(t)).collect();
            let mut types = vec![1i32; strings.len()];
            strings.extend(SPECIALS.iter().map(|s| s.to_string()));
            types.extend([3; SPECIALS.len()]);
            let mut w = GgufWriter::new();
            w.meta("general.architecture", MetaValue::String("qwen2".into()))
                .meta("tokenizer.ggml.model", MetaValue::String("gpt2".into()))
                .meta("tokenizer.ggml.pre", MetaValue::String("qwen2".into()))
                .meta(
                    "tokenizer.ggml.tokens",
                    MetaValue::Array(MetaArray::String(strings.into_iter().collect())),
                )
                .meta(
                    "tokenizer.ggml.token_type",
                    MetaValue::Array(MetaArray::I32(types)),
                )
                .meta(
                    "tokenizer.ggml.merges",
                    MetaValue::Array(MetaArray::String(merges.into_iter().collect())),
                )
                .meta("tokenizer.ggml.eos_token_id", MetaValue::U32(151_643));
            let file = parse_gguf(&w.to_bytes()).expect("the GGUF parses");
            Some(Tokenizer::from_gguf(&file.metadata).expect("the Qwen tokenizer builds"))
        })
        .as_ref()
}

/// Every reference text encodes to tiktoken's ids and decodes back to itself.
#[test]
fn qwen_tokenizations_equal_tiktoken_on_qwens_vocabulary() {
    let Some(tk) = qwen_tokenizer() else { return };
    let reference: serde_json::Value = serde_json::from_str(REFERENCE).unwrap();
    assert_eq!(reference["vocab_sha256"], QWEN_VOCAB_SHA256);
    let cases = reference["cases"].as_array().unwrap();
    assert!(cases.len() >= 16);
    let mut wrong = Vec::new();
    for case in cases {
        let text = case["text"].as_str().unwrap();
        let want: Vec<u32> = case["ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap() as u32)
            .collect();
        let got = tk.encode(text).unwrap();
        if got != want {
            wrong.push(format!("{text:?}: gpuscope {got:?}, tiktoken {want:?}"));
        }
        assert_eq!(tk.decode(&got).unwrap(), text, "round trip");
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// Qwen splits digits one by one (Llama 3 takes up to three): the pre-tokenizer is the
/// `qwen2` one, and the chat markers are one id each.
#[test]
fn qwen_splits_every_digit_and_keeps_chat_markers_whole() {
    let Some(tk) = qwen_tokenizer() else { return };
    let ids = tk.encode("12345").unwrap();
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert_eq!(tk.pre.as_deref(), Some("qwen2"));
    assert_eq!(tk.encode("<|im_start|>").unwrap(), vec![151_644]);
    assert_eq!(tk.encode("<|im_end|>").unwrap(), vec![151_645]);
}
