//! The instrumented compute pass: `wgpu::ComputePass`'s methods, plus what a profile
//! wants to know of each dispatch (op, label, layer, declared cost).
//!
//! Adopting it is a type change: `encoder.begin_compute_pass(&desc)` becomes
//! `rec.begin_compute_pass(&mut encoder, &desc)`, and the calls on the pass stay.

use std::time::Instant;

use gpuscope_trace::TimingMode;

use crate::hazards::BufferAccess;
use crate::names::Name;
use crate::recorder::{field, Recorder, State};
use crate::step::{Cost, DispatchRec, PassRec};
use crate::timing::Queries;
use crate::MAX_BIND_GROUPS;

/// What the profile says of the next dispatch. Unset fields fall back to the pipeline's
/// label (op), the op (label), no layer and no declared cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DispatchInfo {
    /// Kernel family, e.g. `gemv_q4_1`.
    pub op: Option<Name>,
    /// Op plus place, e.g. `L12.ffn_up`.
    pub label: Option<Name>,
    pub layer: Option<u32>,
    pub cost: Cost,
}

const UNSET: u32 = u32::MAX;

/// A compute pass being recorded. Dropping it ends the pass, as with wgpu.
pub struct RecordingPass<'e> {
    rec: &'e Recorder,
    pass: wgpu::ComputePass<'e>,
    /// The step the pass belongs to; `None` outside any step.
    step: Option<u32>,
    timing: TimingMode,
    sampling: Option<u32>,
    queries: Option<wgpu::QuerySet>,
    /// Query written at the pass start / after the last dispatch (dispatch mode).
    last_query: Option<u32>,
    pass_queries: Option<Queries>,
    name: Name,
    first_dispatch: u32,
    dispatches: u32,
    pipeline: u32,
    groups: [u32; MAX_BIND_GROUPS],
    info: DispatchInfo,
    encode_start: Option<Instant>,
}

impl Recorder {
    /// `encoder.begin_compute_pass(desc)`, instrumented. In `pass` timing mode the
    /// recorder sets the descriptor's timestamp writes (unless the program set its own,
    /// which it then keeps); in `dispatch` mode it writes timestamps inside the pass.
    pub fn begin_compute_pass<'e>(
        &'e self,
        encoder: &'e mut wgpu::CommandEncoder,
        desc: &wgpu::ComputePassDescriptor<'_>,
    ) -> RecordingPass<'e> {
        let mut st = self.state();
        let step = st.open.then(|| st.live.back().map(|s| s.id)).flatten();
        let timing = st.timing.mode;
        let sampling = st.timing.sampling.as_ref().map(|s| s.stride);
        let name = st.names.intern(desc.label.unwrap_or("pass"));
        st.hazards.clear();
        st.passes_since_submit += 1;
        st.instrumentation.instrumented_passes += 1;
        let (queries, pass_queries) = match (timing, sampling) {
            (TimingMode::Pass, _) if desc.timestamp_writes.is_none() => {
                match self.take_queries(&mut st, 2) {
                    Some((set, q)) => (
                        Some(set),
                        Some(Queries {
                            start: q,
                            end: q + 1,
                        }),
                    ),
                    None => (None, None),
                }
            }
            (TimingMode::Dispatch, None) => match self.take_queries(&mut st, 1) {
                Some((set, q)) => (Some(set), Some(Queries { start: q, end: q })),
                None => (None, None),
            },
            // Sampled: slots are taken per sampled dispatch.
            (TimingMode::Dispatch, Some(_)) => (None, None),
            _ => (None, None),
        };
        let first_dispatch = st
            .open
            .then(|| st.live.back().map(|s| s.dispatches.len() as u32))
            .flatten()
            .unwrap_or(0);
        drop(st);
        self.shared.totals.add(field::PASSES, 1);
        let timestamp_writes = match (timing, &queries, pass_queries) {
            (TimingMode::Pass, Some(set), Some(q)) => Some(wgpu::ComputePassTimestampWrites {
                query_set: set,
                beginning_of_pass_write_index: Some(q.start),
                end_of_pass_write_index: Some(q.end),
            }),
            _ => desc.timestamp_writes.clone(),
        };
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: desc.label,
            timestamp_writes,
        });
        let mut last_query = None;
        if let (TimingMode::Dispatch, Some(set), Some(q)) = (timing, &queries, pass_queries) {
            pass.write_timestamp(set, q.start);
            last_query = Some(q.start);
        }
        RecordingPass {
            rec: self,
            pass,
            step,
            timing,
            sampling,
            queries,
            last_query,
            pass_queries,
            name,
            first_dispatch,
            dispatches: 0,
            pipeline: UNSET,
            groups: [UNSET; MAX_BIND_GROUPS],
            info: DispatchInfo::default(),
            encode_start: None,
        }
    }

    /// `encoder.begin_compute_pass(desc)` left plain: the pass runs as the program
    /// wrote it and the profile counts it as un-instrumented (its dispatches are not
    /// seen), so the report says the program was partially instrumented.
    pub fn begin_plain_compute_pass<'e>(
        &self,
        encoder: &'e mut wgpu::CommandEncoder,
        desc: &wgpu::ComputePassDescriptor<'_>,
    ) -> wgpu::ComputePass<'e> {
        self.state().instrumentation.uninstrumented_passes += 1;
        encoder.begin_compute_pass(desc)
    }
}

impl<'e> RecordingPass<'e> {
    fn started(&mut self) {
        self.encode_start.get_or_insert_with(Instant::now);
    }

    /// `pass.set_pipeline`.
    pub fn set_pipeline(&mut self, pipeline: &wgpu::ComputePipeline) {
        self.started();
        self.pass.set_pipeline(pipeline);
        let mut st = self.rec.state();
        self.pipeline = match st.registry.pipeline_index.get(pipeline) {
            Some(&i) => i,
            None => {
                misuse(
                    &mut st,
                    "a compute pipeline that was not created through this recorder (or registered \
                     with it) was set: create it with Recorder::create_compute_pipeline or \
                     register_compute_pipeline",
                );
                UNSET
            }
        };
    }

    /// `pass.set_bind_group`. A bind group the recorder never saw (made with plain wgpu
    /// and not registered, or from another device) is reported by
    /// [`Recorder::finish`]; the dispatch still runs.
    pub fn set_bind_group(
        &mut self,
        index: u32,
        bind_group: &wgpu::BindGroup,
        offsets: &[wgpu::DynamicOffset],
    ) {
        self.started();
        self.pass.set_bind_group(index, bind_group, offsets);
        let mut st = self.rec.state();
        let known = st.registry.bind_group_index.get(bind_group).copied();
        let slot = self.groups.get_mut(index as usize);
        match (known, slot) {
            (Some(i), Some(slot)) => *slot = i,
            (None, _) => misuse(
                &mut st,
                "a bind group that was not created through this recorder was set (made with plain \
                 wgpu, or on another device): create it with Recorder::create_bind_group or \
                 register_bind_group",
            ),
            (Some(_), None) => misuse(
                &mut st,
                "a bind group index beyond the recorder's limit of 4 groups was set",
            ),
        }
        if !offsets.is_empty() {
            let note = "dynamic offsets were used: hazards and captures treat each bind group \
                        as bound at offset 0"
                .to_string();
            if !st.notes.contains(&note) {
                st.notes.push(note);
            }
        }
    }

    /// Describes the next dispatch (op, label, layer, declared cost); it applies to one
    /// dispatch and is then cleared.
    pub fn set_dispatch_info(&mut self, info: DispatchInfo) {
        self.started();
        self.info = info;
    }

    /// Labels the next dispatch by strings (interned; no allocation after the first
    /// time a string is seen).
    pub fn describe(&mut self, op: &str, label: &str, layer: Option<u32>, cost: Cost) {
        self.started();
        let mut st = self.rec.state();
        self.info = DispatchInfo {
            op: Some(st.names.intern(op)),
            label: Some(st.names.intern(label)),
            layer,
            cost,
        };
    }

    /// `pass.dispatch_workgroups`.
    pub fn dispatch_workgroups(&mut self, x: u32, y: u32, z: u32) {
        self.dispatch(|pass| pass.dispatch_workgroups(x, y, z), [x, y, z], false);
    }

    /// `pass.dispatch_workgroups_indirect`; the workgroup count is on the GPU, so the
    /// profile shows it as `[0, 0, 0]`.
    pub fn dispatch_workgroups_indirect(
        &mut self,
        indirect_buffer: &wgpu::Buffer,
        indirect_offset: u64,
    ) {
        self.dispatch(
            |pass| pass.dispatch_workgroups_indirect(indirect_buffer, indirect_offset),
            [0, 0, 0],
            true,
        );
    }

    fn dispatch(
        &mut self,
        run: impl FnOnce(&mut wgpu::ComputePass<'e>),
        workgroups: [u32; 3],
        indirect: bool,
    ) {
        self.started();
        let mut st = self.rec.state();
        let queries = self.encode_timed(&mut st, run);
        let Some(_step) = self.step else {
            st.instrumentation.dispatches_outside_steps += 1;
            misuse(
                &mut st,
                "a dispatch was encoded while no step was open: wrap the work in \
                 Recorder::begin_step / end_step",
            );
            self.rec.shared.totals.add(field::DISPATCHES, 1);
            self.info = DispatchInfo::default();
            self.encode_start = None;
            return;
        };
        let barrier = self.needs_barrier(&mut st);
        let default_op = (self.pipeline != UNSET)
            .then(|| st.registry.pipelines[self.pipeline as usize].default_op);
        let op = self
            .info
            .op
            .or(default_op)
            .unwrap_or_else(|| st.names.intern("dispatch"));
        let rec = DispatchRec {
            pass: 0,
            pipeline: self.pipeline,
            groups: self.groups,
            workgroups,
            indirect,
            op,
            label: self.info.label.unwrap_or(op),
            layer: self.info.layer,
            cost: self.info.cost,
            cpu_encode_ns: self
                .encode_start
                .take()
                .map(|t| t.elapsed().as_nanos() as u64)
                .unwrap_or(0),
            queries,
        };
        let passes_in_step = st.live.back().map(|s| s.passes.len() as u32).unwrap_or(0);
        let s = st.live.back_mut().expect("a step is open");
        s.dispatches.push(DispatchRec {
            pass: passes_in_step,
            ..rec
        });
        s.counters.dispatches += 1;
        if barrier {
            s.counters.barriers += 1;
        }
        drop(st);
        self.rec.shared.totals.add(field::DISPATCHES, 1);
        if barrier {
            self.rec.shared.totals.add(field::BARRIERS, 1);
        }
        self.dispatches += 1;
        self.info = DispatchInfo::default();
    }

    /// Encodes the dispatch itself, with its timestamps (sampled or every dispatch) and
    /// its debug group; returns the queries that time it.
    fn encode_timed(
        &mut self,
        st: &mut State,
        run: impl FnOnce(&mut wgpu::ComputePass<'e>),
    ) -> Option<Queries> {
        let index_in_step = self.first_dispatch + self.dispatches;
        let sampled = match (self.timing, self.sampling, self.step) {
            (TimingMode::Dispatch, Some(stride), Some(step)) => {
                gpuscope_trace::Sampling { stride }.is_timed(step, index_in_step)
            }
            _ => false,
        };
        let mut queries = None;
        if sampled {
            if let Some((set, q)) = self.rec.take_queries(st, 2) {
                self.pass.write_timestamp(&set, q);
                queries = Some(Queries {
                    start: q,
                    end: q + 1,
                });
                self.queries = Some(set);
            }
        }
        let marker = debug_markers()
            .then(|| self.info.label.or(self.info.op))
            .flatten()
            .map(|n| st.names.get(n).to_string());
        if let Some(m) = &marker {
            self.pass.push_debug_group(m);
        }
        run(&mut self.pass);
        if marker.is_some() {
            self.pass.pop_debug_group();
        }
        if sampled {
            if let (Some(set), Some(q)) = (&self.queries, queries) {
                self.pass.write_timestamp(set, q.end);
            }
        } else if let (TimingMode::Dispatch, Some(set), Some(prev)) =
            (self.timing, &self.queries, self.last_query)
        {
            // A timestamp after each dispatch; the previous one (or the pass start)
            // begins its span.
            match self.rec.take_queries(st, 1) {
                Some((_, q)) => {
                    self.pass.write_timestamp(set, q);
                    queries = Some(Queries {
                        start: prev,
                        end: q,
                    });
                    self.last_query = Some(q);
                }
                None => self.last_query = None,
            }
        }
        queries
    }

    /// Whether the bound buffers' accesses in the pipeline's shader need a barrier
    /// after the work before.
    fn needs_barrier(&self, st: &mut State) -> bool {
        if self.pipeline == UNSET {
            return false;
        }
        // Shared lists from the registry's cache: no allocation per dispatch.
        let (pipeline, groups) = (self.pipeline, self.groups);
        let bound: [Option<std::sync::Arc<[BufferAccess]>>; MAX_BIND_GROUPS] =
            std::array::from_fn(|g| {
                (groups[g] != UNSET).then(|| st.registry.accesses(pipeline, g as u32, groups[g]))
            });
        st.hazards
            .dispatch(bound.iter().flatten().flat_map(|l| l.iter()))
    }

    /// The wrapped pass, for calls the wrapper does not mirror (debug markers, push
    /// constants). Work encoded through it is not seen by the recorder.
    pub fn raw(&mut self) -> &mut wgpu::ComputePass<'e> {
        &mut self.pass
    }

    pub fn insert_debug_marker(&mut self, label: &str) {
        self.pass.insert_debug_marker(label);
    }
    pub fn push_debug_group(&mut self, label: &str) {
        self.pass.push_debug_group(label);
    }
    pub fn pop_debug_group(&mut self) {
        self.pass.pop_debug_group();
    }
}

impl Drop for RecordingPass<'_> {
    fn drop(&mut self) {
        let mut st = self.rec.state();
        let Some(step) = self.step else { return };
        let layer = {
            let Some(s) = st.live.back() else { return };
            if s.id != step {
                return;
            }
            // The pass's layer: the one all its dispatches share, if they do.
            let mut ds = s.dispatches[self.first_dispatch as usize..]
                .iter()
                .map(|d| d.layer);
            let first = ds.next().flatten();
            if ds.all(|l| l == first) {
                first
            } else {
                None
            }
        };
        let queries = match (self.timing, self.pass_queries, self.last_query) {
            (TimingMode::Pass, q, _) => q,
            (TimingMode::Dispatch, Some(q), Some(last)) if self.sampling.is_none() => {
                Some(Queries {
                    start: q.start,
                    end: last,
                })
            }
            _ => None,
        };
        let s = st.live.back_mut().expect("checked");
        s.passes.push(PassRec {
            name: self.name,
            layer,
            first_dispatch: self.first_dispatch,
            dispatches: self.dispatches,
            queries,
        });
        s.counters.passes += 1;
    }
}

pub(crate) fn misuse(st: &mut State, message: &str) {
    if !st.misuse.iter().any(|m| m == message) {
        st.misuse.push(message.to_string());
    }
}

/// Whether each described dispatch is wrapped in a debug group named by its label
/// (`GPUSCOPE_DEBUG_MARKERS=1`, which `gpuscope attach` sets): a Vulkan layer or a
/// capture tool then sees gpuscope's own names (`L3.ffn_down`). Off by default: a debug
/// group costs a string and two commands per dispatch.
pub fn debug_markers() -> bool {
    static ON: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *ON.get_or_init(|| std::env::var("GPUSCOPE_DEBUG_MARKERS").is_ok_and(|v| v == "1"))
}
