//! Crafted broken files: each gives its own error, never a panic.

use super::*;

fn valid() -> GgufWriter {
    let mut w = GgufWriter::new();
    w.meta("general.architecture", MetaValue::String("llama".into()))
        .meta("n", MetaValue::U32(7))
        .meta(
            "nested",
            MetaValue::Array(MetaArray::Array(vec![
                MetaArray::I16(vec![-1, 2]),
                MetaArray::String(["a", "ü"].map(String::from).into_iter().collect()),
            ])),
        )
        .tensor("a", &[32, 2], 8, vec![1u8; 68])
        .tensor("b", &[3], 0, vec![2u8; 12]);
    w
}

/// Byte offset of the first tensor info (just after the metadata).
fn tensor_infos_start(bytes: &[u8]) -> usize {
    let needle = b"\x01\x00\x00\x00\x00\x00\x00\x00a\x02\x00\x00\x00\x20\x00";
    bytes
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap()
}

#[test]
fn valid_file_round_trips_every_value_type() {
    let mut w = valid();
    let values = [
        MetaValue::U8(1),
        MetaValue::I8(-2),
        MetaValue::U16(3),
        MetaValue::I16(-4),
        MetaValue::I32(-6),
        MetaValue::F32(0.5),
        MetaValue::Bool(true),
        MetaValue::U64(u64::MAX),
        MetaValue::I64(i64::MIN),
        MetaValue::F64(-0.25),
        MetaValue::Array(MetaArray::Bool(vec![true, false])),
        MetaValue::Array(MetaArray::F64(vec![])),
    ];
    for (i, v) in values.iter().enumerate() {
        w.meta(&format!("v{i}"), v.clone());
    }
    let bytes = w.to_bytes();
    let f = parse_gguf(&bytes).unwrap();
    assert_eq!(f.version, 3);
    for (i, v) in values.iter().enumerate() {
        assert_eq!(f.metadata.get(&format!("v{i}")), Some(v));
    }
    let nested = f.metadata.get_array("nested").unwrap();
    let MetaArray::Array(inner) = nested else {
        panic!("{nested:?}")
    };
    assert_eq!(
        inner[1].as_strings().unwrap().iter().collect::<Vec<_>>(),
        ["a", "ü"]
    );
    let a = f.tensor("a").unwrap();
    assert_eq!(
        (a.cols_rows(), a.size, a.ggml_type.name),
        ((32, 2), 68, "q8_0")
    );
    let b = f.tensor("b").unwrap();
    assert_eq!(b.offset, 96, "68 bytes rounded up to the 32-byte alignment");
    let g = Gguf::from_bytes(bytes).unwrap();
    assert_eq!(g.tensor_bytes(b), &[2u8; 12]);
    assert_eq!(g.tensor_data(a).bytes(), &[1u8; 68][..]);
}

#[test]
fn version_2_reads_and_custom_alignment_is_honoured() {
    let mut w = valid();
    w.version = 2;
    w.alignment = 64;
    w.meta("general.alignment", MetaValue::U32(64));
    let f = parse_gguf(&w.to_bytes()).unwrap();
    assert_eq!((f.version, f.alignment, f.data_offset % 64), (2, 64, 0));
}

#[test]
fn truncated_header() {
    let bytes = valid().to_bytes();
    for cut in [0, 3, 6, 10, 20] {
        let err = parse_gguf(&bytes[..cut]).unwrap_err();
        match (cut, &err) {
            (0 | 3, GgufError::BadMagic { .. }) => {}
            (
                6,
                GgufError::Truncated {
                    field, offset: 4, ..
                },
            ) if field == "version" => {}
            (
                10,
                GgufError::Truncated {
                    field, offset: 8, ..
                },
            ) if field == "tensor_count" => {}
            // 2 tensor infos cannot fit in the 4 bytes left: refused before any is read.
            (
                20,
                GgufError::AbsurdCount {
                    field, offset: 8, ..
                },
            ) if field == "tensor_count" => {}
            _ => panic!("cut at {cut}: {err}"),
        }
    }
    // Every prefix fails cleanly.
    for cut in 0..bytes.len() - 1 {
        assert!(
            parse_gguf(&bytes[..cut]).is_err(),
            "prefix of {cut} bytes parsed"
        );
    }
}

#[test]
fn tensor_past_end_of_file() {
    let bytes = valid().to_bytes();
    let err = parse_gguf(&bytes[..bytes.len() - 1]).unwrap_err();
    let GgufError::TensorOutOfBounds {
        tensor, size: 12, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(tensor, "b");
    assert!(
        err.to_string().contains("past the end of the file"),
        "{err}"
    );
}

#[test]
fn absurd_string_length() {
    let mut bytes = valid().to_bytes();
    // The first key's length sits right after the 24-byte header.
    bytes[24..32].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    let GgufError::AbsurdLength {
        field, offset: 24, ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(field, "metadata entry 0 key");
}

#[test]
fn absurd_counts() {
    let mut bytes = valid().to_bytes();
    bytes[8..16].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    assert!(
        matches!(&err, GgufError::AbsurdCount { field, offset: 8, .. } if field == "tensor_count"),
        "{err}"
    );

    // An array count: the "nested" value's inner i16 array claims 2^61 elements.
    let mut bytes = valid().to_bytes();
    let at = bytes.windows(4).position(|w| w == b"nest").unwrap() + 6 + 4 + 4 + 8 + 4;
    assert_eq!(&bytes[at..at + 8], &2u64.to_le_bytes());
    bytes[at..at + 8].copy_from_slice(&(1u64 << 61).to_le_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    let GgufError::AbsurdCount {
        field,
        offset,
        count,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(
        (field.as_str(), *offset, *count),
        ("value of \"nested\"", at as u64, 1 << 61)
    );
}

#[test]
fn unknown_tensor_type() {
    let mut bytes = valid().to_bytes();
    let at = tensor_infos_start(&bytes) + 9 + 4 + 16; // name, n_dims, two dims
    bytes[at..at + 4].copy_from_slice(&1234u32.to_le_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    let GgufError::UnknownTensorType {
        tensor,
        type_id: 1234,
        offset,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!((tensor.as_str(), *offset), ("a", at as u64));
}

#[test]
fn known_ggml_type_without_kernels_is_listed_not_refused() {
    let mut w = GgufWriter::new();
    w.tensor("k", &[256, 2], 14, vec![0u8; 420]); // q6_k
    let f = parse_gguf(&w.to_bytes()).unwrap();
    let t = f.tensor("k").unwrap();
    assert_eq!((t.ggml_type.name, t.size), ("q6_k", 420));
}

#[test]
fn unknown_value_type_and_nesting_depth() {
    let mut bytes = valid().to_bytes();
    // The first value's type id follows its key ("general.architecture", 20 bytes).
    let at = 24 + 8 + 20;
    bytes[at..at + 4].copy_from_slice(&99u32.to_le_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    assert!(
        matches!(err, GgufError::UnknownValueType { type_id: 99, .. }),
        "{err}"
    );

    let mut deep = MetaArray::U8(vec![1]);
    for _ in 0..MAX_ARRAY_DEPTH + 1 {
        deep = MetaArray::Array(vec![deep]);
    }
    let mut w = GgufWriter::new();
    w.meta("deep", MetaValue::Array(deep));
    let err = parse_gguf(&w.to_bytes()).unwrap_err();
    assert!(matches!(err, GgufError::NestingTooDeep { .. }), "{err}");
}

#[test]
fn misaligned_data_offset() {
    let mut bytes = valid().to_bytes();
    let at = tensor_infos_start(&bytes) + 9 + 4 + 16 + 4; // the offset of tensor "a"
    bytes[at..at + 8].copy_from_slice(&3u64.to_le_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    let GgufError::MisalignedTensor {
        tensor,
        data_offset: 3,
        alignment: 32,
        ..
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(tensor, "a");
}

#[test]
fn bad_alignment_value() {
    for bad in [MetaValue::U32(0), MetaValue::U32(48), MetaValue::U64(32)] {
        let mut w = valid();
        w.meta("general.alignment", bad);
        let err = parse_gguf(&w.to_bytes()).unwrap_err();
        assert!(matches!(err, GgufError::BadAlignment { .. }), "{err}");
    }
}

#[test]
fn v1_and_big_endian_files_are_refused_by_name() {
    let mut bytes = valid().to_bytes();
    bytes[4..8].copy_from_slice(&1u32.to_le_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    assert!(
        matches!(err, GgufError::UnsupportedVersion { version: 1, .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("version 1 used 32-bit counts"),
        "{err}"
    );
    bytes[4..8].copy_from_slice(&3u32.to_be_bytes());
    let err = parse_gguf(&bytes).unwrap_err();
    assert!(err.to_string().contains("big-endian"), "{err}");
}

#[test]
fn bad_shapes_duplicates_and_utf8() {
    let mut w = GgufWriter::new();
    w.tensor("r", &[33], 2, vec![0u8; 18]);
    let err = parse_gguf(&w.to_bytes()).unwrap_err();
    assert!(
        matches!(&err, GgufError::BadShape { reason, .. } if reason.contains("32-element blocks")),
        "{err}"
    );

    let mut w = GgufWriter::new();
    w.tensor("big", &[1 << 40, 1 << 40], 0, vec![]);
    assert!(matches!(
        parse_gguf(&w.to_bytes()).unwrap_err(),
        GgufError::BadShape { .. }
    ));
    let mut w = GgufWriter::new();
    w.tensor("five", &[1, 1, 1, 1, 1], 0, vec![0; 4]);
    assert!(matches!(
        parse_gguf(&w.to_bytes()).unwrap_err(),
        GgufError::BadShape { .. }
    ));

    let mut w = GgufWriter::new();
    w.tensor("t", &[1], 0, vec![0; 4])
        .tensor("t", &[1], 0, vec![0; 4]);
    assert!(matches!(
        parse_gguf(&w.to_bytes()).unwrap_err(),
        GgufError::DuplicateTensor { .. }
    ));
    let mut w = GgufWriter::new();
    w.meta("k", MetaValue::U8(1)).meta("k", MetaValue::U8(2));
    assert!(matches!(
        parse_gguf(&w.to_bytes()).unwrap_err(),
        GgufError::DuplicateKey { .. }
    ));

    let mut w = GgufWriter::new();
    w.meta("k", MetaValue::String("é".into()));
    let mut bytes = w.to_bytes();
    let at = bytes.windows(2).position(|w| w == "é".as_bytes()).unwrap();
    bytes[at + 1] = 0xff;
    let err = parse_gguf(&bytes).unwrap_err();
    assert!(
        matches!(&err, GgufError::InvalidUtf8 { field, .. } if field == "value of \"k\""),
        "{err}"
    );
}

#[test]
fn random_corruption_never_panics() {
    // A tiny deterministic fuzz pass (the cargo-fuzz target goes much further).
    let bytes = valid().to_bytes();
    let mut state = 0x2545F4914F6CDD1Du64;
    for _ in 0..3000 {
        let mut b = bytes.clone();
        for _ in 0..1 + (state % 4) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let i = (state % b.len() as u64) as usize;
            b[i] = (state >> 32) as u8;
        }
        let _ = parse_gguf(&b);
    }
}
