//! The crate's one test binary: a module per topic, fixtures built in `fixture`.

mod analysis;
mod atomic;
mod bench;
mod budget;
mod capture;
mod ceilings;
mod checklist;
mod compact;
mod diff;
mod fixture;
mod fuzz_seeds;
mod html;
mod io;
mod markdown;
mod memory;
mod overview;
mod perfetto;
mod render;
mod roofline;
mod steady;
mod timeline;
