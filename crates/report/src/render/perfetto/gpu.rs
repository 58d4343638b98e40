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
use super::writer::{Arg, Flows, Interner, Name, Value, Writer};
use super::{flow_id, Clock, GpuTrackIds, COUNTER_DISPATCH_GBPS, PROCESS_TRACK};
use crate::analysis::{dispatch_rate, RooflineCeilings};
use gpuscope_trace::{DispatchEvent, PassEvent, Profile, TokenRecord};

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

    /// This span moved to start no earlier than `floor` and end no later than `ceil`
    /// (a `ceil` below `floor`, which a hostile file can give, counts as `floor`).
    fn clamp(self, floor: u64, ceil: u64) -> Span {
        let ceil = ceil.max(floor);
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

impl Names {
    fn intern(i: &mut Interner) -> Names {
        Names {
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
        }
    }
}

/// Writes the GPU queue track: per token with a GPU span, its slice, its passes' and
/// their dispatches'. `submitted`: tokens whose submit span starts a flow, which ends
/// on the token's first slice of the deepest level with a span.
pub fn write<W: Write>(
    w: &mut Writer<W>,
    p: &Profile,
    ceilings: Option<&RooflineCeilings>,
    clock: Clock,
    submitted: &HashSet<u32>,
    ids: GpuTrackIds,
) -> std::io::Result<GpuWritten> {
    let mut track = GpuTrack {
        uuid: ids.uuid,
        names: Names::intern(&mut w.interner),
        ceilings,
        clock,
        // Dispatch lanes: closed at the end of every pass, declared once.
        lanes: Lanes::new(ids.uuid, move |k| TrackDescriptor {
            uuid: Some(ids.overlap_base + k as u64),
            parent_uuid: Some(PROCESS_TRACK),
            name: Some(format!(
                "GPU queue {}: overlapping dispatches {k}",
                ids.index
            )),
            sibling_order_rank: Some(ids.index as i32 * 16 + k as i32),
            ..Default::default()
        }),
        out: GpuWritten {
            slices: 0,
            flows: 0,
            counter_samples: 0,
            tokens_with_slices: HashSet::new(),
            token_start: HashMap::new(),
        },
    };
    let dispatch_runs = runs(&p.dispatches, |d| d.token);
    let pass_runs = runs(&p.passes, |s| s.token);
    for t in p.tokens.iter().filter(|t| t.gpu_track == ids.index) {
        let events = TokenEvents {
            dispatches: dispatch_runs
                .get(&t.index)
                .map_or(&[][..], |r| &p.dispatches[r.clone()]),
            passes: pass_runs
                .get(&t.index)
                .map_or(&[][..], |r| &p.passes[r.clone()]),
        };
        track.token(w, t, events, submitted.contains(&t.index))?;
    }
    Ok(track.out)
}

/// One token's events (a run of each list).
#[derive(Clone, Copy)]
struct TokenEvents<'a> {
    dispatches: &'a [DispatchEvent],
    passes: &'a [PassEvent],
}

/// The flow from a token's submit span, until a slice ends it.
struct PendingFlow(Option<u64>);

impl PendingFlow {
    /// The flows of a slice: this one ends here if `here`.
    fn end_if(&mut self, here: bool) -> Flows {
        match here {
            true => Flows {
                out: None,
                end: self.0.take(),
            },
            false => Flows::default(),
        }
    }
}

/// What writing the track keeps between tokens.
struct GpuTrack<'a> {
    /// This queue's track.
    uuid: u64,
    names: Names,
    ceilings: Option<&'a RooflineCeilings>,
    clock: Clock,
    lanes: Lanes,
    out: GpuWritten,
}

impl GpuTrack<'_> {
    /// A dispatch's valid span on the trace's clock.
    fn on_trace(&self, d: &DispatchEvent) -> Option<Span> {
        d.valid_gpu_ns().and(d.gpu).map(|g| Span {
            start: self.clock.gpu(g.start_ns),
            end: self.clock.gpu(g.end_ns),
        })
    }

    /// Each pass index's span: its own, else the hull of its timed dispatches.
    fn pass_spans(&self, events: TokenEvents) -> Vec<Option<Span>> {
        let pass_count = events
            .passes
            .iter()
            .map(|s| s.index as usize + 1)
            .chain(events.dispatches.iter().map(|d| d.pass as usize + 1))
            .max()
            .unwrap_or(0);
        let mut pass_span: Vec<Option<Span>> = vec![None; pass_count];
        for d in events.dispatches {
            if let Some(s) = self.on_trace(d) {
                let slot = &mut pass_span[d.pass as usize];
                *slot = Some(Span::hull(*slot, s));
            }
        }
        for s in events.passes {
            if let (Some(_), Some(g)) = (s.valid_gpu_ns(), s.gpu) {
                pass_span[s.index as usize] = Some(Span {
                    start: self.clock.gpu(g.start_ns),
                    end: self.clock.gpu(g.end_ns),
                });
            }
        }
        pass_span
    }

    /// The token's slice around its passes; nothing for a token without a GPU span.
    fn token<W: Write>(
        &mut self,
        w: &mut Writer<W>,
        t: &TokenRecord,
        events: TokenEvents,
        submitted: bool,
    ) -> std::io::Result<()> {
        let pass_span = self.pass_spans(events);
        let Some(token_span) = pass_span
            .iter()
            .flatten()
            .fold(None, |h, s| Some(Span::hull(h, *s)))
        else {
            return Ok(());
        };
        self.out.tokens_with_slices.insert(t.index);
        self.out.token_start.insert(t.index, token_span.start);
        let mut flow = PendingFlow(submitted.then(|| flow_id(t.index)));
        let timed_dispatch = events.dispatches.iter().any(|d| self.on_trace(d).is_some());
        let token_name = t
            .name
            .clone()
            .unwrap_or_else(|| format!("token {}", t.index));
        let names = &self.names;
        let mut token_args = vec![
            (names.position, Arg::Uint(t.position as u64)),
            (names.token_id, Arg::Uint(t.token_id as u64)),
            (names.wall_ns, Arg::Uint(t.wall_ns)),
        ];
        if let Some(b) = t.gpu_busy_ns {
            token_args.push((names.gpu_busy_ns, Arg::Uint(b)));
        }
        let flows = flow.end_if(pass_span.iter().all(Option::is_none));
        w.begin(
            token_span.start,
            self.uuid,
            Name::Plain(token_name),
            token_args,
            flows,
        )?;
        self.out.slices += 1;
        let mut prev_end = token_span.start;
        let by_pass = group_by_pass(events.dispatches, pass_span.len());
        for (index, span) in pass_span.iter().enumerate() {
            let Some(span) = span else { continue };
            let span = span.clamp(prev_end, token_span.end);
            let pass = events.passes.iter().find(|s| s.index as usize == index);
            let flows = flow.end_if(!timed_dispatch);
            self.pass(w, index, pass, span, flows)?;
            for d in &by_pass[index] {
                self.dispatch(w, d, span, &mut flow)?;
            }
            self.lanes.close_all(w)?;
            w.end(span.end, self.uuid)?;
            prev_end = span.end;
        }
        w.end(token_span.end, self.uuid)?;
        if flow.0.is_none() && submitted {
            self.out.flows += 1;
        }
        Ok(())
    }

    /// Begins pass `index`'s slice (ended by the caller after its dispatches).
    fn pass<W: Write>(
        &mut self,
        w: &mut Writer<W>,
        index: usize,
        pass: Option<&PassEvent>,
        span: Span,
        flows: Flows,
    ) -> std::io::Result<()> {
        let name = pass.map_or_else(|| format!("pass {index}"), |s| s.name.to_string());
        let name_iid = w.interner.name(&name);
        let mut args = vec![];
        if let Some(l) = pass.and_then(|s| s.layer) {
            args.push((self.names.layer, Arg::Uint(l as u64)));
        }
        if let Some(s) = pass {
            args.push((self.names.dispatches, Arg::Uint(s.dispatches as u64)));
        }
        w.begin(span.start, self.uuid, Name::Interned(name_iid), args, flows)?;
        self.out.slices += 1;
        Ok(())
    }

    /// A timed dispatch's slice inside its pass's `span` (beside, not after, a dispatch
    /// it overlaps), and its GB/s counter sample.
    fn dispatch<W: Write>(
        &mut self,
        w: &mut Writer<W>,
        d: &DispatchEvent,
        span: Span,
        flow: &mut PendingFlow,
    ) -> std::io::Result<()> {
        let Some(ds) = self.on_trace(d) else {
            return Ok(());
        };
        let ds = ds.clamp(span.start, span.end);
        let track = self.lanes.place(w, ds.start, ds.end)?;
        let flows = flow.end_if(true);
        let (args, rate) = dispatch_args(&self.names, d, self.ceilings);
        let op = w.interner.name(&d.op);
        w.begin(ds.start, track, Name::Interned(op), args, flows)?;
        self.out.slices += 1;
        if let Some(r) = rate {
            w.counter(ds.start, COUNTER_DISPATCH_GBPS, Value::Double(r))?;
            self.out.counter_samples += 1;
        }
        Ok(())
    }
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
    args.push((n.label, Arg::Str(d.label.to_string())));
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
