//! Counters: what the runtime did, counted always (they cost an integer add each).

use serde::{Deserialize, Serialize};

/// Work and resource counts over some span (a token, the setup phase, a replay).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counters {
    pub dispatches: u64,
    pub passes: u64,
    pub submits: u64,
    /// CPU waits on the GPU (device polls that block).
    pub syncs: u64,
    /// Dispatches that must wait for an earlier dispatch of the same pass: a
    /// read-after-write, write-after-write or write-after-read hazard on a buffer.
    pub barriers: u64,
    pub buffers_created: u64,
    pub bind_groups_created: u64,
    pub pipelines_created: u64,
    pub bytes_uploaded: u64,
    pub bytes_downloaded: u64,
}

impl Counters {
    /// Counters accumulated since `earlier` (field-wise difference).
    pub fn since(&self, earlier: &Counters) -> Counters {
        Counters {
            dispatches: self.dispatches - earlier.dispatches,
            passes: self.passes - earlier.passes,
            submits: self.submits - earlier.submits,
            syncs: self.syncs - earlier.syncs,
            barriers: self.barriers - earlier.barriers,
            buffers_created: self.buffers_created - earlier.buffers_created,
            bind_groups_created: self.bind_groups_created - earlier.bind_groups_created,
            pipelines_created: self.pipelines_created - earlier.pipelines_created,
            bytes_uploaded: self.bytes_uploaded - earlier.bytes_uploaded,
            bytes_downloaded: self.bytes_downloaded - earlier.bytes_downloaded,
        }
    }

    /// Resources created (buffers, bind groups, pipelines) in total.
    pub fn resources_created(&self) -> u64 {
        self.buffers_created + self.bind_groups_created + self.pipelines_created
    }

    /// Counters from values in the order of [`Counters::fields`]; lets analysis compute
    /// a statistic field by field without naming each field again.
    pub fn from_values(v: [u64; 10]) -> Counters {
        Counters {
            dispatches: v[0],
            passes: v[1],
            submits: v[2],
            syncs: v[3],
            barriers: v[4],
            buffers_created: v[5],
            bind_groups_created: v[6],
            pipelines_created: v[7],
            bytes_uploaded: v[8],
            bytes_downloaded: v[9],
        }
    }

    /// Named fields in a fixed order, for tables and diffs.
    pub fn fields(&self) -> [(&'static str, u64); 10] {
        [
            ("dispatches", self.dispatches),
            ("passes", self.passes),
            ("submits", self.submits),
            ("syncs", self.syncs),
            ("barriers", self.barriers),
            ("buffers_created", self.buffers_created),
            ("bind_groups_created", self.bind_groups_created),
            ("pipelines_created", self.pipelines_created),
            ("bytes_uploaded", self.bytes_uploaded),
            ("bytes_downloaded", self.bytes_downloaded),
        ]
    }
}
