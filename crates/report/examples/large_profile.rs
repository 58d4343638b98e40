//! Writes a large synthetic profile (see `benches/common`) for timing `gpuscope report`:
//!
//!     cargo run --release -p gpuscope-trace --example large_profile -- 1000000 big.gpuprof
//!     /usr/bin/time -v target/release/gpuscope report big.gpuprof > /dev/null
//!
//! A path ending in `.json` gets the JSON format instead of the compact one.

#[path = "../benches/common/mod.rs"]
mod common;

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(n), Some(path)) = (args.next(), args.next()) else {
        eprintln!("usage: large_profile DISPATCHES FILE(.gpuprof|.json)");
        std::process::exit(2);
    };
    let Ok(n) = n.parse::<usize>() else {
        eprintln!("DISPATCHES must be a number, not `{n}`");
        std::process::exit(2);
    };
    let p = common::large_profile(n);
    let path = std::path::Path::new(&path);
    let written = if path.extension().is_some_and(|e| e == "json") {
        gpuscope_trace::io::save_profile(path, &p).map_err(|e| e.to_string())
    } else {
        gpuscope_trace::compact::save(path, &p).map_err(|e| e.to_string())
    };
    if let Err(e) = written {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    eprintln!(
        "{} dispatches in {} tokens written to {}",
        p.dispatches.len(),
        p.tokens.len(),
        path.display()
    );
}
