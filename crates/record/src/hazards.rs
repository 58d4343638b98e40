//! Barrier inference from bindings, the way wgpu's usage tracker decides.
//!
//! Within a compute pass wgpu tracks each buffer's usage. A dispatch needs a barrier
//! before it when one of its buffers was last used read-write, or is now used read-write
//! after being read: a read-write storage binding is an exclusive usage whether or not
//! the shader writes through it, so read-write after read-write always waits, while
//! read-only after read-only never does. The count is the number of dispatches that wait
//! (one barrier point each, whatever the number of buffers in it).

use std::collections::HashMap;

use gpuscope_trace::capture::Access;

/// A buffer a dispatch binds, and the access its shader declares for the binding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BufferAccess {
    /// Recorder buffer id.
    pub(crate) buffer: u64,
    pub(crate) access: Access,
}

/// Per-pass usage state. `clear` keeps the map's capacity: no allocation per pass.
#[derive(Default)]
pub(crate) struct Hazards {
    last: HashMap<u64, Access>,
}

impl Hazards {
    pub(crate) fn clear(&mut self) {
        self.last.clear();
    }

    /// Records one dispatch's bound buffers (several views of one buffer merge: any
    /// read-write makes the dispatch's usage read-write); returns whether it waits on a
    /// barrier.
    pub(crate) fn dispatch<'a>(&mut self, bound: impl Iterator<Item = &'a BufferAccess>) -> bool {
        // Merged per buffer without allocating for the usual handful of bindings.
        let mut merged = [BufferAccess {
            buffer: 0,
            access: Access::Read,
        }; 16];
        let mut n = 0;
        let mut spill: Vec<BufferAccess> = Vec::new();
        for &BufferAccess { buffer, access } in bound {
            let slots = if n < merged.len() {
                &mut merged[..n]
            } else {
                &mut merged[..]
            };
            if let Some(e) = slots
                .iter_mut()
                .chain(spill.iter_mut())
                .find(|e| e.buffer == buffer)
            {
                if access == Access::ReadWrite {
                    e.access = Access::ReadWrite;
                }
            } else if n < merged.len() {
                merged[n] = BufferAccess { buffer, access };
                n += 1;
            } else {
                spill.push(BufferAccess { buffer, access });
            }
        }
        let mut barrier = false;
        for &BufferAccess { buffer, access } in merged[..n].iter().chain(&spill) {
            // After this dispatch (and its barrier, if any) the buffer is in this usage.
            if let Some(prev) = self.last.insert(buffer, access) {
                barrier |= prev == Access::ReadWrite || access == Access::ReadWrite;
            }
        }
        barrier
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Access::{Read as R, ReadWrite as W};

    fn bound(list: &[(u64, Access)]) -> Vec<BufferAccess> {
        list.iter()
            .map(|&(buffer, access)| BufferAccess { buffer, access })
            .collect()
    }

    #[test]
    fn read_after_write_and_write_after_read_wait_read_after_read_does_not() {
        let mut h = Hazards::default();
        assert!(
            !h.dispatch(bound(&[(1, R), (2, W)]).iter()),
            "first dispatch of a pass"
        );
        assert!(
            h.dispatch(bound(&[(2, R), (3, W)]).iter()),
            "reads what the last one wrote"
        );
        assert!(!h.dispatch(bound(&[(1, R), (4, W)]).iter()), "independent");
        assert!(
            h.dispatch(bound(&[(1, W)]).iter()),
            "writes what others read"
        );
        h.clear();
        assert!(
            !h.dispatch(bound(&[(1, W)]).iter()),
            "a new pass starts clean"
        );
        assert!(
            h.dispatch(bound(&[(1, W)]).iter()),
            "read-write after read-write waits"
        );
        assert!(
            h.dispatch(bound(&[(1, R)]).iter()),
            "read after write waits"
        );
        assert!(
            !h.dispatch(bound(&[(1, R)]).iter()),
            "then reading again does not"
        );
        h.clear();
        assert!(
            !h.dispatch(bound(&[(5, R), (5, W)]).iter()),
            "views of one buffer in one dispatch merge"
        );
        assert!(
            h.dispatch(bound(&[(5, R)]).iter()),
            "merged usage was read-write"
        );
    }
}
