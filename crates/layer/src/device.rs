//! Per-device state: command buffers being recorded (their dispatches and timestamp
//! slots), submissions waiting for a host sync, and the steps they become.
//!
//! Timestamps live in query pools the layer owns, a set per command buffer, recycled
//! when the buffer is freed. Where the program enabled `hostQueryReset` (llama.cpp
//! enables every feature the driver has), pools are reset from the host, when made and
//! when their buffer is recorded again: a reset recorded into the program's command
//! buffer is GPU work between its dispatches. Otherwise a pool is reset inside the
//! command buffer just before its first query is written (`vkCmdResetQueryPool`), so
//! the layer never submits or waits on its own. Results are read with `vkGetQueryPoolResults` without waiting, only
//! after the program's own sync has returned (a fence wait or poll, a queue or device
//! wait idle, a semaphore wait), or when the program re-records a buffer (which it may
//! only do once the GPU is done with it).

use std::cell::{Cell, UnsafeCell};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use ash::vk;
use ash::vk::Handle;
use gpuscope_trace::recording::{
    CommandBufferRecord, DispatchRecord, Record, RecordedSpan, StepRecord,
};
use gpuscope_trace::TimingMode;

use rustc_hash::FxHashMap as HashMap;

use crate::fns::DeviceFns;
use crate::writer;

/// Queries per pool the layer creates: 256 timed dispatches (two timestamps each).
pub const POOL_QUERIES: u32 = 512;

/// Queries reset at once inside a command buffer, as they come into use.
const RESET_CHUNK: u32 = 16;

/// Where one timestamp goes: the `i`-th query of a command buffer's recording.
pub type Slot = u32;

pub struct Device {
    pub handle: vk::Device,
    pub id: u32,
    pub fns: DeviceFns,
    pub next_gdpa: vk::PFN_vkGetDeviceProcAddr,
    pub timing: TimingMode,
    /// In dispatch mode, 1 in `stride` dispatches is timed.
    pub stride: u32,
    /// Per queue family: the mask of valid timestamp bits (0: no timestamps).
    pub family_timestamp_mask: Vec<u64>,
    /// Property flags of each memory type.
    pub memory_types: Vec<vk::MemoryPropertyFlags>,
    pub step_per_submit: bool,
    /// Command-buffer debug labels are read and not passed on (see `config::ENV_LABELS`).
    pub stop_labels: bool,
    /// Query pools are reset from the host (`vkResetQueryPool`), not in command buffers.
    pub host_reset: bool,
    /// Dispatches recorded so far (what sampling picks by).
    pub dispatches_recorded: AtomicU64,
    /// Descriptor sets updated since the last step closed on any queue of this device
    /// (an atomic: a hook the program calls once a dispatch takes no lock).
    pub descriptor_updates: AtomicU64,
    pub state: Mutex<DeviceState>,
}

#[derive(Default)]
pub struct DeviceState {
    pub command_buffers: HashMap<u64, CommandBuffer>,
    /// The queue family of each command pool (whether its buffers can take timestamps).
    pub pool_family: HashMap<u64, u32>,
    /// Entry points of each recorded shader (workgroup sizes per pipeline).
    pub shader_entries: HashMap<u32, Vec<crate::spirv::Entry>>,
    /// Pools of freed command buffers, ready for others.
    pub spare_pools: Vec<vk::QueryPool>,
    /// Recorded id of each pipeline and shader module handle.
    pub pipelines: HashMap<u64, u32>,
    pub modules: HashMap<u64, u32>,
    /// Each memory allocation: (its number, bytes, memory type).
    pub memory: HashMap<u64, (u64, u64, u32)>,
    pub allocations_made: u64,
    /// What each buffer is for (`storage`, `uniform`, `staging`, `other`).
    pub buffer_usage: HashMap<u64, &'static str>,
    pub queues: HashMap<u64, Queue>,
    /// Counts of host-side work (resources created) since the last step closed on any
    /// queue of this device.
    pub host_counters: BTreeMap<&'static str, u64>,
}

/// A debug label: where its name lies in its recording's `label_text`. Opening a label
/// (llama.cpp opens two a dispatch) copies its bytes and nothing more; the writer thread
/// reads them as text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Label {
    start: u32,
    len: u32,
}

/// A command buffer the program allocated.
#[derive(Default)]
pub struct CommandBuffer {
    pub pool: u64,
    pub secondary: bool,
    pub name: Option<String>,
    /// Query pools owned by this buffer, in slot order.
    pub query_pools: Vec<vk::QueryPool>,
    /// The recording in progress (between begin and end), reached without the lock.
    pub recording: Arc<RecordingCell>,
    /// The last finished recording, what a submit executes.
    pub last: Option<Arc<Recording>>,
}

/// What one recording of a command buffer holds.
#[derive(Default)]
pub struct Recording {
    pub dispatches: Vec<Dispatch>,
    /// Timestamp slots at the buffer's start and end (`pass` timing).
    pub bounds: Option<(Slot, Slot)>,
    pub counts: Counts,
    /// The bound compute pipeline's handle (its recorded id is looked up when the
    /// recording ends, under the device lock the binding itself does not take).
    pub pipeline: Option<u64>,
    /// Open debug-utils labels, innermost last.
    pub labels: Vec<Label>,
    /// The names of the labels opened in this recording, one after the other.
    pub label_text: Vec<u8>,
    /// Next free query slot.
    pub next_slot: Slot,
    /// A timestamp written just after this recording's last dispatch, for the next one
    /// when it is to be timed (see `hooks::commands::dispatch`).
    pub pending_before: Option<Slot>,
    /// The query pools of the buffer when this recording ended.
    pub query_pools: Vec<vk::QueryPool>,
}

/// What a recording counts, kept in a fixed array: a barrier's four counts are four
/// additions, not four map lookups by name (the hooks run thousands of times a token).
#[derive(Clone, Copy)]
pub enum Count {
    Barriers,
    MemoryBarriers,
    BufferBarriers,
    ImageBarriers,
    Copies,
    CopyBytes,
    Fills,
    FillBytes,
    Updates,
    UpdateBytes,
    LayerQueryResets,
}

impl Count {
    /// The counter's name in the recording (the profile's counter name).
    const NAMES: [&'static str; 11] = [
        "barriers",
        "memory_barriers",
        "buffer_barriers",
        "image_barriers",
        "copies",
        "copy_bytes",
        "fills",
        "fill_bytes",
        "updates",
        "update_bytes",
        "layer_query_resets",
    ];
}

#[derive(Default)]
pub struct Counts([u64; Count::NAMES.len()]);

impl Counts {
    pub fn add(&mut self, what: Count, n: u64) {
        let c = &mut self.0[what as usize];
        *c = c.saturating_add(n);
    }

    /// The counts that are not zero, by name.
    pub fn named(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        Count::NAMES
            .iter()
            .zip(self.0)
            .filter(|&(_, n)| n > 0)
            .map(|(&name, n)| (name, n))
    }
}

#[derive(Clone, Copy)]
pub struct Dispatch {
    /// The bound pipeline's handle.
    pub pipeline_handle: u64,
    /// Its recorded id, found when the recording ended (see
    /// [`Recording::resolve_pipelines`]).
    pub pipeline: u32,
    pub label: Option<Label>,
    pub scope: Option<Label>,
    pub workgroups: [u32; 3],
    pub kind: DispatchKind,
    pub slots: Option<(Slot, Slot)>,
}

/// Which command recorded a dispatch.
#[derive(Clone, Copy)]
pub enum DispatchKind {
    Direct,
    Indirect,
    Base,
}

impl DispatchKind {
    /// As the recording names it.
    pub fn name(self) -> &'static str {
        match self {
            DispatchKind::Direct => "direct",
            DispatchKind::Indirect => "indirect",
            DispatchKind::Base => "base",
        }
    }
}

/// One queue with the submissions not yet closed into a step.
pub struct Queue {
    pub id: u32,
    pub family: u32,
    pub pending: Vec<Submission>,
    /// When the current step started (the last step's end, or the first submit).
    pub step_start_ns: Option<u64>,
    /// Submits and syncs of the current step.
    pub counters: BTreeMap<&'static str, u64>,
    pub spans: Vec<RecordedSpan>,
}

pub struct Submission {
    pub fence: vk::Fence,
    pub executions: Vec<Execution>,
    pub cpu_ns: u64,
}

/// One command buffer as submitted: its recording, and its timestamps once read.
pub struct Execution {
    pub command_buffer: u64,
    pub name: Option<String>,
    pub recording: Arc<Recording>,
    /// Read timestamps, per slot (None until read; a slot not available reads 0).
    pub ticks: Option<Vec<u64>>,
}

/// The recording in progress of one command buffer.
///
/// Vulkan requires a program to synchronise each command buffer itself: one thread at
/// a time records it, begins, ends, resets or frees it. The layer touches a cell only
/// in the hooks of its own command buffer, so the program's synchronisation covers the
/// layer's accesses too, and the hooks that run several times a dispatch (labels,
/// bindings, barriers, dispatches) take no lock. On the H100 host, llama.cpp's 8B decode
/// spent 3% of its thread in the layer with a lock per hook (BENCHMARKS.md, run 38).
#[derive(Default)]
pub struct RecordingCell(UnsafeCell<Option<Recording>>);

// SAFETY: accesses are serialised by the program's synchronisation of the command
// buffer (see the type's doc); a recording moves between threads only as a whole.
unsafe impl Sync for RecordingCell {}

impl RecordingCell {
    /// The recording in progress.
    ///
    /// # Safety
    /// Called from a hook of this cell's command buffer (which the program
    /// synchronises), with no other reference from this function alive.
    #[allow(clippy::mut_from_ref)] // The program's synchronisation is the exclusion.
    pub unsafe fn get(&self) -> &mut Option<Recording> {
        &mut *self.0.get()
    }
}

/// Bumped whenever a command buffer's record goes (freed, its pool or device
/// destroyed): a cached cell of an older generation is not used, as its handle may now
/// name another buffer.
pub static CELL_GENERATION: AtomicU64 = AtomicU64::new(0);

/// A cell this thread looked up: (command buffer handle, generation, cell). The
/// pointer is the `Arc` held by the buffer's entry in [`DeviceState`], alive until the
/// buffer is freed; freeing it bumps the generation first, and a program may not free
/// a buffer while another thread records it.
type CachedCell = (u64, u64, *const RecordingCell);

thread_local! {
    static LAST_CELL: Cell<CachedCell> = const { Cell::new((0, u64::MAX, std::ptr::null())) };
}

impl Device {
    /// `cb`'s recording cell: this thread's last one when that is `cb`'s (a thread
    /// mostly records one buffer after another), else looked up under the device lock,
    /// so the caller must not hold it.
    ///
    /// # Safety
    /// Called from a hook of `cb`; the cell is used within that hook (see
    /// [`CachedCell`] for how long it lives).
    pub unsafe fn recording_cell<'a>(&self, cb: vk::CommandBuffer) -> Option<&'a RecordingCell> {
        let raw = cb.as_raw();
        let generation = CELL_GENERATION.load(Ordering::Acquire);
        let cell = match LAST_CELL.try_with(Cell::get).ok()? {
            (h, g, cell) if h == raw && g == generation => cell,
            _ => {
                let cell = Arc::as_ptr(&self.lock().command_buffers.get(&raw)?.recording);
                let _ = LAST_CELL.try_with(|c| c.set((raw, generation, cell)));
                cell
            }
        };
        // SAFETY: see `CachedCell`.
        cell.as_ref()
    }

    /// Runs `f` on `cb`'s recording in progress, if it is being recorded (see
    /// [`Self::recording_cell`]: not with the device lock held).
    ///
    /// # Safety
    /// Called from a hook of `cb`; `f` does not reach `cb`'s recording otherwise.
    pub unsafe fn with_recording<R>(
        &self,
        cb: vk::CommandBuffer,
        f: impl FnOnce(&mut Recording) -> R,
    ) -> Option<R> {
        self.recording_cell(cb)?.get().as_mut().map(f)
    }
}

/// Forgets the cells cached by every thread (a command buffer's record went).
pub fn forget_cells() {
    CELL_GENERATION.fetch_add(1, Ordering::Release);
}

impl Recording {
    /// Gives each dispatch its pipeline's recorded id, dropping those whose pipeline
    /// the layer never saw created.
    pub fn resolve_pipelines(&mut self, ids: &HashMap<u64, u32>) {
        self.dispatches
            .retain_mut(|d| match ids.get(&d.pipeline_handle) {
                Some(&id) => {
                    d.pipeline = id;
                    true
                }
                None => false,
            });
    }

    /// Opens a label named `bytes`.
    pub fn open_label(&mut self, bytes: &[u8]) {
        let label = self.keep_name(bytes);
        self.labels.push(label);
    }

    /// Appends `bytes` to the recording's label names; past 4 GiB of names in one
    /// recording, the label is unnamed.
    fn keep_name(&mut self, bytes: &[u8]) -> Label {
        let start = self.label_text.len();
        match (u32::try_from(start), u32::try_from(start + bytes.len())) {
            (Ok(start), Ok(_)) => {
                self.label_text.extend_from_slice(bytes);
                Label {
                    start,
                    len: bytes.len() as u32,
                }
            }
            _ => Label { start: 0, len: 0 },
        }
    }

    /// A label's name as bytes.
    fn name_bytes(&self, l: Label) -> &[u8] {
        let (start, end) = (l.start as usize, l.start as usize + l.len as usize);
        self.label_text.get(start..end).unwrap_or(&[])
    }

    /// A label's name as text.
    pub fn label_name(&self, l: Label) -> String {
        String::from_utf8_lossy(self.name_bytes(l)).into_owned()
    }

    /// Appends `other`'s dispatches (a secondary buffer's), untimed (their timestamps
    /// would sit in the secondary's pools), with their labels' names.
    pub fn append_untimed(&mut self, other: &Recording) {
        for x in &other.dispatches {
            let label = x.label.map(|l| self.keep_name(other.name_bytes(l)));
            let scope = x.scope.map(|l| self.keep_name(other.name_bytes(l)));
            self.dispatches.push(Dispatch {
                label,
                scope,
                slots: None,
                ..*x
            });
        }
    }
}

impl Device {
    pub fn lock(&self) -> MutexGuard<'_, DeviceState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether this dispatch (the `n`-th recorded) is timed: every one, or when
    /// sampling, one in `stride` picked by a hash of `n`. A program's steps need not
    /// repeat one graph (llama.cpp alternates two kinds of step per token), so a fixed
    /// rotation could keep meeting the same dispatches; a hash reaches every dispatch
    /// position about equally often whatever the steps look like.
    pub fn times(&self, n: u64) -> bool {
        let stride = u64::from(self.stride.max(1));
        self.timing == TimingMode::Dispatch && (stride == 1 || mix(n).is_multiple_of(stride))
    }

    /// Takes the next timestamp slot of `rec` (`cb`'s recording in progress), creating a query pool when a new
    /// one is first used and resetting (inside the command buffer) each chunk of
    /// [`RESET_CHUNK`] queries before its first one is written.
    ///
    /// # Safety
    /// `cb` is in the recording state and belongs to this device.
    pub unsafe fn take_slot(
        &self,
        st: &mut DeviceState,
        cb: vk::CommandBuffer,
        rec: &mut Recording,
    ) -> Option<(vk::QueryPool, u32, Slot)> {
        let create = self.fns.create_query_pool?;
        let spare = &mut st.spare_pools;
        let entry = st.command_buffers.get_mut(&cb.as_raw())?;
        let slot = rec.next_slot;
        let (pool_index, query) = ((slot / POOL_QUERIES) as usize, slot % POOL_QUERIES);
        if pool_index == entry.query_pools.len() {
            let pool = match spare.pop() {
                Some(p) => p,
                None => {
                    let info = vk::QueryPoolCreateInfo::default()
                        .query_type(vk::QueryType::TIMESTAMP)
                        .query_count(POOL_QUERIES);
                    let mut pool = vk::QueryPool::null();
                    if create(self.handle, &info, std::ptr::null(), &mut pool)
                        != vk::Result::SUCCESS
                    {
                        return None;
                    }
                    pool
                }
            };
            // A new pool's queries start undefined; a spare one's hold old results.
            self.host_reset_pools(&[pool]);
            entry.query_pools.push(pool);
        }
        let pool = entry.query_pools[pool_index];
        // Reset inside the command buffer just before first use, a chunk at a time: a
        // sampled buffer uses a few queries, and a reset of all of a pool's is GPU work
        // (and ordering) the program did not ask for.
        if !self.host_reset && query.is_multiple_of(RESET_CHUNK) {
            let reset = self.fns.cmd_reset_query_pool?;
            reset(cb, pool, query, RESET_CHUNK.min(POOL_QUERIES - query));
            rec.counts.add(Count::LayerQueryResets, 1);
        }
        rec.next_slot += 1;
        Some((pool, query, slot))
    }

    /// Resets `pools` from the host, when the device allows it (else a no-op: their
    /// queries are reset in the command buffer as they come into use).
    ///
    /// # Safety
    /// No pending GPU work uses the pools.
    pub unsafe fn host_reset_pools(&self, pools: &[vk::QueryPool]) {
        if let (true, Some(reset)) = (self.host_reset, self.fns.reset_query_pool) {
            for &pool in pools {
                reset(self.handle, pool, 0, POOL_QUERIES);
            }
        }
    }

    /// Writes a timestamp into the next slot of `rec`, `cb`'s recording; returns the
    /// slot.
    ///
    /// # Safety
    /// As [`Self::take_slot`].
    pub unsafe fn timestamp(
        &self,
        st: &mut DeviceState,
        cb: vk::CommandBuffer,
        rec: &mut Recording,
    ) -> Option<Slot> {
        let write = self.fns.cmd_write_timestamp?;
        let (pool, query, slot) = self.take_slot(st, cb, rec)?;
        write(cb, vk::PipelineStageFlags::BOTTOM_OF_PIPE, pool, query);
        Some(slot)
    }

    /// Reads an execution's timestamps (without waiting; see the module doc).
    ///
    /// # Safety
    /// The program has synchronised with the execution's completion.
    pub unsafe fn read_ticks(&self, e: &mut Execution, family: u32) {
        if e.ticks.is_some() {
            return;
        }
        let rec = &e.recording;
        let mask = self
            .family_timestamp_mask
            .get(family as usize)
            .copied()
            .unwrap_or(0);
        let mut ticks = vec![0u64; rec.next_slot as usize];
        if let (Some(get), true) = (self.fns.get_query_pool_results, mask != 0) {
            for (p, pool) in rec.query_pools.iter().enumerate() {
                let first = p as u32 * POOL_QUERIES;
                let n = rec.next_slot.saturating_sub(first).min(POOL_QUERIES);
                if n == 0 {
                    break;
                }
                // (value, availability) pairs.
                let mut data = vec![0u64; 2 * n as usize];
                let r = get(
                    self.handle,
                    *pool,
                    0,
                    n,
                    data.len() * 8,
                    data.as_mut_ptr().cast(),
                    16,
                    vk::QueryResultFlags::TYPE_64 | vk::QueryResultFlags::WITH_AVAILABILITY,
                );
                if r != vk::Result::SUCCESS && r != vk::Result::NOT_READY {
                    continue;
                }
                for q in 0..n as usize {
                    if data[2 * q + 1] != 0 {
                        ticks[first as usize + q] = data[2 * q] & mask;
                    }
                }
            }
        }
        e.ticks = Some(ticks);
    }

    /// Closes the first `upto` pending submissions of `queue` into a step (or one step
    /// per submission with `--step submit`), reading their timestamps, and writes it.
    ///
    /// # Safety
    /// The program's sync covers those submissions.
    pub unsafe fn close(
        &self,
        st: &mut DeviceState,
        queue: u64,
        upto: usize,
        ended_by: &str,
        wait: Option<RecordedSpan>,
    ) {
        let now = writer::now_ns();
        let Some(q) = st.queues.get_mut(&queue) else {
            return;
        };
        *q.counters.entry("syncs").or_default() += 1;
        if let Some(w) = wait {
            q.spans.push(w);
        }
        let upto = upto.min(q.pending.len());
        if upto == 0 {
            return;
        }
        let mut host = std::mem::take(&mut st.host_counters);
        let mut done: Vec<Submission> = q.pending.drain(..upto).collect();
        for s in &mut done {
            for e in &mut s.executions {
                self.read_ticks(e, q.family);
            }
        }
        let groups: Vec<Vec<Submission>> = if self.step_per_submit {
            done.into_iter().map(|s| vec![s]).collect()
        } else {
            vec![done]
        };
        let updates = self.descriptor_updates.swap(0, Ordering::Relaxed);
        if updates > 0 {
            *host.entry("descriptor_updates").or_default() += updates;
        }
        let mut host = Some(host);
        let n_groups = groups.len();
        for (g, group) in groups.into_iter().enumerate() {
            let start = q.step_start_ns.unwrap_or(group[0].cpu_ns);
            let end = if g + 1 == n_groups {
                now
            } else {
                group[0].cpu_ns
            };
            // Moved as they are: the names become text on the writer's thread, not
            // on the program's, which is waiting to record its next token.
            let (host, queue_counters) = (host.take(), std::mem::take(&mut q.counters));
            let spans = std::mem::take(&mut q.spans);
            q.step_start_ns = Some(end);
            let (queue, ended_by) = (q.id, ended_by.to_string());
            writer::record_step(move |index| {
                let mut counters: BTreeMap<String, u64> = BTreeMap::new();
                for (k, v) in host.into_iter().flatten().chain(queue_counters) {
                    *counters.entry(k.to_string()).or_default() += v;
                }
                let mut step = step_record(queue, start, end, &ended_by, &group, &mut counters);
                step.index = index;
                step.counters = counters;
                step.cpu_spans = spans;
                Record::Step(step)
            });
        }
    }
}

/// The step's command buffers with their dispatches and ticks, its counters added to.
fn step_record(
    queue: u32,
    start: u64,
    end: u64,
    ended_by: &str,
    submissions: &[Submission],
    counters: &mut BTreeMap<String, u64>,
) -> StepRecord {
    let mut command_buffers = Vec::new();
    for (i, s) in submissions.iter().enumerate() {
        for e in &s.executions {
            let ticks = e.ticks.as_deref().unwrap_or(&[]);
            let at = |slot: Slot| ticks.get(slot as usize).copied().unwrap_or(0);
            let rec = &e.recording;
            for (k, v) in rec.counts.named() {
                *counters.entry(k.to_string()).or_default() += v;
            }
            command_buffers.push(CommandBufferRecord {
                name: e.name.clone(),
                submit: i as u32,
                ticks: rec.bounds.map(|(a, b)| (at(a), at(b))),
                dispatches: rec
                    .dispatches
                    .iter()
                    .map(|d| DispatchRecord {
                        pipeline: d.pipeline,
                        label: d.label.map(|l| rec.label_name(l)),
                        scope: d.scope.map(|l| rec.label_name(l)),
                        workgroups: d.workgroups,
                        kind: d.kind.name().into(),
                        ticks: d.slots.map(|(a, b)| (at(a), at(b))),
                    })
                    .collect(),
            });
        }
    }
    *counters.entry("command_buffers".into()).or_default() += command_buffers.len() as u64;
    StepRecord {
        index: 0,
        queue,
        cpu_start_ns: start,
        cpu_end_ns: end.max(start),
        ended_by: ended_by.into(),
        command_buffers,
        counters: BTreeMap::new(),
        cpu_spans: Vec::new(),
    }
}

/// The calling thread's OS id (for CPU spans).
pub fn thread_id() -> u64 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::syscall(libc::SYS_gettid) as u64 }
}

/// SplitMix64's finaliser: consecutive counters to well-spread values.
fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[cfg(test)]
mod tests {
    use super::{Count, Counts, Dispatch, DispatchKind, Recording};

    fn dispatch(rec: &Recording, slots: Option<(u32, u32)>) -> Dispatch {
        let n = rec.labels.len();
        Dispatch {
            pipeline_handle: 70,
            pipeline: 7,
            label: rec.labels.last().copied(),
            scope: n.checked_sub(2).map(|i| rec.labels[i]),
            workgroups: [1, 2, 3],
            kind: DispatchKind::Direct,
            slots,
        }
    }

    #[test]
    fn labels_keep_their_names_and_follow_dispatches_into_a_primary() {
        let mut secondary = Recording::default();
        secondary.open_label(b"node_1");
        secondary.open_label("mul_mat_vec \u{e9}".as_bytes());
        let d = dispatch(&secondary, Some((0, 1)));
        secondary.dispatches.push(d);
        secondary.labels.pop();
        secondary.open_label(b"rms_norm");
        let d = dispatch(&secondary, Some((2, 3)));
        secondary.dispatches.push(d);

        let mut primary = Recording::default();
        primary.open_label(b"graph");
        primary.append_untimed(&secondary);
        let names: Vec<_> = primary
            .dispatches
            .iter()
            .map(|d| {
                (
                    d.label.map(|l| primary.label_name(l)),
                    d.scope.map(|l| primary.label_name(l)),
                    d.slots,
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                (
                    Some("mul_mat_vec \u{e9}".into()),
                    Some("node_1".into()),
                    None
                ),
                (Some("rms_norm".into()), Some("node_1".into()), None),
            ]
        );
    }

    #[test]
    fn each_count_is_named_by_its_own_counter() {
        let mut c = Counts::default();
        c.add(Count::Barriers, 1);
        c.add(Count::ImageBarriers, 4);
        c.add(Count::UpdateBytes, u64::MAX);
        c.add(Count::UpdateBytes, 9);
        c.add(Count::LayerQueryResets, 2);
        let named: Vec<_> = c.named().collect();
        assert_eq!(
            named,
            [
                ("barriers", 1),
                ("image_barriers", 4),
                ("update_bytes", u64::MAX),
                ("layer_query_resets", 2)
            ]
        );
    }
}
