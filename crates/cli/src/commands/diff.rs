//! `gpuscope diff BASE NEW`: the two profiles compared, and with limits, the gate.

use std::io::Write;

use anyhow::{anyhow, Context};
use gpuscope_report::analysis::diff::by_family;
use gpuscope_report::analysis::{diff, gate, DiffError, DiffOptions, GateOptions};
use gpuscope_report::render::diff::{json, render_diff_md, render_diff_text};

use crate::args::{DiffArgs, DiffBy, DiffFormat};
use crate::exit::{Exit, GATE_FAILED};

pub fn run(args: &DiffArgs) -> Result<(), Exit> {
    let mut base = gpuscope_trace::io::load_profile(&args.base)?;
    let mut new = gpuscope_trace::io::load_profile(&args.new)?;
    if args.by == DiffBy::Family {
        (base, new) = (by_family(&base), by_family(&new));
    }
    let options = DiffOptions {
        alpha: args.alpha,
        min_effect: args.min_effect,
    };
    let d = diff(&base, &new, &options).map_err(|e| {
        let path = match e {
            DiffError::NoTokens(gpuscope_report::analysis::diff::Side::Base) => &args.base,
            DiffError::NoTokens(_) => &args.new,
        };
        anyhow!("{}: {e}", path.display())
    })?;
    // Loud on stderr too: stdout may be a file nobody reads until the numbers look odd.
    for m in &d.mismatches {
        eprintln!(
            "gpuscope: WARNING: {} differs between the profiles: base `{}`, new `{}`",
            m.what, m.base, m.new
        );
    }
    if args.strict {
        if let Some(m) = d.incompatible().next() {
            return Err(anyhow!(
                "--strict: the profiles differ in {} (base `{}`, new `{}`): refusing to compare",
                m.what,
                m.base,
                m.new
            )
            .into());
        }
    }
    let limits = GateOptions {
        max_regress: args.max_regress,
        max_regress_op: args.max_regress_op.clone(),
        max_counter_increase: args.max_counter_increase,
    };
    let verdict = if limits.any() {
        Some(gate(&d, &limits).context("applying the gate's limits")?)
    } else {
        None
    };
    let out = match args.format {
        DiffFormat::Text => render_diff_text(&d, verdict.as_ref()),
        DiffFormat::Md => render_diff_md(&d, verdict.as_ref()),
        DiffFormat::Json => json(&d, verdict.as_ref()),
    };
    std::io::stdout().write_all(out.as_bytes())?;
    match verdict {
        Some(g) if !g.passed() => Err(Exit {
            code: GATE_FAILED,
            error: anyhow!(
                "gate failed: {} of {} checks ({} against {})",
                g.failures().count(),
                g.checks.len(),
                args.new.display(),
                args.base.display()
            ),
        }),
        _ => Ok(()),
    }
}
