//! Rendering: analysis results turned into reports and traces. Nothing here computes a
//! statistic; every number comes from [`crate::analysis`], so each format is a layout
//! of the same figures.
//!
//! Every number printed carries its unit, in the value or in its column header.
//!
//! - [`text`]: the profile report;
//! - [`markdown`]: the profile as a results document (`report --format md`);
//! - [`html`]: the profile as one self-contained page (`report --format html`);
//! - [`perfetto`]: the profile as a Perfetto trace (`report --format perfetto`);
//! - [`diff`]: `gpuscope diff` as text, Markdown or JSON;
//! - [`bench`](mod@bench): `gpuscope bench` in llama-bench's formats;
//! - [`ceilings`]: what `gpuscope peak` measured;
//! - [`capture`]: `gpuscope inspect` and `replay`;
//! - [`check`]: `gpuscope check`'s verdict;
//! - [`counters`]: the counters table's cells, shared by the text and Markdown reports.

pub mod bench;
pub mod capture;
pub mod ceilings;
pub mod check;
pub mod counters;
pub mod diff;
pub mod html;
pub mod markdown;
pub mod perfetto;
pub mod sweep;
pub mod text;
pub mod units;

pub use ceilings::render_ceilings;
pub use check::render_check;
pub use diff::{render_diff_md, render_diff_text};
pub use html::{render_analysis_html, render_html};
pub use markdown::{render_analysis_markdown, render_markdown};
pub use text::{render_analysis_text, render_text};
