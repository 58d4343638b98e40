//! Rendering: analysis results turned into text. Nothing here computes a statistic;
//! every number comes from [`crate::analysis`], so another format (Markdown, HTML)
//! can be added beside [`text`] without repeating the arithmetic.
//!
//! Every number printed carries its unit, in the value or in its column header.

pub mod text;
pub mod units;

pub use text::{render_analysis_text, render_text};
