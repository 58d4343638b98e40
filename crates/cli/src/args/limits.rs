//! The range of every numeric argument, checked while the command line is parsed (clap
//! value parsers): a value no run can use is a one-line usage error (exit 2) before
//! anything is allocated or measured. Where a later check knows more (the model's
//! vocabulary, the device's buffer limits), it still runs.

use std::ops::RangeInclusive;

/// Most tokens one run decodes or feeds (prompt, generation, warm-up, `bench` lengths):
/// 2^20, eight times the longest context of the models gpuscope runs (128k). Past it, a
/// run is refused at parse time instead of building a prompt or cache it cannot use.
pub const MAX_TOKENS: u32 = 1 << 20;

/// Most entries a `bench` length list expands to (`-p 0-4096+1` is 4097): each entry is
/// a test of its own, repeated `-r` times.
pub const MAX_LIST: u64 = 4096;

/// Most kernel configurations one `bench` compares (`--kernel OP=V1,V2` lists multiply):
/// each builds a decoder and runs every test. Counted before any is made.
pub const MAX_CONFIGURATIONS: u64 = 256;

/// The longest time limit, in seconds (11.6 days): longer is "wait forever", which 0
/// already says.
pub const MAX_SECONDS: f64 = 1e6;

/// A clap parser for a `u32` in `range`, named in its error.
pub fn u32_in(range: RangeInclusive<u32>) -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(i64::from(*range.start())..=i64::from(*range.end()))
}

/// A clap parser for a `u64` in `range`.
pub fn u64_in(range: RangeInclusive<u64>) -> clap::builder::RangedU64ValueParser<u64> {
    clap::value_parser!(u64).range(range)
}

/// A number of tokens: 1 to [`MAX_TOKENS`].
pub fn tokens() -> clap::builder::RangedI64ValueParser<u32> {
    u32_in(1..=MAX_TOKENS)
}

/// A number of tokens that may be 0 (warm-up, prompt length): 0 to [`MAX_TOKENS`].
pub fn tokens_or_none() -> clap::builder::RangedI64ValueParser<u32> {
    u32_in(0..=MAX_TOKENS)
}

/// A finite `f64` in `range`, or a one-line error that says what was expected.
pub fn finite_in(s: &str, range: RangeInclusive<f64>, what: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && range.contains(&v) => Ok(v),
        _ => Err(format!(
            "`{s}` is not {what} (a number from {} to {})",
            range.start(),
            range.end()
        )),
    }
}

/// `llama-bench`'s list entries, checked against [`MAX_TOKENS`] and counted against
/// [`MAX_LIST`] before any is made: `(first, last, step, multiply)`.
pub fn list_len(first: u32, last: u32, step: u32, multiply: bool) -> Option<u64> {
    if first > last {
        return Some(0);
    }
    if multiply {
        // first, first·f, first·f², ... ≤ last: at most 32 entries for u32 values.
        let (mut n, mut i) = (0u64, u64::from(first));
        while i <= u64::from(last) {
            n += 1;
            i = i.checked_mul(u64::from(step)).filter(|&next| next > i)?;
        }
        Some(n)
    } else {
        (step > 0).then(|| u64::from(last - first) / u64::from(step) + 1)
    }
}
