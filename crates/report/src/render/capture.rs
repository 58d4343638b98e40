//! Text for `inspect` and `replay`: formatting only, every number comes from
//! [`crate::inspect`] or the runtime's measurements.

use std::fmt::Write;

use crate::inspect::{Inspection, MANY_CONSTANT_SETS};
use crate::render::units::{bytes, us};
use gpuscope_trace::capture::bench::{Comparison, PerCommandReport, TimingClock};

/// `gpuscope inspect DIR`.
pub fn render_inspection(i: &Inspection) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Capture:  {} (format {}, written by {})",
        i.name, i.format, i.tool
    );
    let _ = writeln!(
        o,
        "Recorded: {} on \"{}\" ({}), timing {}",
        i.workload, i.adapter, i.backend, i.timing
    );
    let _ = writeln!(
        o,
        "Stream:   {} steps, {} dispatches in {} passes; {} unique commands ({} pipelines, {} bind groups)",
        i.steps, i.dispatches, i.passes, i.unique_commands, i.pipelines, i.bind_groups
    );
    if let Some(why) = &i.incomplete {
        let _ = writeln!(
            o,
            "INCOMPLETE: {why}; the steps above are the ones completed"
        );
    }
    let _ = writeln!(o, "Buffers:  {} ({})", i.buffers, bytes(i.buffer_bytes));
    let data = match (i.has_initial_data, i.output_steps.is_empty()) {
        (false, _) => {
            "none (capture with --capture-data to replay with data and compare outputs)".to_string()
        }
        (true, true) => "buffer contents before the first step".to_string(),
        (true, false) => format!(
            "buffer contents before the first step; dispatch outputs of steps {:?}",
            i.output_steps
        ),
    };
    let _ = writeln!(o, "Data:     {data}");
    let _ = writeln!(o, "\nShaders ({}):", i.shaders.len());
    let _ = writeln!(
        o,
        "  {:<24} {:>9} {:>13}  entry points",
        "shader", "pipelines", "constant sets"
    );
    for s in &i.shaders {
        let flag = if s.many_constant_sets {
            "  <- many constant sets"
        } else {
            ""
        };
        let _ = writeln!(
            o,
            "  {:<24} {:>9} {:>13}  {}{flag}",
            s.name,
            s.pipelines,
            s.constant_sets,
            s.entry_points.join(", ")
        );
    }
    let flagged: Vec<&str> = i
        .shaders
        .iter()
        .filter(|s| s.many_constant_sets)
        .map(|s| s.name.as_str())
        .collect();
    if !flagged.is_empty() {
        let _ = writeln!(
            o,
            "  hint: {} built with more than {MANY_CONSTANT_SETS} override-constant sets: each set is a separate \
             pipeline compile; pass the values that vary as a uniform instead",
            flagged.join(", ")
        );
    }
    let total = i.measured_total_ns;
    let _ = writeln!(
        o,
        "\nTop commands by recorded GPU time{}:",
        if total == 0 {
            " (none recorded: sorted by count)"
        } else {
            ""
        }
    );
    let _ = writeln!(
        o,
        "  {:<40} {:<22} {:>6} {:>12} {:>10} {:>7}",
        "pipeline", "label", "count", "total µs", "avg µs", "share"
    );
    for c in &i.top_commands {
        let label = if c.labels > 1 {
            format!("{} (+{})", c.label, c.labels - 1)
        } else {
            c.label.clone()
        };
        let (tot, avg, share) = match c.total_ns {
            Some(ns) => (
                us(ns as f64),
                us(ns as f64 / c.timed.max(1) as f64),
                format!("{:.1}%", 100.0 * ns as f64 / total.max(1) as f64),
            ),
            None => ("-".into(), "-".into(), "-".into()),
        };
        let _ = writeln!(
            o,
            "  {:<40} {:<22} {:>6} {:>12} {:>10} {:>7}",
            clip(&c.pipeline, 40),
            clip(&label, 22),
            c.count,
            tot,
            avg,
            share
        );
    }
    o
}

/// `gpuscope replay DIR --per-command`.
pub fn render_per_command(r: &PerCommandReport) -> String {
    let mut o = String::new();
    let clock = match r.clock {
        TimingClock::GpuTimestamps => "GPU timestamps around each command alone in a pass",
        TimingClock::WallClockWithSync => "wall clock around a submit and a wait (no GPU timestamps on this adapter; includes submit and sync overhead)",
    };
    let _ = writeln!(
        o,
        "Per-command replay of {} on \"{}\" ({})",
        r.capture, r.adapter.name, r.adapter.backend
    );
    let _ = writeln!(o, "Clock:    {clock}");
    let _ = writeln!(o, "Method:   {}", r.method);
    let _ = writeln!(
        o,
        "Commands: {} unique, {} dispatches in the stream; total (median × count) {} µs",
        r.commands.len(),
        r.stream_dispatches,
        us(r.total_ns as f64)
    );
    let _ = writeln!(
        o,
        "\n  {:<40} {:<20} {:>6} {:>10} {:>10} {:>10} {:>12} {:>7} {:>8}",
        "pipeline",
        "label",
        "count",
        "median µs",
        "p10 µs",
        "p90 µs",
        "total µs",
        "share",
        "samples"
    );
    for c in &r.commands {
        let stable = if c.stable { "" } else { " (cap)" };
        let _ = writeln!(
            o,
            "  {:<40} {:<20} {:>6} {:>10} {:>10} {:>10} {:>12} {:>6.1}% {:>8}{stable}",
            clip(&c.pipeline, 40),
            clip(&c.label, 20),
            c.count,
            us(c.median_ns as f64),
            us(c.p10_ns as f64),
            us(c.p90_ns as f64),
            us(c.total_ns as f64),
            c.share_percent,
            c.samples
        );
    }
    o
}

/// The result of replaying with captured data.
pub fn render_comparison(c: &Comparison) -> String {
    let mut o = String::new();
    let how = match c.tolerance {
        None => "exact (bitwise)".to_string(),
        Some(t) => format!("within {t} relative on f32 words (|a-b| <= tol*max(1,|b|))"),
    };
    if !c.substituted.is_empty() {
        let _ = writeln!(o, "Substituted: {}", c.substituted.join(", "));
    }
    let _ = writeln!(
        o,
        "Outputs:  {} compared over steps {:?}, {how}",
        c.outputs_compared, c.steps
    );
    match &c.first_mismatch {
        None => {
            let _ = writeln!(
                o,
                "Result:   all {} outputs match the recorded ones",
                c.outputs_compared
            );
        }
        Some(m) => {
            let _ = writeln!(
                o,
                "Result:   {} of {} outputs differ",
                c.outputs_mismatched, c.outputs_compared
            );
            let _ = writeln!(
                o,
                "First mismatch: step {} dispatch {} ({}, {}), binding {} (\"{}\"): {} words differ, first at word {}: recorded {} (0x{:08x}), replayed {} (0x{:08x}); max |diff| {:.3e}",
                m.step,
                m.dispatch,
                m.label,
                m.pipeline,
                m.binding,
                m.buffer_label,
                m.words_differing,
                m.first_word,
                f32::from_bits(m.expected),
                m.expected,
                f32::from_bits(m.found),
                m.found,
                m.max_abs_diff
            );
        }
    }
    o
}

fn clip(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(n - 1).collect();
        t.push('…');
        t
    }
}
