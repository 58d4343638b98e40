//! The GPU queue track: token ⊃ pass ⊃ dispatch slices, and the GB/s counter.
//!
//! Perfetto nests slices of one track by begin/end order, so children are clamped into
//! their parent (passes also after the previous pass), and dispatches that overlap one
//! another go to extra lanes ([`super::lanes`]).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::ops::Range;

use super::lanes::Lanes;
use super::proto::TrackDescriptor;
use super::writer::{Arg, Flows, Name, Value, Writer};
use super::{
    flow_id, Clock, COUNTER_DISPATCH_GBPS, GPU_OVERLAP_TRACK_BASE, GPU_TRACK, PROCESS_TRACK,
};
use crate::analysis::{dispatch_rate, RooflineCeilings};
use gpuscope_trace::{DispatchEvent, PassEvent, Profile};

pub struct GpuWritten {
    pub slices: u64,
    pub flows: u64,
    pub counter_samples: u64,
    /// Tokens that got a GPU slice (their submit span starts a flow).
    pub tokens_with_slices: HashSet<u32>,
    /// Each token's first GPU time on the trace's clock.
    pub token_start: HashMap<u32, u64>,
}

/// Contiguous runs of events of one token (events come grouped by token).
fn runs<T>(events: &[T], token: impl Fn(&T) -> u32) -> HashMap<u32, Range<usize>> {
    let mut out = HashMap::new();
    let mut start = 0;
    for i in 1..=events.len() {
        if i == events.len() || token(&events[i]) != token(&events[start]) {
            if start < events.len() {
                out.entry(token(&events[start])).or_insert(start..i);
            }
            start = i;
        }
    }
    out
}

/// A span on the trace's clock.
#[derive(Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
}

impl Span {
    fn hull(a: Option<Span>, b: Span) -> Span {
        match a {
            Some(a) => Span {
                start: a.start.min(b.start),
                end: a.end.max(b.end),
            },
            None => b,
        }
    }

    /// This span moved to start no earlier than `floor` and end no later than `ceil`.
    fn clamp(self, floor: u64, ceil: u64) -> Span {
        let start = self.start.clamp(floor, ceil);
        Span {
            start,
            end: self.end.clamp(start, ceil),
        }
    }
}

struct Names {
    label: u64,
    layer: u64,
    workgroups: u64,
    bytes: u64,
    flops: u64,
    gbps: u64,
    gflops: u64,
    percent: u64,
    dispatches: u64,
    position: u64,
    token_id: u64,
    wall_ns: u64,
    gpu_busy_ns: u64,
}

pub fn write<W: Write>(
    w: &mut Writer<W>,
    p: &Profile,
    ceilings: Option<&RooflineCeilings>,
    clock: Clock,
    submitted: &HashSet<u32>,
) -> std::io::Result<GpuWritten> {
    let i = &mut w.interner;
    let names = Names {
        label: i.annotation("label"),
        layer: i.annotation("layer"),
        workgroups: i.annotation("workgroups"),
        bytes: i.annotation("bytes"),
        flops: i.annotation("flops"),
        gbps: i.annotation("GB/s"),
        gflops: i.annotation("GFLOP/s"),
        percent: i.annotation("% of ceiling"),
        dispatches: i.annotation("dispatches"),
        position: i.annotation("position"),
        token_id: i.annotation("token_id"),
        wall_ns: i.annotation("wall_ns"),
        gpu_busy_ns: i.annotation("gpu_busy_ns"),
    };
    let dispatch_runs = runs(&p.dispatches, |d| d.token);
    let pass_runs = runs(&p.passes, |s| s.token);
    let mut out = GpuWritten {
        slices: 0,
        flows: 0,
        counter_samples: 0,
        tokens_with_slices: HashSet::new(),
        token_start: HashMap::new(),
    };
    // Dispatch lanes: closed at the end of every pass, declared once.
    let mut lanes = Lanes::new(GPU_TRACK, |k| TrackDescriptor {
        uuid: Some(GPU_OVERLAP_TRACK_BASE + k as u64),
        parent_uuid: Some(PROCESS_TRACK),
        name: Some(format!("GPU queue: overlapping dispatches {k}")),
        sibling_order_rank: Some(k as i32),
        ..Default::default()
    });
    for t in &p.tokens {
        let dispatches = dispatch_runs
            .get(&t.index)
            .map_or(&[][..], |r| &p.dispatches[r.clone()]);
        let passes = pass_runs
            .get(&t.index)
            .map_or(&[][..], |r| &p.passes[r.clone()]);
        let on_trace = |d: &DispatchEvent| {
            d.valid_gpu_ns().and(d.gpu).map(|g| Span {
                start: clock.gpu(g.start_ns),
                end: clock.gpu(g.end_ns),
            })
        };
        // Each pass: its own span, else the hull of its timed dispatches.
        let pass_count = passes
            .iter()
            .map(|s| s.index as usize + 1)
            .chain(dispatches.iter().map(|d| d.pass as usize + 1))
            .max()
            .unwrap_or(0);
        let mut pass_span: Vec<Option<Span>> = vec![None; pass_count];
        for d in dispatches {
            if let Some(s) = on_trace(d) {
                let slot = &mut pass_span[d.pass as usize];
                *slot = Some(Span::hull(*slot, s));
            }
        }
        for s in passes {
            if let (Some(_), Some(g)) = (s.valid_gpu_ns(), s.gpu) {
                pass_span[s.index as usize] = Some(Span {
                    start: clock.gpu(g.start_ns),
                    end: clock.gpu(g.end_ns),
                });
            }
        }
        let Some(token_span) = pass_span
            .iter()
            .flatten()
            .fold(None, |h, s| Some(Span::hull(h, *s)))
        else {
            continue;
        };
        out.tokens_with_slices.insert(t.index);
        out.token_start.insert(t.index, token_span.start);
        let mut flow = submitted.contains(&t.index).then(|| flow_id(t.index));
        let timed_dispatch = dispatches.iter().any(|d| on_trace(d).is_some());
        let mut take_flow = |level_has_it: bool| -> Flows {
            match level_has_it {
                true => Flows {
                    out: None,
                    end: flow.take(),
                },
                false => Flows::default(),
            }
        };
        let token_name = t
            .name
            .clone()
            .unwrap_or_else(|| format!("token {}", t.index));
        let mut token_args = vec![
            (names.position, Arg::Uint(t.position as u64)),
            (names.token_id, Arg::Uint(t.token_id as u64)),
            (names.wall_ns, Arg::Uint(t.wall_ns)),
        ];
        if let Some(b) = t.gpu_busy_ns {
            token_args.push((names.gpu_busy_ns, Arg::Uint(b)));
        }
        let flows = take_flow(pass_span.iter().all(Option::is_none));
        w.begin(
            token_span.start,
            GPU_TRACK,
            Name::Plain(token_name),
            token_args,
            flows,
        )?;
        out.slices += 1;
        let mut prev_end = token_span.start;
        let by_pass = group_by_pass(dispatches, pass_count);
        for (index, span) in pass_span.iter().enumerate() {
            let Some(span) = span else { continue };
            let span = span.clamp(prev_end, token_span.end);
            let pass: Option<&PassEvent> = passes.iter().find(|s| s.index as usize == index);
            let name = pass.map_or_else(|| format!("pass {index}"), |s| s.name.clone());
            let name_iid = w.interner.name(&name);
            let mut args = vec![];
            if let Some(l) = pass.and_then(|s| s.layer) {
                args.push((names.layer, Arg::Uint(l as u64)));
            }
            if let Some(s) = pass {
                args.push((names.dispatches, Arg::Uint(s.dispatches as u64)));
            }
            let flows = take_flow(!timed_dispatch);
            w.begin(span.start, GPU_TRACK, Name::Interned(name_iid), args, flows)?;
            out.slices += 1;
            for d in &by_pass[index] {
                let Some(ds) = on_trace(d) else { continue };
                // Inside its pass; beside (not after) a dispatch it overlaps.
                let ds = ds.clamp(span.start, span.end);
                let track = lanes.place(w, ds.start, ds.end)?;
                let flows = take_flow(true);
                let (args, rate) = dispatch_args(&names, d, ceilings);
                let op = w.interner.name(&d.op);
                w.begin(ds.start, track, Name::Interned(op), args, flows)?;
                out.slices += 1;
                if let Some(r) = rate {
                    w.counter(ds.start, COUNTER_DISPATCH_GBPS, Value::Double(r))?;
                    out.counter_samples += 1;
                }
            }
            lanes.close_all(w)?;
            w.end(span.end, GPU_TRACK)?;
            prev_end = span.end;
        }
        w.end(token_span.end, GPU_TRACK)?;
        if flow.is_none() && submitted.contains(&t.index) {
            out.flows += 1;
        }
    }
    Ok(out)
}

/// A token's dispatches by pass index, in order.
fn group_by_pass(dispatches: &[DispatchEvent], passes: usize) -> Vec<Vec<&DispatchEvent>> {
    let mut out = vec![Vec::new(); passes];
    for d in dispatches {
        out[d.pass as usize].push(d);
    }
    out
}

/// A dispatch slice's args, and its GB/s for the counter.
fn dispatch_args(
    n: &Names,
    d: &DispatchEvent,
    ceilings: Option<&RooflineCeilings>,
) -> (Vec<(u64, Arg)>, Option<f64>) {
    let [x, y, z] = d.workgroups;
    let mut args = Vec::with_capacity(8);
    args.push((n.label, Arg::Str(d.label.clone())));
    if let Some(l) = d.layer {
        args.push((n.layer, Arg::Uint(l as u64)));
    }
    args.push((n.workgroups, Arg::Str(format!("{x}x{y}x{z}"))));
    args.push((n.bytes, Arg::Uint(d.bytes)));
    args.push((n.flops, Arg::Uint(d.flops)));
    let rate = d
        .valid_gpu_ns()
        .and_then(|ns| dispatch_rate(d.bytes, d.flops, ns, ceilings));
    if let Some(r) = rate {
        args.push((n.gbps, Arg::Double(r.gb_per_s)));
        args.push((n.gflops, Arg::Double(r.gflop_per_s)));
        if let Some(pc) = r.percent_of_ceiling {
            args.push((n.percent, Arg::Double(pc)));
        }
    }
    (args, rate.map(|r| r.gb_per_s))
}
