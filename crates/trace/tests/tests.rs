//! The crate's one test binary: a module per topic; fixtures come from
//! `gpuscope_trace::fixtures`.

mod atomic;
mod budget;
mod capture;
mod compact;
mod fuzz_seeds;
mod io;
mod recording;
