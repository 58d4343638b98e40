//! Timestamp health: how many GPU spans are usable and why the others are not.
//!
//! A report must say when numbers are missing; this counts, for dispatches and passes
//! separately, the valid spans and each [`TimestampIssue`]. A span present but ending
//! before it starts without a flag (possible in a hand-edited or foreign file) is
//! counted as [`TimestampIssue::Negative`], the same way analysis leaves it out.

use gpuscope_trace::{GpuSpan, Profile, TimestampIssue};

/// What one event's timestamps allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpanStatus {
    /// Usable; the duration in nanoseconds.
    Valid(u64),
    /// No span was recorded (timing off, or a mode that does not time this event).
    Missing,
    /// Recorded but unusable.
    Issue(TimestampIssue),
}

/// Classifies one event's span.
pub fn span_status(gpu: Option<GpuSpan>, issue: Option<TimestampIssue>) -> SpanStatus {
    match (gpu, issue) {
        (_, Some(i)) => SpanStatus::Issue(i),
        (None, None) => SpanStatus::Missing,
        (Some(s), None) => match s.checked_duration_ns() {
            Some(ns) => SpanStatus::Valid(ns),
            None => SpanStatus::Issue(TimestampIssue::Negative),
        },
    }
}

/// Counts over one kind of event.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpanCounts {
    pub events: u64,
    pub valid: u64,
    /// Events with no span and no issue: not timed, not an error.
    pub missing: u64,
    pub zero: u64,
    pub negative: u64,
    pub out_of_order: u64,
}

impl SpanCounts {
    /// Spans recorded but left out.
    pub fn issues(&self) -> u64 {
        self.zero + self.negative + self.out_of_order
    }

    /// Spans recorded at all (valid or not).
    pub fn recorded(&self) -> u64 {
        self.valid + self.issues()
    }

    fn add(&mut self, status: SpanStatus) {
        self.events += 1;
        match status {
            SpanStatus::Valid(_) => self.valid += 1,
            SpanStatus::Missing => self.missing += 1,
            SpanStatus::Issue(TimestampIssue::Zero) => self.zero += 1,
            SpanStatus::Issue(TimestampIssue::Negative) => self.negative += 1,
            SpanStatus::Issue(TimestampIssue::OutOfOrder) => self.out_of_order += 1,
        }
    }

    fn sum(&self, o: &SpanCounts) -> SpanCounts {
        SpanCounts {
            events: self.events + o.events,
            valid: self.valid + o.valid,
            missing: self.missing + o.missing,
            zero: self.zero + o.zero,
            negative: self.negative + o.negative,
            out_of_order: self.out_of_order + o.out_of_order,
        }
    }
}

/// Span counts for dispatches, passes and both.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimestampHealth {
    pub dispatches: SpanCounts,
    pub passes: SpanCounts,
}

impl TimestampHealth {
    pub fn total(&self) -> SpanCounts {
        self.dispatches.sum(&self.passes)
    }

    /// True when at least one span was recorded and none was left out.
    pub fn all_valid(&self) -> bool {
        let t = self.total();
        t.valid > 0 && t.issues() == 0
    }
}

/// Counts valid spans and issues over every dispatch and pass.
pub fn timestamp_health(p: &Profile) -> TimestampHealth {
    let mut h = TimestampHealth::default();
    for d in &p.dispatches {
        h.dispatches.add(span_status(d.gpu, d.timestamp_issue));
    }
    for s in &p.passes {
        h.passes.add(span_status(s.gpu, s.timestamp_issue));
    }
    h
}
