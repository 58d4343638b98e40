//! CPU thread tracks: every [`gpuscope_trace::CpuSpan`] as a slice on its thread's track.

use std::collections::{HashMap, HashSet};
use std::io::Write;

use super::lanes::Lanes;
use super::proto::TrackDescriptor;
use super::writer::{Arg, Flows, Name, Writer};
use super::{flow_id, Clock, OVERLAP_TRACK_BASE, THREAD_TRACK_BASE};
use gpuscope_trace::Profile;

pub struct CpuWritten {
    pub slices: u64,
    /// Each token's start on the trace's clock: its `step` span, else its first span.
    pub token_start: HashMap<u32, u64>,
}

/// One name per thread that has spans (named `thread N` when the profile lacks it).
pub fn thread_names(p: &Profile) -> Vec<String> {
    let used = p
        .cpu_spans
        .iter()
        .map(|s| s.thread as usize + 1)
        .max()
        .unwrap_or(0);
    (0..used)
        .map(|i| {
            p.threads
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("thread {i}"))
        })
        .collect()
}

/// Tokens that have a `submit` span (where their flow starts).
pub fn submitted_tokens(p: &Profile) -> HashSet<u32> {
    p.cpu_spans
        .iter()
        .filter(|s| s.name == "submit")
        .filter_map(|s| s.token)
        .collect()
}

pub fn write<W: Write>(
    w: &mut Writer<W>,
    p: &Profile,
    clock: Clock,
    gpu_tokens: &HashSet<u32>,
) -> std::io::Result<CpuWritten> {
    let token_arg = w.interner.annotation("token");
    let detail_arg = w.interner.annotation("detail");
    let mut by_thread: Vec<Vec<usize>> = vec![Vec::new(); thread_names(p).len()];
    for (i, s) in p.cpu_spans.iter().enumerate() {
        by_thread[s.thread as usize].push(i);
    }
    let mut out = CpuWritten {
        slices: 0,
        token_start: HashMap::new(),
    };
    for s in &p.cpu_spans {
        if let Some(t) = s.token {
            let start = clock.cpu(s.start_ns);
            let e = out.token_start.entry(t).or_insert(start);
            if s.name == "step" || start < *e {
                *e = start;
            }
        }
    }
    let mut flow_started: HashSet<u32> = HashSet::new();
    let names = thread_names(p);
    for (thread, mut spans) in by_thread.into_iter().enumerate() {
        let track = THREAD_TRACK_BASE + thread as u64;
        let name = names[thread].clone();
        let mut lanes = Lanes::new(track, move |k| TrackDescriptor {
            uuid: Some(OVERLAP_TRACK_BASE + ((thread as u64) << 8) + k as u64),
            parent_uuid: Some(track),
            name: Some(format!("{name}: overlapping spans {k}")),
            ..Default::default()
        });
        // Parents before children: by start, the longer first.
        spans.sort_by_key(|&i| {
            let s = &p.cpu_spans[i];
            (s.start_ns, std::cmp::Reverse(s.end_ns))
        });
        for i in spans {
            let s = &p.cpu_spans[i];
            let (start, end) = (clock.cpu(s.start_ns), clock.cpu(s.end_ns.max(s.start_ns)));
            let lane = lanes.place(w, start, end)?;
            let mut args = Vec::new();
            if let Some(t) = s.token {
                args.push((token_arg, Arg::Uint(t as u64)));
            }
            if let Some(d) = &s.detail {
                args.push((detail_arg, Arg::Str(d.clone())));
            }
            let flows = match s.token {
                Some(t)
                    if s.name == "submit" && gpu_tokens.contains(&t) && flow_started.insert(t) =>
                {
                    Flows {
                        out: Some(flow_id(t)),
                        end: None,
                    }
                }
                _ => Flows::default(),
            };
            let name = w.interner.name(&s.name);
            w.begin(start, lane, Name::Interned(name), args, flows)?;
            out.slices += 1;
        }
        lanes.close_all(w)?;
    }
    Ok(out)
}
