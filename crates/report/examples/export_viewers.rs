//! Times the viewer exports of a saved profile (what `gpuscope report --format
//! perfetto|md|html` does after loading it), for BENCHMARKS.md:
//!
//!     cargo run --release -p gpuscope-trace --example large_profile -- 1000000 big.gpuprof
//!     /usr/bin/time -v target/release/examples/export_viewers big.gpuprof OUTDIR
//!
//! Writes OUTDIR/profile.{pftrace,md,html} and prints each step's wall time.

use std::time::Instant;

use gpuscope_report::analysis::{analyze, RooflineCeilings};
use gpuscope_report::render;
use gpuscope_trace::{atomic, io};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [profile, out] = args.as_slice() else {
        eprintln!("usage: export_viewers PROFILE OUTDIR");
        std::process::exit(2);
    };
    let out = std::path::Path::new(out);
    let t = Instant::now();
    let p = io::load_profile(std::path::Path::new(profile)).unwrap_or_else(|e| {
        eprintln!("error: {e}");
        std::process::exit(1)
    });
    println!(
        "load: {:.3} s ({} dispatches)",
        t.elapsed().as_secs_f64(),
        p.dispatches.len()
    );
    let ceilings = p.ceilings.as_ref().and_then(RooflineCeilings::from);
    let t = Instant::now();
    let s = render::perfetto::save_perfetto(&out.join("profile.pftrace"), &p, ceilings.as_ref())
        .expect("writes the trace");
    println!(
        "perfetto export: {:.3} s, {:.1} MB, {} packets",
        t.elapsed().as_secs_f64(),
        s.bytes as f64 / 1e6,
        s.packets
    );
    let t = Instant::now();
    let a = analyze(&p);
    println!("analyze: {:.3} s", t.elapsed().as_secs_f64());
    let t = Instant::now();
    let md = render::render_analysis_markdown(&p, &a);
    atomic::write_atomic(&out.join("profile.md"), md.as_bytes()).expect("writes md");
    println!(
        "markdown: {:.3} s, {} kB",
        t.elapsed().as_secs_f64(),
        md.len() / 1000
    );
    let t = Instant::now();
    let html = render::render_analysis_html(&p, &a);
    atomic::write_atomic(&out.join("profile.html"), html.as_bytes()).expect("writes html");
    println!(
        "html: {:.3} s, {} kB",
        t.elapsed().as_secs_f64(),
        html.len() / 1000
    );
    // The OS takes the memory back at exit, as `gpuscope report` lets it.
    std::mem::forget((p, a));
}
