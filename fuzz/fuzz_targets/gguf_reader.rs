//! Any bytes: the GGUF reader returns a result (usually an error) and never panics,
//! hangs or allocates beyond the input's size. Parsed files go on to the Llama mapping
//! and the tokenizer (built, then encoding and decoding a short text as `run` does),
//! which must also fail cleanly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(file) = gpuscope_model::gguf::parse_gguf(data) {
        if let Ok(t) = gpuscope_model::Tokenizer::from_gguf(&file.metadata) {
            if let Ok(ids) = t.encode_prompt("Hello world, ab ab") {
                let _ = t.decode(&ids);
            }
        }
        if let Ok(g) = gpuscope_model::gguf::Gguf::from_bytes(data.to_vec()) {
            let _ = gpuscope_model::load_model(g);
        }
    }
});
