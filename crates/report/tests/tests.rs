//! The crate's one test binary: a module per topic; fixtures come from
//! `gpuscope_trace::fixtures`.

mod analysis;
mod bench;
mod ceilings;
mod checklist;
mod diff;
mod hostile;
mod html;
mod inspect;
mod markdown;
mod memory;
mod overview;
mod perfetto;
mod render;
mod roofline;
mod sampled;
mod steady;
mod timeline;
