//! Perfetto export, decoded with types generated from Perfetto's published schema
//! (build.rs: proto/perfetto_trace.proto), not with the writer's own structs.

use std::collections::HashMap;

use gpuscope_report::analysis::{align_clocks, RooflineCeilings};
use gpuscope_report::render::perfetto::{
    write_perfetto, GpuClock, COUNTER_DISPATCHES, COUNTER_DISPATCH_GBPS, COUNTER_TOK_PER_S,
    GPU_TRACK,
};
use gpuscope_trace::{Profile, TimingMode};
use prost::Message;

use gpuscope_trace::fixtures as fixture;

#[allow(clippy::all, dead_code)]
mod schema {
    include!(concat!(env!("OUT_DIR"), "/perfetto.protos.rs"));
}

use schema::track_event::Type;

/// A slice rebuilt from begin/end events.
#[derive(Debug, Clone)]
struct Slice {
    track: u64,
    name: String,
    ts: u64,
    dur: u64,
    depth: usize,
    parent: Option<String>,
    args: HashMap<String, String>,
    flows_out: Vec<u64>,
    flows_in: Vec<u64>,
}

/// What a trace viewer would build: tracks, slices (nested per track), counters.
#[derive(Default)]
struct Decoded {
    tracks: HashMap<u64, schema::TrackDescriptor>,
    slices: Vec<Slice>,
    counters: HashMap<u64, Vec<(u64, f64)>>,
    packets: usize,
}

fn decode(bytes: &[u8]) -> Decoded {
    let trace = schema::Trace::decode(bytes).expect("a valid Trace message");
    let mut names: HashMap<u64, String> = HashMap::new();
    let mut arg_names: HashMap<u64, String> = HashMap::new();
    let mut open: HashMap<u64, Vec<Slice>> = HashMap::new();
    let mut out = Decoded {
        packets: trace.packet.len(),
        ..Default::default()
    };
    for (i, p) in trace.packet.iter().enumerate() {
        match p.optional_trusted_packet_sequence_id {
            Some(
                schema::trace_packet::OptionalTrustedPacketSequenceId::TrustedPacketSequenceId(1),
            ) => {}
            ref other => panic!("packet {i} on sequence {other:?}"),
        }
        if i == 0 {
            assert_eq!(
                p.sequence_flags,
                Some(schema::trace_packet::SequenceFlags::SeqIncrementalStateCleared as u32)
            );
        }
        if let Some(d) = &p.interned_data {
            for n in &d.event_names {
                names.insert(n.iid(), n.name().to_string());
            }
            for n in &d.debug_annotation_names {
                arg_names.insert(n.iid(), n.name().to_string());
            }
        }
        match &p.data {
            Some(schema::trace_packet::Data::TrackDescriptor(d)) => {
                out.tracks.insert(d.uuid(), d.clone());
            }
            Some(schema::trace_packet::Data::TrackEvent(e)) => {
                assert_eq!(
                    p.sequence_flags,
                    Some(schema::trace_packet::SequenceFlags::SeqNeedsIncrementalState as u32),
                    "packet {i}"
                );
                let ts = p.timestamp.expect("events have timestamps");
                let track = e.track_uuid();
                assert!(
                    out.tracks.contains_key(&track),
                    "event on undeclared track {track}"
                );
                match e.r#type() {
                    Type::SliceBegin => {
                        let name = match &e.name_field {
                            Some(schema::track_event::NameField::NameIid(iid)) => {
                                names.get(iid).cloned().expect("interned before use")
                            }
                            Some(schema::track_event::NameField::Name(n)) => n.clone(),
                            None => panic!("unnamed slice"),
                        };
                        let args = e
                            .debug_annotations
                            .iter()
                            .map(|a| {
                                let key = match a.name_field {
                                    Some(schema::debug_annotation::NameField::NameIid(iid)) => {
                                        arg_names[&iid].clone()
                                    }
                                    _ => panic!("annotation names are interned"),
                                };
                                use schema::debug_annotation::Value as V;
                                let v = match &a.value {
                                    Some(V::StringValue(s)) => s.clone(),
                                    Some(V::UintValue(u)) => u.to_string(),
                                    Some(V::DoubleValue(d)) => d.to_string(),
                                    other => panic!("unexpected value {other:?}"),
                                };
                                (key, v)
                            })
                            .collect();
                        let stack = open.entry(track).or_default();
                        let parent = stack.last().map(|s| s.name.clone());
                        if let Some(top) = stack.last() {
                            assert!(ts >= top.ts, "child starts before its parent");
                        }
                        stack.push(Slice {
                            track,
                            name,
                            ts,
                            dur: 0,
                            depth: stack.len(),
                            parent,
                            args,
                            flows_out: e.flow_ids.clone(),
                            flows_in: e.terminating_flow_ids.clone(),
                        });
                    }
                    Type::SliceEnd => {
                        let mut s = open
                            .get_mut(&track)
                            .and_then(Vec::pop)
                            .expect("end matches a begin");
                        assert!(ts >= s.ts, "{} ends before it begins", s.name);
                        s.dur = ts - s.ts;
                        out.slices.push(s);
                    }
                    Type::Counter => {
                        let v = match e.counter_value_field {
                            Some(schema::track_event::CounterValueField::CounterValue(v)) => {
                                v as f64
                            }
                            Some(schema::track_event::CounterValueField::DoubleCounterValue(v)) => {
                                v
                            }
                            None => panic!("counter without a value"),
                        };
                        out.counters.entry(track).or_default().push((ts, v));
                    }
                    other => panic!("unexpected event type {other:?}"),
                }
            }
            other => panic!("unexpected packet {other:?}"),
        }
    }
    assert!(
        open.values().all(Vec::is_empty),
        "slices left open: {open:?}"
    );
    out.slices.sort_by_key(|s| (s.ts, s.depth));
    out
}

fn export(p: &Profile, ceilings: Option<&RooflineCeilings>) -> (Decoded, GpuClock) {
    let mut bytes = Vec::new();
    let summary = write_perfetto(p, ceilings, &mut bytes).unwrap();
    assert_eq!(summary.bytes, bytes.len() as u64);
    let d = decode(&bytes);
    assert_eq!(summary.packets, d.packets as u64);
    (d, summary.clock)
}

fn gpu_name(d: &Decoded) -> String {
    d.tracks[&GPU_TRACK]
        .static_or_dynamic_name
        .clone()
        .map_or(String::new(), |n| match n {
            schema::track_descriptor::StaticOrDynamicName::Name(n) => n,
        })
}

#[test]
fn timeline_round_trip_tracks_nesting_flows_counters() {
    let p = fixture::timeline();
    let c = RooflineCeilings::from(&fixture::ceilings()).unwrap();
    let (d, clock) = export(&p, Some(&c));
    let align = align_clocks(&p).unwrap();
    assert_eq!(clock, GpuClock::Aligned(align));

    // One thread track, named as the profile names it.
    let threads: Vec<_> = d.tracks.values().filter(|t| t.thread.is_some()).collect();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].thread.as_ref().unwrap().thread_name(), "main");

    // GPU: token ⊃ pass ⊃ dispatch, on the CPU clock.
    let gpu: Vec<&Slice> = d.slices.iter().filter(|s| s.track == GPU_TRACK).collect();
    let tokens: Vec<_> = gpu.iter().filter(|s| s.depth == 0).collect();
    assert_eq!(
        tokens.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["token 0", "token 1"]
    );
    assert!(gpu.iter().filter(|s| s.depth == 1).all(|s| s
        .parent
        .as_deref()
        .unwrap()
        .starts_with("token")));
    let dispatches: Vec<&Slice> = d.slices.iter().filter(|s| s.name == "gemv_q4_1").collect();
    assert_eq!(dispatches.len(), p.dispatches.len());
    // Every dispatch lies inside its token's GPU slice, at its own time plus the offset.
    for (ev, s) in p.dispatches.iter().zip(&dispatches) {
        let g = ev.gpu.unwrap();
        assert_eq!(
            s.ts as i64,
            g.start_ns as i64 + align.offset_ns,
            "{}",
            ev.label
        );
        assert_eq!(s.args["label"], ev.label);
        assert_eq!(s.args["bytes"], ev.bytes.to_string());
        assert_eq!(s.args["workgroups"], "8x1x1");
        let gbps: f64 = s.args["GB/s"].parse().unwrap();
        assert!((gbps - ev.bytes as f64 / (g.end_ns - g.start_ns) as f64).abs() < 1e-9);
        assert!(s.args.contains_key("% of ceiling"));
        let token = tokens[ev.token as usize];
        assert!(s.ts >= token.ts && s.ts + s.dur <= token.ts + token.dur);
    }
    // Token 1's first two dispatches overlap (1000-1100, 1050-1200): one goes to a lane.
    let lanes: Vec<_> = dispatches.iter().filter(|s| s.track != GPU_TRACK).collect();
    assert_eq!(lanes.len(), 1);
    assert_eq!(lanes[0].dur, 150);

    // Flows: each token's submit → its first dispatch.
    let submits: Vec<&Slice> = d.slices.iter().filter(|s| s.name == "submit").collect();
    assert_eq!(submits.len(), 2);
    for (t, submit) in submits.iter().enumerate() {
        assert_eq!(submit.flows_out.len(), 1);
        let id = submit.flows_out[0];
        let ends: Vec<_> = d
            .slices
            .iter()
            .filter(|s| s.flows_in.contains(&id))
            .collect();
        assert_eq!(ends.len(), 1, "flow {id} ends once");
        let first = p.dispatches.iter().find(|e| e.token == t as u32).unwrap();
        assert_eq!(ends[0].args["label"], first.label);
        assert!(ends[0].ts >= submit.ts, "the GPU starts after the submit");
    }
    // CPU: the overlapping steps (0-2000, 1500-3000) both kept, the second on a lane.
    let steps: Vec<_> = d.slices.iter().filter(|s| s.name == "step").collect();
    assert_eq!(
        steps.iter().map(|s| s.dur).collect::<Vec<_>>(),
        [2000, 1500]
    );
    assert_ne!(steps[0].track, steps[1].track);

    // Counters: tok/s per token, GB/s per dispatch, dispatches per token.
    let tok_s: Vec<f64> = d.counters[&COUNTER_TOK_PER_S].iter().map(|x| x.1).collect();
    assert_eq!(tok_s, [1e9 / 500.0, 1e9 / 900.0]);
    assert_eq!(d.counters[&COUNTER_DISPATCH_GBPS].len(), p.dispatches.len());
    assert_eq!(d.counters[&COUNTER_DISPATCHES].len(), p.tokens.len());
    // Token counters sit at the token's CPU step.
    assert_eq!(d.counters[&COUNTER_TOK_PER_S][1].0, 1500);
}

#[test]
fn small_fixture_passes_and_untimed_dispatches() {
    let p = fixture::small();
    let (d, clock) = export(&p, None);
    assert!(matches!(clock, GpuClock::Unaligned(_)), "{clock:?}");
    assert!(gpu_name(&d).contains("not aligned"));
    let timed = p
        .dispatches
        .iter()
        .filter(|e| e.valid_gpu_ns().is_some())
        .count();
    let ops: std::collections::HashSet<_> = p.dispatches.iter().map(|e| e.op.as_str()).collect();
    let dispatch_slices = d
        .slices
        .iter()
        .filter(|s| ops.contains(s.name.as_str()))
        .count();
    assert_eq!(dispatch_slices, timed, "one slice per valid dispatch span");
    for s in d.slices.iter().filter(|s| ops.contains(s.name.as_str())) {
        assert!(
            !s.args.contains_key("% of ceiling"),
            "no ceilings, no percentage"
        );
        assert_eq!(s.depth, 2, "dispatches sit inside a pass inside a token");
    }
    assert!(
        d.tracks.values().all(|t| t.thread.is_none()),
        "no CPU spans, no thread tracks"
    );
}

#[test]
fn pass_and_off_modes_say_what_is_missing() {
    let mut p = fixture::small();
    p.timing.mode = TimingMode::Pass;
    for e in &mut p.dispatches {
        e.gpu = None;
        e.timestamp_issue = None;
    }
    let (d, _) = export(&p, None);
    assert!(gpu_name(&d).contains("dispatches not"), "{}", gpu_name(&d));
    let passes = d
        .slices
        .iter()
        .filter(|s| s.track == GPU_TRACK && s.depth == 1)
        .count();
    let valid_passes = p
        .passes
        .iter()
        .filter(|s| s.valid_gpu_ns().is_some())
        .count();
    assert_eq!(passes, valid_passes);
    assert!(d.slices.iter().all(|s| s.depth < 2));

    p.timing.mode = TimingMode::Off;
    for s in &mut p.passes {
        s.gpu = None;
        s.timestamp_issue = None;
    }
    let (d, clock) = export(&p, None);
    assert_eq!(clock, GpuClock::None);
    assert!(gpu_name(&d).contains("timing off"));
    assert!(d.slices.iter().all(|s| s.track != GPU_TRACK));
    // Token counters still come, back to back on the wall clock.
    let ts: Vec<u64> = d.counters[&COUNTER_TOK_PER_S].iter().map(|x| x.0).collect();
    let walls: Vec<u64> = p.tokens.iter().map(|t| t.wall_ns).collect();
    assert_eq!(ts[1] - ts[0], walls[0]);
}

#[test]
fn save_is_atomic_and_leaves_nothing_on_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    let p = fixture::timeline();
    let s = gpuscope_report::render::perfetto::save_perfetto(&path, &p, None).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), s.bytes);
    let missing = dir.path().join("no/such/dir/t.pftrace");
    assert!(gpuscope_report::render::perfetto::save_perfetto(&missing, &p, None).is_err());
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary left"
    );
}

/// A program on two GPUs (the layer's recording of llama.cpp's `-sm layer`): one GPU
/// track per queue in one trace, each step's slices on its own queue's track.
#[test]
fn two_gpus_give_two_gpu_tracks() {
    let path = fixture::data("two_gpus.jsonl");
    let text = std::fs::read(&path).unwrap();
    let p = gpuscope_trace::recording::read_records(&text[..], &path)
        .unwrap()
        .to_profile();
    let (d, _) = export(&p, None);
    let gpu_tracks: Vec<(&u64, String)> = d
        .tracks
        .iter()
        .filter_map(|(id, t)| match t.static_or_dynamic_name.clone()? {
            schema::track_descriptor::StaticOrDynamicName::Name(n) => Some((id, n)),
        })
        .filter(|(_, n)| n.starts_with("GPU queue"))
        .collect();
    assert_eq!(gpu_tracks.len(), 2, "{gpu_tracks:?}");
    for (device, step) in [("GPU A", "step 0"), ("GPU B", "step 1")] {
        let (id, _) = gpu_tracks
            .iter()
            .find(|(_, n)| n.contains(device))
            .unwrap_or_else(|| panic!("no track for {device}: {gpu_tracks:?}"));
        let on_track: Vec<&str> = d
            .slices
            .iter()
            .filter(|s| s.track == **id && s.depth == 0)
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(on_track.len(), 1, "{device}: {on_track:?}");
        assert!(on_track[0].starts_with(step), "{device}: {on_track:?}");
    }
}
