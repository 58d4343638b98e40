//! Measured ceilings as text: what `gpuscope peak` prints, and the figure lines of a
//! report's `Ceilings:` header.

use super::units::{duration, rate};
use gpuscope_trace::ceilings::{Ceilings, Measured};

fn measured(m: Option<Measured>, unit: &str) -> String {
    m.map_or("not measured".into(), |m| {
        format!(
            "{} {unit} (p10-p90 {}-{}, n={})",
            rate(Some(m.median)),
            rate(Some(m.p10)),
            rate(Some(m.p90)),
            m.n
        )
    })
}

fn measured_ns(m: Option<Measured>) -> String {
    m.map_or("not measured".into(), |m| {
        format!(
            "{} (p10-p90 {}-{}, n={})",
            duration(m.median),
            duration(m.p10),
            duration(m.p90),
            m.n
        )
    })
}

/// The figures, one line per group, each median with its spread and count.
pub fn ceilings_lines(c: &Ceilings) -> Vec<String> {
    vec![
        format!(
            "copy {}, read {}, write {}",
            measured(c.copy_gbps, "GB/s"),
            measured(c.read_gbps, "GB/s"),
            measured(c.write_gbps, "GB/s")
        ),
        format!(
            "f32 FMA {}, f16 FMA {}",
            measured(c.f32_gflops, "GFLOP/s"),
            measured(c.f16_gflops, "GFLOP/s")
        ),
        format!(
            "dependent dispatch {}, timestamps add {} per timed dispatch, CPU encode + submit {} per dispatch, fill {}",
            measured_ns(c.dispatch_ns),
            measured_ns(c.timestamp_ns),
            measured_ns(c.cpu_dispatch_ns),
            c.fill.map_or_else(|| match c.settings.get("fill_unmeasured") {
                Some(why) => format!("not measured ({why})"),
                None => "not measured".into(),
            }, |f| format!(
                "{} workgroup{} of {} invocations",
                f.workgroups,
                if f.workgroups == 1 { "" } else { "s" },
                f.workgroup_size
            ))
        ),
    ]
}

/// What `gpuscope peak` prints: whose ceilings, how measured, the figures.
pub fn render_ceilings(c: &Ceilings) -> String {
    let id = &c.identity;
    let mut out = format!(
        "Ceilings of {}, measured by {} at {} ({})\n",
        id.device(),
        id.tool,
        id.measured_at,
        c.method
    );
    for line in ceilings_lines(c) {
        out.push_str("  ");
        out.push_str(&line);
        out.push('\n');
    }
    if !c.settings.is_empty() {
        let s: Vec<String> = c.settings.iter().map(|(k, v)| format!("{k} {v}")).collect();
        out.push_str(&format!("  measured with: {}\n", s.join(", ")));
    }
    out
}
