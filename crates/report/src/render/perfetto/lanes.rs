//! Slices that overlap without nesting (two tokens in flight on one thread, GPU
//! dispatches that run concurrently) cannot share a track: Perfetto nests a track's
//! slices by begin/end order. Each such slice goes to the first lane where it nests;
//! lane 0 is the track itself, further lanes are tracks declared when first needed.

use std::io::Write;

use super::proto::TrackDescriptor;
use super::writer::Writer;

pub struct Lanes {
    tracks: Vec<u64>,
    /// Per lane, the ends of its open slices (innermost last).
    open: Vec<Vec<u64>>,
    /// Lane `k ≥ 1`'s track.
    extra: Box<dyn Fn(usize) -> TrackDescriptor>,
}

impl Lanes {
    pub fn new(lane0: u64, extra: impl Fn(usize) -> TrackDescriptor + 'static) -> Lanes {
        Lanes {
            tracks: vec![lane0],
            open: vec![Vec::new()],
            extra: Box::new(extra),
        }
    }

    /// The track for a slice `start..end`: slices that ended by `start` are closed on
    /// each lane looked at, and the slice is recorded as open on the lane chosen.
    pub fn place<W: Write>(
        &mut self,
        w: &mut Writer<W>,
        start: u64,
        end: u64,
    ) -> std::io::Result<u64> {
        for lane in 0..self.tracks.len() {
            let open = &mut self.open[lane];
            while let Some(&top) = open.last().filter(|&&top| top <= start) {
                w.end(top, self.tracks[lane])?;
                open.pop();
            }
            if open.last().is_none_or(|&top| end <= top) {
                open.push(end);
                return Ok(self.tracks[lane]);
            }
        }
        let d = (self.extra)(self.tracks.len());
        let uuid = d.uuid.expect("lane tracks have a uuid");
        w.track(d)?;
        self.tracks.push(uuid);
        self.open.push(vec![end]);
        Ok(uuid)
    }

    /// Closes every open slice.
    pub fn close_all<W: Write>(&mut self, w: &mut Writer<W>) -> std::io::Result<()> {
        for (lane, open) in self.open.iter_mut().enumerate() {
            while let Some(top) = open.pop() {
                w.end(top, self.tracks[lane])?;
            }
        }
        Ok(())
    }
}
