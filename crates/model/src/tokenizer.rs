//! The tokenizer a GGUF file describes, built on Hugging Face's `tokenizers` crate.
//!
//! GGUF stores the vocabulary (`tokenizer.ggml.tokens`), token types, and either BPE
//! merges (`tokenizer.ggml.model = "gpt2"`, byte-level BPE as in GPT-2, Llama 3,
//! SmolLM, Qwen) or scores (`"llama"`, SentencePiece-style BPE with byte fallback, as in
//! Llama 2). We rebuild the equivalent `tokenizers` pipeline from those arrays rather
//! than hand-writing BPE: the regexes follow llama.cpp's table for each
//! `tokenizer.ggml.pre` name, and for score-based vocabularies the merges are derived
//! from the scores the way `transformers`' GGUF converter does. Control tokens
//! (`<|im_start|>`, `<s>`) are special tokens: written in a prompt they encode as one id.

use std::collections::HashMap;

use thiserror::Error;
use tokenizers::decoders::byte_fallback::ByteFallback;
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::decoders::fuse::Fuse;
use tokenizers::decoders::sequence::Sequence as DecoderSequence;
use tokenizers::decoders::strip::Strip;
use tokenizers::decoders::DecoderWrapper;
use tokenizers::models::bpe::{Vocab, BPE};
use tokenizers::normalizers::{Prepend, Replace, Sequence as NormalizerSequence};
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence as PreSequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::pre_tokenizers::PreTokenizerWrapper;
use tokenizers::{AddedToken, NormalizerWrapper, SplitDelimiterBehavior};

use crate::gguf::{MetaArray, Metadata};

#[derive(Debug, Error)]
pub enum TokenizerError {
    #[error("GGUF metadata has no {key} (needed for the tokenizer)")]
    MissingKey { key: &'static str },
    #[error("GGUF metadata {key} is not {expected}")]
    BadKey {
        key: &'static str,
        expected: &'static str,
    },
    #[error("tokenizer model {model:?} is not supported (gpuscope reads \"gpt2\" byte-level BPE and \"llama\" SentencePiece-style vocabularies)")]
    UnknownModel { model: String },
    #[error("pre-tokenizer {pre:?} (tokenizer.ggml.pre) is not known to gpuscope; known: {known}")]
    UnknownPre { pre: String, known: String },
    #[error("building the tokenizer: {0}")]
    Build(String),
    #[error("encoding text: {0}")]
    Encode(String),
    #[error("decoding tokens: {0}")]
    Decode(String),
}

/// llama.cpp's token types (`llama_token_type`).
mod token_type {
    pub const UNKNOWN: i64 = 2;
    pub const CONTROL: i64 = 3;
    pub const USER_DEFINED: i64 = 4;
}

/// The splits of Llama 3 and Qwen 2 (llama.cpp's `LLAMA3` and `QWEN2` pre-tokenizers);
/// GPT-2's own split is built into `ByteLevel`.
const LLAMA3_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const QWEN2_REGEX: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

/// Pre-tokenizer names (llama.cpp's `tokenizer.ggml.pre` values) by regex family.
const GPT2_PRES: &[&str] = &["default", "gpt2", "gpt-2", "olmo", "jais"];
const DIGITS_PRES: &[&str] = &[
    "smollm",
    "starcoder",
    "refact",
    "command-r",
    "codeshell",
    "exaone",
    "minerva",
];
const LLAMA3_PRES: &[&str] = &[
    "llama3",
    "llama-bpe",
    "llama-v3",
    "falcon3",
    "pixtral",
    "dbrx",
    "smaug-bpe",
];
const QWEN2_PRES: &[&str] = &["qwen2", "deepseek-r1-qwen"];

/// Which vocabulary style the file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenizerKind {
    /// Byte-level BPE with merges (`gpt2`).
    ByteLevelBpe,
    /// SentencePiece-style BPE from scores, with byte fallback (`llama`).
    SentencePiece,
}

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    pub kind: TokenizerKind,
    /// `tokenizer.ggml.pre` (byte-level BPE only).
    pub pre: Option<String>,
    pub bos: Option<u32>,
    pub eos: Option<u32>,
    /// End-of-turn token of chat models, when the file names one.
    pub eot: Option<u32>,
    pub add_bos: bool,
    pub add_eos: bool,
    /// `tokenizer.chat_template`, if any (a Jinja template; see [`Tokenizer::chat_prompt`]).
    pub chat_template: Option<String>,
    /// The chat format `--chat` writes: the template's ([`ChatFormat::of`]), or where the
    /// file has no template, its architecture's ([`ChatFormat::of_architecture`]).
    pub chat_format: Option<ChatFormat>,
    tokens: Vec<String>,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer")
            .field("kind", &self.kind)
            .field("pre", &self.pre)
            .field("vocab", &self.tokens.len())
            .field("bos", &self.bos)
            .field("eos", &self.eos)
            .finish_non_exhaustive()
    }
}

fn build_err(e: impl std::fmt::Display) -> TokenizerError {
    TokenizerError::Build(e.to_string())
}

/// Merges for a score-based vocabulary: every split of a token into two tokens of the
/// vocabulary, most likely (highest score of the merged token) first — as
/// `transformers`' `generate_merges` does for GGUF files.
fn merges_from_scores(
    tokens: &[String],
    scores: &[f32],
    ids: &HashMap<&str, u32>,
) -> Vec<(String, String)> {
    let mut merges: Vec<(f32, u32, u32, String, String)> = Vec::new();
    for (tok, &score) in tokens.iter().zip(scores) {
        for (split, _) in tok.char_indices().skip(1) {
            let (l, r) = tok.split_at(split);
            if let (Some(&li), Some(&ri)) = (ids.get(l), ids.get(r)) {
                merges.push((score, li, ri, l.to_string(), r.to_string()));
            }
        }
    }
    merges.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    merges.into_iter().map(|(_, _, _, l, r)| (l, r)).collect()
}

impl Tokenizer {
    /// Builds the tokenizer from `tokenizer.ggml.*` metadata.
    pub fn from_gguf(md: &Metadata) -> Result<Tokenizer, TokenizerError> {
        let model = md
            .get_str("tokenizer.ggml.model")
            .ok_or(TokenizerError::MissingKey {
                key: "tokenizer.ggml.model",
            })?;
        let tokens = token_strings(md)?;
        let n = tokens.len();
        let types = match md.get_array("tokenizer.ggml.token_type") {
            Some(a) => a
                .to_i64s()
                .filter(|t| t.len() == n)
                .ok_or(TokenizerError::BadKey {
                    key: "tokenizer.ggml.token_type",
                    expected: "one integer per token",
                })?,
            None => vec![1; n],
        };
        let id_of = |key: &'static str| -> Result<Option<u32>, TokenizerError> {
            match md.get_u64(key) {
                None => Ok(None),
                Some(id) if (id as usize) < n => Ok(Some(id as u32)),
                Some(_) => Err(TokenizerError::BadKey {
                    key,
                    expected: "a token id inside the vocabulary",
                }),
            }
        };
        let (bos, eos, eot, unk) = (
            id_of("tokenizer.ggml.bos_token_id")?,
            id_of("tokenizer.ggml.eos_token_id")?,
            id_of("tokenizer.ggml.eot_token_id")?,
            id_of("tokenizer.ggml.unknown_token_id")?,
        );
        // Unique token -> id (a repeated string keeps its first id).
        let mut ids: HashMap<&str, u32> = HashMap::with_capacity(n);
        for (i, t) in tokens.iter().enumerate() {
            ids.entry(t.as_str()).or_insert(i as u32);
        }
        let vocab: Vocab = ids.iter().map(|(t, &i)| (t.to_string(), i)).collect();
        let mut built = match model {
            "gpt2" => byte_level_bpe(md, vocab)?,
            "llama" => {
                // The unknown token: the file's, else the first of type UNKNOWN.
                let unk = unk.or_else(|| {
                    types
                        .iter()
                        .position(|&t| t == token_type::UNKNOWN)
                        .map(|i| i as u32)
                });
                sentencepiece(md, &tokens, &ids, vocab, unk)?
            }
            other => {
                return Err(TokenizerError::UnknownModel {
                    model: other.to_string(),
                })
            }
        };
        add_special_tokens(&mut built.inner, &tokens, &types);
        Ok(Tokenizer {
            inner: built.inner,
            kind: built.kind,
            pre: built.pre,
            bos,
            eos,
            eot,
            add_bos: md
                .get_bool("tokenizer.ggml.add_bos_token")
                .unwrap_or(built.add_bos_default),
            add_eos: md.get_bool("tokenizer.ggml.add_eos_token").unwrap_or(false),
            chat_template: md.get_str("tokenizer.chat_template").map(str::to_string),
            chat_format: match md.get_str("tokenizer.chat_template") {
                Some(t) => ChatFormat::of(t),
                None => md
                    .get_str("general.architecture")
                    .and_then(ChatFormat::of_architecture),
            },
            tokens,
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.tokens.len()
    }

    /// The vocabulary entry of `id` as stored (byte-level pieces look like `Ġthe`).
    pub fn piece(&self, id: u32) -> Option<&str> {
        self.tokens.get(id as usize).map(String::as_str)
    }

    /// Encodes `text` as is: no BOS/EOS added; control tokens written in it (such as
    /// `<|im_start|>`) become their ids.
    pub fn encode(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let enc = self
            .inner
            .encode(text, false)
            .map_err(|e| TokenizerError::Encode(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Encodes a prompt: BOS first and EOS last when the file asks for them.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<u32>, TokenizerError> {
        let mut ids = Vec::new();
        if let (true, Some(b)) = (self.add_bos, self.bos) {
            ids.push(b);
        }
        ids.extend(self.encode(text)?);
        if let (true, Some(e)) = (self.add_eos, self.eos) {
            ids.push(e);
        }
        Ok(ids)
    }

    /// Decodes `ids` to text, control tokens included as written.
    pub fn decode(&self, ids: &[u32]) -> Result<String, TokenizerError> {
        self.inner
            .decode(ids, false)
            .map_err(|e| TokenizerError::Decode(e.to_string()))
    }

    /// Whether generation should stop at `id` (end of sequence or of turn).
    pub fn is_end(&self, id: u32) -> bool {
        Some(id) == self.eos || Some(id) == self.eot
    }

    /// A streaming decoder: feed ids one at a time, get text once it is whole UTF-8.
    pub fn stream(&self) -> TextStream<'_> {
        TextStream {
            tokenizer: self,
            window: self.inner.decode_stream(false),
            ids: Vec::new(),
            printed: 0,
            whole: false,
        }
    }

    /// The prompt for one user message in the file's chat format, when gpuscope knows
    /// it ([`ChatFormat`]); `None` otherwise (gpuscope does not run Jinja templates).
    pub fn chat_prompt(&self, user: &str) -> Option<String> {
        let template = self.chat_template.as_deref().unwrap_or("");
        Some(self.chat_format?.prompt(template, user))
    }
}

/// The chat formats gpuscope writes for `--chat`, recognized by the markers in a file's
/// `tokenizer.chat_template` (Jinja, which gpuscope does not run). One user message, then
/// the assistant's turn opened, as each template writes it with
/// `add_generation_prompt`; the BOS token, where the model has one, comes from the
/// tokenizer as for any prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatFormat {
    /// `<|im_start|>` (SmolLM2, Qwen), with the default system message the template
    /// writes literally, if any.
    ChatMl,
    /// `<start_of_turn>` (Gemma): the assistant's turn is `model`.
    Gemma,
    /// `<|start_header_id|>` (Llama 3).
    Llama3,
    /// `<|user|>` and `<|assistant|>` (Phi-3).
    Phi3,
    /// `[INST]` (Mistral, Llama 2): `[INST] {user} [/INST]`, or without the spaces where
    /// the template writes none (Mistral's v3 templates).
    Inst,
}

impl ChatFormat {
    /// The format `template` writes, if gpuscope knows it.
    pub fn of(template: &str) -> Option<ChatFormat> {
        [
            ("<|im_start|>", ChatFormat::ChatMl),
            ("<start_of_turn>", ChatFormat::Gemma),
            ("<|start_header_id|>", ChatFormat::Llama3),
            ("<|assistant|>", ChatFormat::Phi3),
            ("[INST]", ChatFormat::Inst),
        ]
        .into_iter()
        .find(|(marker, _)| template.contains(marker))
        .map(|(_, f)| f)
    }

    /// The format of an architecture's models, for a file without a template (the
    /// Gemma 3 270M file on PyPI has none): Gemma's, Phi-3's, and ChatML for Qwen. None
    /// for `llama` and `mistral`, whose models use several.
    pub fn of_architecture(architecture: &str) -> Option<ChatFormat> {
        match architecture {
            "gemma3" => Some(ChatFormat::Gemma),
            "phi3" => Some(ChatFormat::Phi3),
            "qwen2" | "qwen3" => Some(ChatFormat::ChatMl),
            _ => None,
        }
    }

    /// The prompt for one `user` message in this format (`template` for what it writes
    /// literally: ChatML's default system message, `[INST]`'s spacing).
    pub fn prompt(self, template: &str, user: &str) -> String {
        match self {
            ChatFormat::ChatMl => {
                const SYSTEM: &str = "<|im_start|>system\n";
                let system = template
                    .find(SYSTEM)
                    .and_then(|at| template[at..].find("<|im_end|>").map(|end| &template[at..at + end]))
                    .map(|s| format!("{s}<|im_end|>\n"))
                    .unwrap_or_default();
                format!("{system}<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n")
            }
            ChatFormat::Gemma => {
                format!("<start_of_turn>user\n{user}<end_of_turn>\n<start_of_turn>model\n")
            }
            ChatFormat::Llama3 => format!(
                "<|start_header_id|>user<|end_header_id|>\n\n{user}<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
            ),
            ChatFormat::Phi3 => format!("<|user|>\n{user}<|end|>\n<|assistant|>\n"),
            ChatFormat::Inst if template.contains("[INST] ") => format!("[INST] {user} [/INST]"),
            ChatFormat::Inst => format!("[INST]{user}[/INST]"),
        }
    }
}

/// The `tokenizers` tokenizer type's incremental decoder.
type WindowDecoder<'t> = tokenizers::DecodeStream<
    't,
    tokenizers::models::ModelWrapper,
    NormalizerWrapper,
    PreTokenizerWrapper,
    tokenizers::processors::PostProcessorWrapper,
    DecoderWrapper,
>;

/// Incremental decoding for printing tokens as they come: a token may end in the middle
/// of a UTF-8 character, so text is released only up to the last whole character.
///
/// Through `tokenizers`' `DecodeStream`, which decodes a window of the last few ids: a
/// decode of every id so far at every token cost O(n) a token (SmolLM2's tokenizer on the
/// 2-core VM: 21 µs a token over 512 tokens, 44 µs for the 512th; the window: 0.6 µs).
/// Should the window decoder fail (a decoder whose text is not stable under appending),
/// every later push decodes all ids.
pub struct TextStream<'t> {
    tokenizer: &'t Tokenizer,
    window: WindowDecoder<'t>,
    /// Every id so far (for the whole-text fallback).
    ids: Vec<u32>,
    /// Bytes of text released so far.
    printed: usize,
    whole: bool,
}

impl TextStream<'_> {
    /// Adds `id`; returns the text it completes (possibly empty).
    pub fn push(&mut self, id: u32) -> Result<String, TokenizerError> {
        self.ids.push(id);
        if !self.whole {
            match self.window.step(id) {
                Ok(text) => {
                    let text = text.unwrap_or_default();
                    self.printed += text.len();
                    return Ok(text);
                }
                Err(_) => self.whole = true,
            }
        }
        let text = self.tokenizer.decode(&self.ids)?;
        if text.ends_with('\u{FFFD}')
            || text.len() < self.printed
            || !text.is_char_boundary(self.printed)
        {
            return Ok(String::new());
        }
        let new = text[self.printed..].to_string();
        self.printed = text.len();
        Ok(new)
    }
}

fn byte_level_pre_tokenizer(pre: &str) -> Result<PreTokenizerWrapper, TokenizerError> {
    let byte_level =
        |use_regex| PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, false, use_regex));
    let split = |re: &str| -> Result<PreTokenizerWrapper, TokenizerError> {
        Ok(Split::new(
            SplitPattern::Regex(re.to_string()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(build_err)?
        .into())
    };
    Ok(if GPT2_PRES.contains(&pre) {
        byte_level(true)
    } else if DIGITS_PRES.contains(&pre) {
        PreSequence::new(vec![Digits::new(true).into(), byte_level(true)]).into()
    } else if LLAMA3_PRES.contains(&pre) {
        PreSequence::new(vec![split(LLAMA3_REGEX)?, byte_level(false)]).into()
    } else if QWEN2_PRES.contains(&pre) {
        PreSequence::new(vec![split(QWEN2_REGEX)?, byte_level(false)]).into()
    } else {
        let known: Vec<&str> = [GPT2_PRES, DIGITS_PRES, LLAMA3_PRES, QWEN2_PRES].concat();
        return Err(TokenizerError::UnknownPre {
            pre: pre.to_string(),
            known: known.join(", "),
        });
    })
}

/// A tokenizer model built from the file, before its special tokens are added.
struct BuiltModel {
    inner: tokenizers::Tokenizer,
    kind: TokenizerKind,
    /// The byte-level pre-tokenizer's name (`tokenizer.ggml.pre`).
    pre: Option<String>,
    /// Whether a BOS is added when the file does not say.
    add_bos_default: bool,
}

/// `tokenizer.ggml.tokens`: the vocabulary, by id.
fn token_strings(md: &Metadata) -> Result<Vec<String>, TokenizerError> {
    Ok(md
        .get_array("tokenizer.ggml.tokens")
        .ok_or(TokenizerError::MissingKey {
            key: "tokenizer.ggml.tokens",
        })?
        .as_strings()
        .ok_or(TokenizerError::BadKey {
            key: "tokenizer.ggml.tokens",
            expected: "an array of strings",
        })?
        .iter()
        .map(str::to_string)
        .collect())
}

/// `gpt2`: byte-level BPE from the file's merges, with the pre-tokenizer it names.
fn byte_level_bpe(md: &Metadata, vocab: Vocab) -> Result<BuiltModel, TokenizerError> {
    let merges = md
        .get_array("tokenizer.ggml.merges")
        .ok_or(TokenizerError::MissingKey {
            key: "tokenizer.ggml.merges",
        })?
        .as_strings()
        .ok_or(TokenizerError::BadKey {
            key: "tokenizer.ggml.merges",
            expected: "an array of strings",
        })?
        .iter()
        .map(|m| {
            m.split_once(' ')
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .ok_or(TokenizerError::BadKey {
                    key: "tokenizer.ggml.merges",
                    expected: "\"left right\" pairs",
                })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let bpe = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .build()
        .map_err(build_err)?;
    let pre = md
        .get_str("tokenizer.ggml.pre")
        .unwrap_or("default")
        .to_string();
    let mut tk = tokenizers::Tokenizer::new(bpe);
    tk.with_pre_tokenizer(Some(byte_level_pre_tokenizer(&pre)?));
    tk.with_decoder(Some(ByteLevelDecoder::default()));
    Ok(BuiltModel {
        inner: tk,
        kind: TokenizerKind::ByteLevelBpe,
        pre: Some(pre),
        add_bos_default: false,
    })
}

/// `llama`: SentencePiece as BPE with merges from the scores, byte fallback, the `▁`
/// space and (by default) a space prefix.
fn sentencepiece(
    md: &Metadata,
    tokens: &[String],
    ids: &HashMap<&str, u32>,
    vocab: Vocab,
    unk: Option<u32>,
) -> Result<BuiltModel, TokenizerError> {
    let scores = md
        .get_array("tokenizer.ggml.scores")
        .and_then(MetaArray::to_f32s)
        .filter(|s| s.len() == tokens.len())
        .ok_or(TokenizerError::BadKey {
            key: "tokenizer.ggml.scores",
            expected: "one f32 per token",
        })?;
    let merges = merges_from_scores(tokens, &scores, ids);
    let mut b = BPE::builder()
        .vocab_and_merges(vocab, merges)
        .byte_fallback(true)
        .fuse_unk(true);
    if let Some(u) = unk {
        b = b.unk_token(tokens[u as usize].clone());
    }
    let bpe = b.build().map_err(build_err)?;
    let add_space_prefix = md
        .get_bool("tokenizer.ggml.add_space_prefix")
        .unwrap_or(true);
    let mut tk = tokenizers::Tokenizer::new(bpe);
    let mut norms: Vec<NormalizerWrapper> = Vec::new();
    if add_space_prefix {
        norms.push(Prepend::new("▁".into()).into());
    }
    norms.push(Replace::new(" ", "▁").map_err(build_err)?.into());
    tk.with_normalizer(Some(NormalizerSequence::new(norms)));
    let mut decs: Vec<DecoderWrapper> = vec![
        Replace::new("▁", " ").map_err(build_err)?.into(),
        ByteFallback::new().into(),
        Fuse::new().into(),
    ];
    if add_space_prefix {
        decs.push(Strip::new(' ', 1, 0).into());
    }
    tk.with_decoder(Some(DecoderSequence::new(decs)));
    Ok(BuiltModel {
        inner: tk,
        kind: TokenizerKind::SentencePiece,
        pre: None,
        add_bos_default: true,
    })
}

/// Control tokens (special) and user-defined ones (matched as written, not normalized)
/// become added tokens, so text that spells them encodes to their ids.
fn add_special_tokens(inner: &mut tokenizers::Tokenizer, tokens: &[String], types: &[i64]) {
    let added: Vec<AddedToken> = tokens
        .iter()
        .zip(types)
        .filter_map(|(t, &ty)| match ty {
            token_type::CONTROL => Some(AddedToken::from(t.clone(), true)),
            token_type::USER_DEFINED => Some(AddedToken::from(t.clone(), false).normalized(false)),
            _ => None,
        })
        .collect();
    inner.add_special_tokens(&added);
}

#[cfg(test)]
mod tests {
    use super::ChatFormat;

    /// The formats from the markers of real templates (abridged from the models' GGUF
    /// files), each prompt as the template writes it for one user message.
    #[test]
    fn chat_formats_from_real_templates() {
        let cases = [
            (
                "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}",
                ChatFormat::ChatMl,
                "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
            ),
            (
                "{{ bos_token }}{%- for message in loop_messages -%}{{ '<start_of_turn>' + role + '\n' }}{%- endfor -%}{%- if add_generation_prompt -%}{{'<start_of_turn>model\n'}}{%- endif -%}",
                ChatFormat::Gemma,
                "<start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n",
            ),
            (
                "{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}",
                ChatFormat::Llama3,
                "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
            ),
            (
                "{% for message in messages %}{% if message['role'] == 'user' %}{{'<|user|>' + '\n' + message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% endif %}{% endfor %}",
                ChatFormat::Phi3,
                "<|user|>\nhi<|end|>\n<|assistant|>\n",
            ),
            (
                "{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ '[INST] ' + message['content'] + ' [/INST]' }}{% endif %}{% endfor %}",
                ChatFormat::Inst,
                "[INST] hi [/INST]",
            ),
            (
                "{%- if message['role'] == 'user' %}{{- '[INST]' + message['content'] + '[/INST]' }}{%- endif %}",
                ChatFormat::Inst,
                "[INST]hi[/INST]",
            ),
        ];
        for (template, format, prompt) in cases {
            assert_eq!(ChatFormat::of(template), Some(format), "{template}");
            assert_eq!(format.prompt(template, "hi"), prompt, "{format:?}");
        }
        assert_eq!(ChatFormat::of("{{ messages }}"), None);
    }
}
