//! Fuzzes the profile reader and what `gpuscope report` does with what it reads: any
//! bytes must give a report or an error, never a panic (an overflow in an analysis of
//! hostile numbers included: fuzz builds check overflow).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(profile) = gpuscope_trace::io::profile_from_json(text) {
        let _ = gpuscope_report::render::render_text(&profile);
    }
});
