//! The packet stream: one trusted sequence, names interned, each packet encoded and
//! written as soon as it is made (a million-dispatch trace never sits in memory as
//! messages).

use std::collections::HashMap;
use std::io::Write;

use prost::Message;

use super::proto::{
    DebugAnnotation, InternedData, InternedString, TracePacket, TrackDescriptor, TrackEvent,
    SEQ_INCREMENTAL_STATE_CLEARED, SEQ_NEEDS_INCREMENTAL_STATE, TYPE_COUNTER, TYPE_SLICE_BEGIN,
    TYPE_SLICE_END,
};

/// Every packet gpuscope writes is on this sequence.
pub const SEQUENCE_ID: u32 = 1;
/// `Trace.packet`'s field number and wire type 2 (length-delimited), as one byte.
const PACKET_KEY: u8 = (1 << 3) | 2;

/// Interned strings: event names and debug annotation names, each its own id space.
#[derive(Default)]
pub struct Interner {
    names: HashMap<String, u64>,
    annotations: HashMap<&'static str, u64>,
    pending: InternedData,
}

impl Interner {
    /// The id of event name `s`, interning it (sent with the next packet) if new.
    pub fn name(&mut self, s: &str) -> u64 {
        if let Some(&iid) = self.names.get(s) {
            return iid;
        }
        let iid = self.names.len() as u64 + 1;
        self.names.insert(s.to_string(), iid);
        self.pending.event_names.push(InternedString {
            iid: Some(iid),
            name: Some(s.to_string()),
        });
        iid
    }

    /// The id of debug annotation name `s`.
    pub fn annotation(&mut self, s: &'static str) -> u64 {
        if let Some(&iid) = self.annotations.get(s) {
            return iid;
        }
        let iid = self.annotations.len() as u64 + 1;
        self.annotations.insert(s, iid);
        self.pending.debug_annotation_names.push(InternedString {
            iid: Some(iid),
            name: Some(s.to_string()),
        });
        iid
    }

    fn take_pending(&mut self) -> Option<InternedData> {
        let empty =
            self.pending.event_names.is_empty() && self.pending.debug_annotation_names.is_empty();
        (!empty).then(|| std::mem::take(&mut self.pending))
    }
}

/// A debug annotation's value.
pub enum Arg {
    Str(String),
    Uint(u64),
    Double(f64),
}

/// Writes packets to `out`, counting them.
pub struct Writer<W: Write> {
    out: W,
    buf: Vec<u8>,
    first: bool,
    pub interner: Interner,
    pub packets: u64,
    pub bytes: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Self {
        Writer {
            out,
            buf: Vec::with_capacity(256),
            first: true,
            interner: Interner::default(),
            packets: 0,
            bytes: 0,
        }
    }

    pub fn into_inner(self) -> W {
        self.out
    }

    fn packet(&mut self, mut p: TracePacket) -> std::io::Result<()> {
        p.trusted_packet_sequence_id = Some(SEQUENCE_ID);
        if self.first {
            // The sequence starts with clean incremental state (interned names).
            p.first_packet_on_sequence = Some(true);
            p.sequence_flags = Some(SEQ_INCREMENTAL_STATE_CLEARED);
            self.first = false;
        } else if p.track_event.is_some() {
            p.sequence_flags = Some(SEQ_NEEDS_INCREMENTAL_STATE);
        }
        if p.track_event.is_some() {
            p.interned_data = self.interner.take_pending();
        }
        self.buf.clear();
        self.buf.push(PACKET_KEY);
        p.encode_length_delimited(&mut self.buf)
            .expect("a Vec grows as needed");
        self.out.write_all(&self.buf)?;
        self.packets += 1;
        self.bytes += self.buf.len() as u64;
        Ok(())
    }

    /// Declares a track.
    pub fn track(&mut self, d: TrackDescriptor) -> std::io::Result<()> {
        self.packet(TracePacket {
            track_descriptor: Some(d),
            ..Default::default()
        })
    }

    fn event(&mut self, ts: u64, e: TrackEvent) -> std::io::Result<()> {
        self.packet(TracePacket {
            timestamp: Some(ts),
            track_event: Some(e),
            ..Default::default()
        })
    }

    /// Opens a slice named by interned id `name_iid` (or by `name`).
    pub fn begin(
        &mut self,
        ts: u64,
        track: u64,
        name: Name,
        args: Vec<(u64, Arg)>,
        flows: Flows,
    ) -> std::io::Result<()> {
        let (name_iid, name) = match name {
            Name::Interned(iid) => (Some(iid), None),
            Name::Plain(s) => (None, Some(s)),
        };
        let debug_annotations = args
            .into_iter()
            .map(|(iid, v)| {
                let mut a = DebugAnnotation {
                    name_iid: Some(iid),
                    ..Default::default()
                };
                match v {
                    Arg::Str(s) => a.string_value = Some(s),
                    Arg::Uint(u) => a.uint_value = Some(u),
                    Arg::Double(d) => a.double_value = Some(d),
                }
                a
            })
            .collect();
        self.event(
            ts,
            TrackEvent {
                r#type: Some(TYPE_SLICE_BEGIN),
                track_uuid: Some(track),
                name_iid,
                name,
                debug_annotations,
                flow_ids: flows.out.into_iter().collect(),
                terminating_flow_ids: flows.end.into_iter().collect(),
                ..Default::default()
            },
        )
    }

    /// Closes the innermost open slice of `track`.
    pub fn end(&mut self, ts: u64, track: u64) -> std::io::Result<()> {
        self.event(
            ts,
            TrackEvent {
                r#type: Some(TYPE_SLICE_END),
                track_uuid: Some(track),
                ..Default::default()
            },
        )
    }

    /// A counter sample.
    pub fn counter(&mut self, ts: u64, track: u64, value: Value) -> std::io::Result<()> {
        let mut e = TrackEvent {
            r#type: Some(TYPE_COUNTER),
            track_uuid: Some(track),
            ..Default::default()
        };
        match value {
            Value::Int(v) => e.counter_value = Some(v),
            Value::Double(v) => e.double_counter_value = Some(v),
        }
        self.event(ts, e)
    }
}

/// A slice's name: interned (names that repeat: ops, passes, CPU phases) or not.
pub enum Name {
    Interned(u64),
    Plain(String),
}

/// A counter sample's value.
pub enum Value {
    Int(i64),
    Double(f64),
}

/// The flow a slice starts and the one it ends, if any.
#[derive(Default, Clone, Copy)]
pub struct Flows {
    pub out: Option<u64>,
    pub end: Option<u64>,
}
