//! The timeline section: busy, utilization, gaps, launch efficiency, idle split.

use std::fmt::Write;

use super::super::units::{duration, ms, percent};
use crate::analysis::timeline::{KernelSource, Timeline};
use crate::analysis::Analysis;
use gpuscope_trace::Profile;

pub(super) fn section(out: &mut String, p: &Profile, a: &Analysis) {
    let t = &a.timeline;
    emit!(out);
    let source = match t.source {
        Some(KernelSource::Dispatches) => "kernels = dispatch spans",
        Some(KernelSource::Passes) => "kernels = pass spans",
        None => "no GPU spans",
    };
    emit!(
        out,
        "Timeline ({}, {source}; HTA definitions, see docs/analysis.md)",
        super::steady::scope(a)
    );
    emit!(
        out,
        "  {} kernels in {} tokens ({} timed), wall {} ms",
        t.kernel_count,
        t.tokens,
        t.timed_kernels,
        ms(t.wall_ns)
    );
    busy_line(out, t);
    if let Some(g) = &t.gaps {
        emit!(
            out,
            "  gaps between consecutive kernels: {}, mean {}, p90 {}, total {} ms{}{}",
            g.count,
            duration(g.mean_ns),
            duration(g.p90_ns as f64),
            ms(g.total_ns),
            if t.unknown_gaps > 0 {
                format!(
                    "; {} next to a kernel without a valid span left out",
                    t.unknown_gaps
                )
            } else {
                String::new()
            },
            if t.overlaps > 0 {
                format!("; {} overlapping kernels", t.overlaps)
            } else {
                String::new()
            }
        );
    }
    if let Some(e) = t.launch_efficiency_percent {
        emit!(
            out,
            "  launch efficiency {e:.1}% (kernel time / each token's first-start-to-last-end)"
        );
    }
    idle_line(out, t);
    match &t.alignment {
        Ok(al) => emit!(
            out,
            "  clocks aligned over {} tokens: GPU time + {} = CPU time{}",
            al.tokens,
            duration(al.offset_ns as f64),
            al.slack_ns.map_or(String::new(), |s| format!(
                " (within {} of the latest consistent offset)",
                duration(s as f64)
            ))
        ),
        Err(e) if !p.cpu_spans.is_empty() => emit!(out, "  clocks not aligned: {e}"),
        Err(_) => {}
    }
    if !t.unavailable.is_empty() {
        let list: Vec<String> = t
            .unavailable
            .iter()
            .map(|u| format!("{} ({})", u.metric, u.reason))
            .collect();
        emit!(out, "  not computable: {}", list.join("; "));
    }
}

/// GPU busy time and utilization, labelled estimated when they come from samples.
fn busy_line(out: &mut String, t: &Timeline) {
    if let (Some(busy), true) = (t.busy_ns, t.busy_estimated) {
        let corrected = if t.busy_corrected {
            ", each corrected for its timestamps,"
        } else {
            ""
        };
        emit!(
            out,
            "  busy {} ms = {} utilization, estimated (sampled dispatch spans{corrected} summed per token / wall)",
            ms(busy),
            percent(t.utilization_percent)
        );
        if t.utilization_percent.is_some_and(|u| u > 100.0) {
            emit!(
                out,
                "    over 100%, which busy time cannot be: read it as a GPU busy the whole token. {}",
                if t.busy_corrected {
                    "Corrected by `peak`'s timestamp cost, some sampled dispatches still take longer than the same dispatch timed between its neighbours, so the estimate overstates (docs/analysis.md, sampled timing)"
                } else {
                    "The timestamps around each sampled dispatch lengthen its span (per-dispatch timing serializes the GPU's work); the shares between ops hold, the absolute times are inflated (`gpuscope peak` measures the timestamp cost, to correct them)"
                }
            );
        }
    } else if let Some(busy) = t.busy_ns {
        emit!(
            out,
            "  busy {} ms = {} utilization (union of kernel spans / wall){}",
            ms(busy),
            percent(t.utilization_percent),
            t.mean_kernel_ns
                .map_or(String::new(), |m| format!("; mean kernel {}", duration(m)))
        );
    } else if let Some(m) = t.mean_kernel_ns {
        emit!(out, "  mean kernel {} (sampled dispatches)", duration(m));
    }
}

/// Where the idle time went: kernel gaps, host wait, outside the kernels' span.
fn idle_line(out: &mut String, t: &Timeline) {
    if let Some(i) = &t.idle {
        let host = match i.host_wait_ns {
            Some(h) => format!("host wait {} ms", ms(h)),
            None => format!(
                "between tokens {} ms (host wait or submit latency: no CPU spans to tell)",
                ms(i.between_tokens_unattributed_ns)
            ),
        };
        emit!(
            out,
            "  idle {} ms (wall - busy): kernel gaps {} ms, {host}, outside the kernels' span {} ms{}",
            ms(i.idle_ns),
            ms(i.kernel_gaps_ns),
            ms(i.other_ns),
            if i.gaps_beyond_idle_ns > 0 {
                format!(
                    "; the gaps exceed wall - busy by {} ms (tokens in flight overlap)",
                    ms(i.gaps_beyond_idle_ns)
                )
            } else {
                String::new()
            }
        );
    }
}
