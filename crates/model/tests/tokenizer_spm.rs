//! The SentencePiece-style (`llama`) tokenizer, from a vocabulary with scores crafted
//! here: the real test model uses the `gpt2` kind, so this path needs its own file.

use gpuscope_model::gguf::{parse_gguf, GgufWriter, MetaArray, MetaValue};
use gpuscope_model::Tokenizer;

/// A small SentencePiece vocabulary: specials, the 256 byte-fallback tokens, letters and
/// merged pieces whose scores rank the merges (higher merges first).
fn spm_tokenizer() -> Tokenizer {
    let mut tokens: Vec<String> = vec!["<unk>".into(), "<s>".into(), "</s>".into()];
    let mut types: Vec<i32> = vec![2, 3, 3]; // unknown, control, control
    let mut scores: Vec<f32> = vec![0.0, 0.0, 0.0];
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        types.push(6); // byte
        scores.push(0.0);
    }
    let pieces = [
        ("▁", -1.0),
        ("H", -2.0),
        ("e", -2.0),
        ("l", -2.0),
        ("o", -2.0),
        ("w", -2.0),
        ("r", -2.0),
        ("d", -2.0),
        ("1", -2.0),
        ("2", -2.0),
        ("ll", -3.0),
        ("▁H", -3.5),
        ("▁He", -4.0),
        ("llo", -4.5),
        ("▁Hello", -5.0),
        ("or", -3.2),
        ("▁w", -3.6),
        ("▁wor", -4.2),
        ("ld", -4.4),
        ("▁world", -5.5),
    ];
    for (p, s) in pieces {
        tokens.push(p.into());
        types.push(1); // normal
        scores.push(s);
    }
    let mut w = GgufWriter::new();
    w.meta("general.architecture", MetaValue::String("llama".into()))
        .meta("tokenizer.ggml.model", MetaValue::String("llama".into()))
        .meta(
            "tokenizer.ggml.tokens",
            MetaValue::Array(MetaArray::String(tokens.into_iter().collect())),
        )
        .meta(
            "tokenizer.ggml.scores",
            MetaValue::Array(MetaArray::F32(scores)),
        )
        .meta(
            "tokenizer.ggml.token_type",
            MetaValue::Array(MetaArray::I32(types)),
        )
        .meta("tokenizer.ggml.bos_token_id", MetaValue::U32(1))
        .meta("tokenizer.ggml.eos_token_id", MetaValue::U32(2))
        .meta("tokenizer.ggml.unknown_token_id", MetaValue::U32(0));
    let file = parse_gguf(&w.to_bytes()).expect("crafted file parses");
    Tokenizer::from_gguf(&file.metadata).expect("SentencePiece tokenizer builds")
}

fn id(t: &Tokenizer, piece: &str) -> u32 {
    (0..t.vocab_size() as u32)
        .find(|&i| t.piece(i) == Some(piece))
        .unwrap_or_else(|| panic!("no piece {piece:?}"))
}

#[test]
fn words_merge_into_their_pieces_with_a_space_prefix() {
    let t = spm_tokenizer();
    let ids = t.encode("Hello world").unwrap();
    assert_eq!(ids, vec![id(&t, "▁Hello"), id(&t, "▁world")]);
    assert_eq!(t.decode(&ids).unwrap(), "Hello world");
}

#[test]
fn unknown_characters_fall_back_to_bytes_and_round_trip() {
    let t = spm_tokenizer();
    // 'é' is not in the vocabulary: its UTF-8 bytes C3 A9 become byte tokens.
    let ids = t.encode("Hé").unwrap();
    assert_eq!(ids, vec![id(&t, "▁H"), id(&t, "<0xC3>"), id(&t, "<0xA9>")]);
    for s in ["Hé", "Hello  world", "world12 Hello", "日本"] {
        let ids = t.encode(s).unwrap();
        assert_eq!(
            t.decode(&ids).unwrap(),
            s,
            "round trip of {s:?} via {ids:?}"
        );
    }
}

#[test]
fn the_prompt_gets_bos_and_eos_ends_text() {
    let t = spm_tokenizer();
    let ids = t.encode_prompt("Hello").unwrap();
    assert_eq!(
        ids.first(),
        Some(&1),
        "SentencePiece models add BOS by default: {ids:?}"
    );
    assert!(t.is_end(2));
}

/// Streaming (one id at a time, as `run` prints) gives the full decode's text piece by
/// piece: byte-fallback characters released once whole (never U+FFFD), the leading space
/// handled as the full decode does, over a text long enough that the stream's window of
/// ids moves on many times.
#[test]
fn streaming_matches_the_full_decode() {
    let t = spm_tokenizer();
    let text = ["Hello world Hé", "日本 world12 Hello"]
        .repeat(40)
        .join(" ");
    let ids = t.encode(&text).unwrap();
    assert!(ids.len() > 200, "{}", ids.len());
    let mut stream = t.stream();
    let mut streamed = String::new();
    for (i, &id) in ids.iter().enumerate() {
        let piece = stream.push(id).unwrap();
        assert!(!piece.contains('\u{FFFD}'), "token {i}: {piece:?}");
        streamed.push_str(&piece);
        // Where the full decode is whole text, the stream has released exactly it (a run
        // of byte tokens that ends mid-character decodes as U+FFFD throughout, so the
        // full text of those prefixes is not compared).
        let full = t.decode(&ids[..=i]).unwrap();
        if !full.contains('\u{FFFD}') {
            assert_eq!(streamed, full, "token {i}");
        }
    }
    assert_eq!(streamed, t.decode(&ids).unwrap());
}
