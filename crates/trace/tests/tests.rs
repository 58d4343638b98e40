//! The crate's one test binary: a module per topic, fixtures built in `fixture`.

mod analysis;
mod capture;
mod fixture;
mod io;
mod render;
