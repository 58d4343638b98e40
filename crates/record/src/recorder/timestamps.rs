//! Timestamp queries: a slot (query set, resolve and staging buffers) per live step,
//! taken on first use; resolving a step's queries into the program's command buffers;
//! reading the ticks back when they arrive.

use std::time::{Duration, Instant};

use super::{Recorder, State};
use crate::slots::{Slot, RESOLVE_ALIGN_QUERIES};

impl Recorder {
    /// Makes room for `n` timestamps per step (setup-time; avoids growing a slot later).
    /// Slots too small for it are replaced when next taken (`take_queries`), in
    /// place: live steps hold slot indices, so the list never shrinks or shifts (removing
    /// them here once let another thread's step unmap a slot it did not map).
    pub fn reserve_timestamps(&self, n: u32) {
        let mut st = self.state();
        if n > st.slot_capacity {
            st.slot_capacity = n;
        }
    }

    /// Resolves the open step's timestamps into `encoder` (call it just before
    /// `encoder.finish()` of the step's last command buffer): the submit then needs no
    /// command buffer of the recorder's own.
    pub fn resolve_timestamps(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut st = self.state();
        if st.open {
            self.resolve_open(&mut st, encoder);
        }
    }

    pub(super) fn resolve_open(&self, st: &mut State, encoder: &mut wgpu::CommandEncoder) {
        let s = st.live.back_mut().expect("an open step is live");
        let (Some(slot), from, to) = (s.slot, s.resolved, s.queries) else {
            return;
        };
        if to <= from {
            return;
        }
        // The next resolve must start on a 256-byte boundary.
        s.resolved = to.next_multiple_of(RESOLVE_ALIGN_QUERIES);
        s.queries = s.resolved;
        let slot = &st.slots[slot];
        let end = to.min(slot.capacity);
        encoder.resolve_query_set(&slot.set, from..end, &slot.resolve, 8 * from as u64);
        encoder.copy_buffer_to_buffer(
            &slot.resolve,
            8 * from as u64,
            &slot.staging,
            8 * from as u64,
            8 * (end - from) as u64,
        );
    }

    /// Query indices for the open step: a slot taken on first use. `None` when the
    /// step has used its slot up (the interval goes untimed; a note says so).
    pub(crate) fn take_queries(&self, st: &mut State, n: u32) -> Option<(wgpu::QuerySet, u32)> {
        if !st.open {
            return None;
        }
        let slot = match st.live.back().and_then(|s| s.slot) {
            Some(slot) => slot,
            None => {
                let slot = match st
                    .slots
                    .iter()
                    .position(|s| !s.busy && s.capacity >= st.slot_capacity)
                {
                    Some(i) => i,
                    None => {
                        let capacity = st.slot_capacity;
                        let slot = Slot::new(&self.shared.device, &mut st.registry, capacity);
                        // A free slot too small for the current capacity is replaced where
                        // it stands (see reserve_timestamps); else the list grows.
                        match st.slots.iter().position(|s| !s.busy) {
                            Some(i) => {
                                st.slots[i] = slot;
                                i
                            }
                            None => {
                                st.slots.push(slot);
                                st.slots.len() - 1
                            }
                        }
                    }
                };
                st.slots[slot].busy = true;
                st.live.back_mut().expect("open").slot = Some(slot);
                slot
            }
        };
        let capacity = st.slots[slot].capacity;
        let s = st.live.back_mut().expect("open");
        if s.queries + n > capacity {
            // Grow next time: later slots are made big enough for this step.
            st.slot_capacity = st
                .slot_capacity
                .max(capacity * 2)
                .min(wgpu::QUERY_SET_MAX_QUERIES);
            let note = format!(
                "a step needed more than {capacity} timestamps: its later intervals were not timed \
                 (reserve_timestamps avoids this)"
            );
            if !st.notes.contains(&note) {
                st.notes.push(note);
            }
            return None;
        }
        let first = s.queries;
        s.queries += n;
        Some((st.slots[slot].set.clone(), first))
    }

    /// Reads the ticks of ended steps whose readback has arrived, freeing their slots.
    /// With `block`, waits for every ended step's ticks.
    pub(crate) fn collect_ticks(&self, st: &mut State, block: bool) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for i in 0..st.live.len() {
            let Some(rx) = &st.live[i].mapped else {
                continue;
            };
            let result = if block {
                loop {
                    match rx.recv_timeout(Duration::from_millis(1)) {
                        Ok(r) => break Some(r),
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout)
                            if Instant::now() < deadline =>
                        {
                            let _ = self.shared.device.poll(wgpu::PollType::Poll);
                        }
                        Err(_) => break Some(Err(wgpu::BufferAsyncError)),
                    }
                }
            } else {
                rx.try_recv().ok()
            };
            let Some(result) = result else { continue };
            let slot_index = st.live[i].slot.expect("a mapped step has a slot");
            let queries = st.live[i].queries as usize;
            let ticks = match result {
                Ok(()) => {
                    let slot = &st.slots[slot_index];
                    let ticks = match slot
                        .staging
                        .slice(..8 * queries.max(1) as u64)
                        .get_mapped_range()
                    {
                        Ok(range) => range
                            .chunks_exact(8)
                            .take(queries)
                            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                            .collect(),
                        Err(_) => Vec::new(),
                    };
                    slot.staging.unmap();
                    ticks
                }
                Err(_) => {
                    let note =
                        "a step's timestamps could not be read back: its GPU times are missing"
                            .to_string();
                    if !st.notes.contains(&note) {
                        st.notes.push(note);
                    }
                    Vec::new()
                }
            };
            st.slots[slot_index].busy = false;
            let s = &mut st.live[i];
            s.mapped = None;
            s.slot = None;
            if st.origin_ticks.is_none() {
                st.origin_ticks = ticks.iter().copied().filter(|&t| t != 0).min();
            }
            st.live[i].readback_ticks = Some(ticks);
        }
    }
}

impl State {
    /// Whether the open step has timestamps written since its last resolve.
    pub(super) fn has_unresolved(&self) -> bool {
        self.open
            && self
                .live
                .back()
                .is_some_and(|s| s.slot.is_some() && s.queries > s.resolved)
    }
}
