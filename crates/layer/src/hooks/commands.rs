//! Command buffers: their recording (dispatches with timestamps around them, barriers,
//! copies, debug labels) and their lifetime (pools recycled when freed).

use ash::vk;
use ash::vk::Handle;

use crate::device::{
    forget_cells, CommandBuffer, Count, Device, DeviceState, Dispatch, DispatchKind, Recording,
    Slot,
};
use crate::guard;
use crate::registry;
use gpuscope_trace::TimingMode;

/// The hook for `name`, if this module has one.
pub fn hook(name: &[u8]) -> Option<*const ()> {
    Some(match name {
        b"vkCreateCommandPool" => create_command_pool as *const (),
        b"vkAllocateCommandBuffers" => allocate_command_buffers as *const (),
        b"vkFreeCommandBuffers" => free_command_buffers as *const (),
        b"vkResetCommandPool" => reset_command_pool as *const (),
        b"vkDestroyCommandPool" => destroy_command_pool as *const (),
        b"vkBeginCommandBuffer" => begin_command_buffer as *const (),
        b"vkEndCommandBuffer" => end_command_buffer as *const (),
        b"vkResetCommandBuffer" => reset_command_buffer as *const (),
        b"vkCmdBindPipeline" => cmd_bind_pipeline as *const (),
        b"vkCmdDispatch" => cmd_dispatch as *const (),
        b"vkCmdDispatchIndirect" => cmd_dispatch_indirect as *const (),
        b"vkCmdDispatchBase" | b"vkCmdDispatchBaseKHR" => cmd_dispatch_base as *const (),
        b"vkCmdPipelineBarrier" => cmd_pipeline_barrier as *const (),
        b"vkCmdPipelineBarrier2" | b"vkCmdPipelineBarrier2KHR" => {
            cmd_pipeline_barrier2 as *const ()
        }
        b"vkCmdCopyBuffer" => cmd_copy_buffer as *const (),
        b"vkCmdCopyBuffer2" | b"vkCmdCopyBuffer2KHR" => cmd_copy_buffer2 as *const (),
        b"vkCmdFillBuffer" => cmd_fill_buffer as *const (),
        b"vkCmdUpdateBuffer" => cmd_update_buffer as *const (),
        b"vkCmdExecuteCommands" => cmd_execute_commands as *const (),
        b"vkCmdBeginDebugUtilsLabelEXT" => cmd_begin_label as *const (),
        b"vkCmdEndDebugUtilsLabelEXT" => cmd_end_label as *const (),
        _ => return None,
    })
}

/// The device of a command buffer and its next function, or return `$none` (a handle
/// the layer never saw: nothing can be called).
macro_rules! next_or {
    ($handle:expr, $f:ident) => {{
        let Some(d) = registry::device($handle.as_raw()) else {
            return;
        };
        let Some(next) = d.fns.$f else {
            return;
        };
        (d, next)
    }};
    ($handle:expr, $f:ident, $none:expr) => {{
        let Some(d) = registry::device($handle.as_raw()) else {
            return $none;
        };
        let Some(next) = d.fns.$f else {
            return $none;
        };
        (d, next)
    }};
}

unsafe extern "system" fn create_command_pool(
    device: vk::Device,
    info: *const vk::CommandPoolCreateInfo,
    allocator: *const vk::AllocationCallbacks,
    out: *mut vk::CommandPool,
) -> vk::Result {
    let (d, next) = next_or!(
        device,
        create_command_pool,
        vk::Result::ERROR_INITIALIZATION_FAILED
    );
    let r = next(device, info, allocator, out);
    if r == vk::Result::SUCCESS {
        guard("vkCreateCommandPool", || {
            d.lock()
                .pool_family
                .insert((*out).as_raw(), (*info).queue_family_index)
        });
    }
    r
}

unsafe extern "system" fn allocate_command_buffers(
    device: vk::Device,
    info: *const vk::CommandBufferAllocateInfo,
    out: *mut vk::CommandBuffer,
) -> vk::Result {
    let (d, next) = next_or!(
        device,
        allocate_command_buffers,
        vk::Result::ERROR_INITIALIZATION_FAILED
    );
    let r = next(device, info, out);
    if r == vk::Result::SUCCESS {
        guard("vkAllocateCommandBuffers", || {
            let info = &*info;
            let mut st = d.lock();
            for i in 0..info.command_buffer_count as usize {
                st.command_buffers.insert(
                    (*out.add(i)).as_raw(),
                    CommandBuffer {
                        pool: info.command_pool.as_raw(),
                        secondary: info.level == vk::CommandBufferLevel::SECONDARY,
                        ..Default::default()
                    },
                );
            }
        });
    }
    r
}

/// Reads the timestamps of every pending execution of the command buffers `which`
/// selects before they are re-recorded or freed (the program may only do either once
/// the GPU is done with them), then releases their pools when `free`.
unsafe fn settle(
    d: &Device,
    st: &mut DeviceState,
    which: impl Fn(u64, &CommandBuffer) -> bool,
    free: bool,
) {
    let chosen: Vec<u64> = st
        .command_buffers
        .iter()
        .filter(|(&h, c)| which(h, c))
        .map(|(&h, _)| h)
        .collect();
    for q in st.queues.values_mut() {
        let family = q.family;
        for e in q.pending.iter_mut().flat_map(|s| s.executions.iter_mut()) {
            if chosen.contains(&e.command_buffer) {
                d.read_ticks(e, family);
            }
        }
    }
    if free {
        // Before their cells go: no thread may use a cached one from here on.
        forget_cells();
        for h in chosen {
            if let Some(c) = st.command_buffers.remove(&h) {
                st.spare_pools.extend(c.query_pools);
            }
        }
    }
}

unsafe extern "system" fn free_command_buffers(
    device: vk::Device,
    pool: vk::CommandPool,
    n: u32,
    cbs: *const vk::CommandBuffer,
) {
    let (d, next) = next_or!(device, free_command_buffers);
    guard("vkFreeCommandBuffers", || {
        let handles: Vec<u64> = (0..n as usize).map(|i| (*cbs.add(i)).as_raw()).collect();
        let mut st = d.lock();
        settle(d, &mut st, |h, _| handles.contains(&h), true);
    });
    next(device, pool, n, cbs);
}

unsafe extern "system" fn reset_command_pool(
    device: vk::Device,
    pool: vk::CommandPool,
    flags: vk::CommandPoolResetFlags,
) -> vk::Result {
    let (d, next) = next_or!(device, reset_command_pool, vk::Result::ERROR_DEVICE_LOST);
    guard("vkResetCommandPool", || {
        let mut st = d.lock();
        settle(d, &mut st, |_, c| c.pool == pool.as_raw(), false);
    });
    next(device, pool, flags)
}

unsafe extern "system" fn destroy_command_pool(
    device: vk::Device,
    pool: vk::CommandPool,
    allocator: *const vk::AllocationCallbacks,
) {
    let (d, next) = next_or!(device, destroy_command_pool);
    guard("vkDestroyCommandPool", || {
        let mut st = d.lock();
        settle(d, &mut st, |_, c| c.pool == pool.as_raw(), true);
        st.pool_family.remove(&pool.as_raw());
    });
    next(device, pool, allocator);
}

unsafe extern "system" fn reset_command_buffer(
    cb: vk::CommandBuffer,
    flags: vk::CommandBufferResetFlags,
) -> vk::Result {
    let (d, next) = next_or!(cb, reset_command_buffer, vk::Result::ERROR_DEVICE_LOST);
    guard("vkResetCommandBuffer", || {
        let mut st = d.lock();
        settle(d, &mut st, |h, _| h == cb.as_raw(), false);
    });
    next(cb, flags)
}

/// Whether `cb`'s queue family writes timestamps.
fn timestamps_in(d: &Device, st: &DeviceState, cb: vk::CommandBuffer) -> bool {
    st.command_buffers
        .get(&cb.as_raw())
        .filter(|c| !c.secondary)
        .and_then(|c| st.pool_family.get(&c.pool))
        .and_then(|&f| d.family_timestamp_mask.get(f as usize))
        .is_some_and(|&m| m != 0)
}

unsafe extern "system" fn begin_command_buffer(
    cb: vk::CommandBuffer,
    info: *const vk::CommandBufferBeginInfo,
) -> vk::Result {
    let (d, next) = next_or!(cb, begin_command_buffer, vk::Result::ERROR_DEVICE_LOST);
    guard("vkBeginCommandBuffer", || {
        let mut st = d.lock();
        settle(d, &mut st, |h, _| h == cb.as_raw(), false);
        // Its last results are read: its pools are free for this recording.
        if let Some(c) = st.command_buffers.get(&cb.as_raw()) {
            d.host_reset_pools(&c.query_pools);
        }
    });
    let r = next(cb, info);
    if r == vk::Result::SUCCESS {
        guard("vkBeginCommandBuffer", || {
            let mut st = d.lock();
            let timed = timestamps_in(d, &st, cb);
            let Some(c) = st.command_buffers.get_mut(&cb.as_raw()) else {
                return;
            };
            // Room for as many dispatches as its last recording had: a buffer is
            // mostly re-recorded with the same work, and growing the list as it
            // fills cost more than the rest of a dispatch's bookkeeping.
            let (room, text) = c
                .last
                .as_ref()
                .map_or((0, 0), |r| (r.dispatches.len(), r.label_text.len()));
            let cell = c.recording.clone();
            let rec = cell.get().insert(Recording {
                dispatches: Vec::with_capacity(room),
                label_text: Vec::with_capacity(text),
                ..Recording::default()
            });
            if d.timing == TimingMode::Pass && timed {
                if let Some(first) = d.timestamp(&mut st, cb, rec) {
                    rec.bounds = Some((first, first));
                }
            }
        });
    }
    r
}

unsafe extern "system" fn end_command_buffer(cb: vk::CommandBuffer) -> vk::Result {
    let (d, next) = next_or!(cb, end_command_buffer, vk::Result::ERROR_DEVICE_LOST);
    guard("vkEndCommandBuffer", || {
        let mut st = d.lock();
        let Some(cell) = st
            .command_buffers
            .get(&cb.as_raw())
            .map(|c| c.recording.clone())
        else {
            return;
        };
        let Some(mut rec) = cell.get().take() else {
            return;
        };
        if let Some((first, _)) = rec.bounds {
            if let Some(last) = d.timestamp(&mut st, cb, &mut rec) {
                rec.bounds = Some((first, last));
            }
        }
        rec.resolve_pipelines(&st.pipelines);
        if let Some(c) = st.command_buffers.get_mut(&cb.as_raw()) {
            rec.query_pools = c.query_pools.clone();
            rec.labels.clear();
            c.last = Some(std::sync::Arc::new(rec));
        }
    });
    next(cb)
}

unsafe extern "system" fn cmd_bind_pipeline(
    cb: vk::CommandBuffer,
    bind_point: vk::PipelineBindPoint,
    pipeline: vk::Pipeline,
) {
    let (d, next) = next_or!(cb, cmd_bind_pipeline);
    if bind_point == vk::PipelineBindPoint::COMPUTE {
        guard("vkCmdBindPipeline", || {
            d.with_recording(cb, |rec| rec.pipeline = Some(pipeline.as_raw()))
        });
    }
    next(cb, bind_point, pipeline);
}

/// Around one dispatch: its record, and when it is timed, its span's two timestamps.
///
/// A timed dispatch's span begins where the previous dispatch of its command buffer
/// ended, as in gpuscope's own timing (a pass's timestamps, or one timestamp a dispatch
/// chained), so that the barrier, the bindings and the launch before a dispatch count
/// as its own, the same in both engines' profiles (`diff --by family` compares them):
/// when the next dispatch is to be timed, a timestamp is written just after this one
/// (this one's closing timestamp, if it was timed). A next dispatch that lands in
/// another command buffer writes its own just before it.
unsafe fn dispatch(
    cb: vk::CommandBuffer,
    kind: DispatchKind,
    workgroups: [u32; 3],
    call: impl FnOnce(&Device),
) {
    let Some(d) = registry::device(cb.as_raw()) else {
        return;
    };
    // Untimed (most dispatches when sampling), the record is made with no lock; a
    // timed one takes the device lock for its query pool.
    let before = guard("vkCmdDispatch", || {
        let n = d
            .dispatches_recorded
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        crate::fault_check(n + 1);
        // The cell before the lock: finding it may take the lock itself.
        let rec = d.recording_cell(cb)?.get().as_mut()?;
        let pending = rec.pending_before.take();
        if d.times(n) {
            let mut st = d.lock();
            if timestamps_in(d, &st, cb) {
                if let Some(slot) = pending.or_else(|| d.timestamp(&mut st, cb, rec)) {
                    return Some((n, Some(slot)));
                }
            }
        }
        push_dispatch(rec, kind, workgroups, None);
        Some((n, None))
    })
    .flatten();
    call(d);
    let Some((n, before)) = before else {
        return;
    };
    let next_timed = d.times(n + 1);
    if before.is_some() || next_timed {
        guard("vkCmdDispatch", || {
            let Some(rec) = d.recording_cell(cb).and_then(|c| c.get().as_mut()) else {
                return;
            };
            let mut st = d.lock();
            if !timestamps_in(d, &st, cb) {
                return;
            }
            let after = d.timestamp(&mut st, cb, rec);
            if let Some(b) = before {
                push_dispatch(rec, kind, workgroups, after.map(|a| (b, a)));
            }
            if next_timed {
                rec.pending_before = after;
            }
        });
    }
}

/// The dispatch's record, named by the labels open around it.
fn push_dispatch(
    rec: &mut Recording,
    kind: DispatchKind,
    workgroups: [u32; 3],
    slots: Option<(Slot, Slot)>,
) {
    if let Some(pipeline_handle) = rec.pipeline {
        let n = rec.labels.len();
        rec.dispatches.push(Dispatch {
            pipeline_handle,
            pipeline: 0,
            label: rec.labels.last().copied(),
            scope: n.checked_sub(2).map(|i| rec.labels[i]),
            workgroups,
            kind,
            slots,
        });
    }
}

unsafe extern "system" fn cmd_dispatch(cb: vk::CommandBuffer, x: u32, y: u32, z: u32) {
    dispatch(cb, DispatchKind::Direct, [x, y, z], |d| {
        if let Some(next) = d.fns.cmd_dispatch {
            next(cb, x, y, z)
        }
    });
}

unsafe extern "system" fn cmd_dispatch_indirect(
    cb: vk::CommandBuffer,
    buffer: vk::Buffer,
    offset: vk::DeviceSize,
) {
    dispatch(cb, DispatchKind::Indirect, [0, 0, 0], |d| {
        if let Some(next) = d.fns.cmd_dispatch_indirect {
            next(cb, buffer, offset)
        }
    });
}

#[allow(clippy::too_many_arguments)] // Vulkan's signature.
unsafe extern "system" fn cmd_dispatch_base(
    cb: vk::CommandBuffer,
    bx: u32,
    by: u32,
    bz: u32,
    x: u32,
    y: u32,
    z: u32,
) {
    dispatch(cb, DispatchKind::Base, [x, y, z], |d| {
        if let Some(next) = d.fns.cmd_dispatch_base {
            next(cb, bx, by, bz, x, y, z)
        }
    });
}

#[allow(clippy::too_many_arguments)] // Vulkan's signature.
unsafe extern "system" fn cmd_pipeline_barrier(
    cb: vk::CommandBuffer,
    src: vk::PipelineStageFlags,
    dst: vk::PipelineStageFlags,
    deps: vk::DependencyFlags,
    n_memory: u32,
    memory: *const vk::MemoryBarrier,
    n_buffer: u32,
    buffer: *const vk::BufferMemoryBarrier,
    n_image: u32,
    image: *const vk::ImageMemoryBarrier,
) {
    let (d, next) = next_or!(cb, cmd_pipeline_barrier);
    guard("vkCmdPipelineBarrier", || {
        d.with_recording(cb, |rec| count_barrier(rec, n_memory, n_buffer, n_image))
    });
    next(
        cb, src, dst, deps, n_memory, memory, n_buffer, buffer, n_image, image,
    );
}

fn count_barrier(rec: &mut Recording, memory: u32, buffer: u32, image: u32) {
    rec.counts.add(Count::Barriers, 1);
    rec.counts.add(Count::MemoryBarriers, u64::from(memory));
    rec.counts.add(Count::BufferBarriers, u64::from(buffer));
    rec.counts.add(Count::ImageBarriers, u64::from(image));
}

unsafe extern "system" fn cmd_pipeline_barrier2(
    cb: vk::CommandBuffer,
    info: *const vk::DependencyInfo,
) {
    let (d, next) = next_or!(cb, cmd_pipeline_barrier2);
    guard("vkCmdPipelineBarrier2", || {
        let i = &*info;
        d.with_recording(cb, |rec| {
            count_barrier(
                rec,
                i.memory_barrier_count,
                i.buffer_memory_barrier_count,
                i.image_memory_barrier_count,
            )
        })
    });
    next(cb, info);
}

unsafe extern "system" fn cmd_copy_buffer(
    cb: vk::CommandBuffer,
    src: vk::Buffer,
    dst: vk::Buffer,
    n: u32,
    regions: *const vk::BufferCopy,
) {
    let (d, next) = next_or!(cb, cmd_copy_buffer);
    guard("vkCmdCopyBuffer", || {
        let bytes: u64 = (0..n as usize).map(|i| (*regions.add(i)).size).sum();
        d.with_recording(cb, |rec| {
            rec.counts.add(Count::Copies, u64::from(n));
            rec.counts.add(Count::CopyBytes, bytes);
        })
    });
    next(cb, src, dst, n, regions);
}

unsafe extern "system" fn cmd_copy_buffer2(
    cb: vk::CommandBuffer,
    info: *const vk::CopyBufferInfo2,
) {
    let (d, next) = next_or!(cb, cmd_copy_buffer2);
    guard("vkCmdCopyBuffer2", || {
        let i = &*info;
        let bytes: u64 = (0..i.region_count as usize)
            .map(|k| (*i.p_regions.add(k)).size)
            .sum();
        d.with_recording(cb, |rec| {
            rec.counts.add(Count::Copies, u64::from(i.region_count));
            rec.counts.add(Count::CopyBytes, bytes);
        })
    });
    next(cb, info);
}

unsafe extern "system" fn cmd_fill_buffer(
    cb: vk::CommandBuffer,
    dst: vk::Buffer,
    offset: vk::DeviceSize,
    size: vk::DeviceSize,
    data: u32,
) {
    let (d, next) = next_or!(cb, cmd_fill_buffer);
    guard("vkCmdFillBuffer", || {
        d.with_recording(cb, |rec| {
            rec.counts.add(Count::Fills, 1);
            // VK_WHOLE_SIZE: the buffer's rest, not known here.
            if size != vk::WHOLE_SIZE {
                rec.counts.add(Count::FillBytes, size);
            }
        })
    });
    next(cb, dst, offset, size, data);
}

unsafe extern "system" fn cmd_update_buffer(
    cb: vk::CommandBuffer,
    dst: vk::Buffer,
    offset: vk::DeviceSize,
    size: vk::DeviceSize,
    data: *const std::ffi::c_void,
) {
    let (d, next) = next_or!(cb, cmd_update_buffer);
    guard("vkCmdUpdateBuffer", || {
        d.with_recording(cb, |rec| {
            rec.counts.add(Count::Updates, 1);
            rec.counts.add(Count::UpdateBytes, size);
        })
    });
    next(cb, dst, offset, size, data);
}

/// Secondary command buffers: their dispatches join the primary's record, untimed
/// (their timestamps would sit in the secondary's pools).
unsafe extern "system" fn cmd_execute_commands(
    cb: vk::CommandBuffer,
    n: u32,
    secondaries: *const vk::CommandBuffer,
) {
    let (d, next) = next_or!(cb, cmd_execute_commands);
    guard("vkCmdExecuteCommands", || {
        let st = d.lock();
        let recorded: Vec<_> = (0..n as usize)
            .filter_map(|i| {
                st.command_buffers
                    .get(&(*secondaries.add(i)).as_raw())
                    .and_then(|c| c.last.clone())
            })
            .collect();
        drop(st);
        d.with_recording(cb, |rec| {
            for last in &recorded {
                rec.append_untimed(last);
            }
        });
    });
    next(cb, n, secondaries);
}

unsafe extern "system" fn cmd_begin_label(
    cb: vk::CommandBuffer,
    label: *const vk::DebugUtilsLabelEXT,
) {
    let Some(d) = registry::device(cb.as_raw()) else {
        return;
    };
    guard("vkCmdBeginDebugUtilsLabelEXT", || {
        let bytes = (*label)
            .label_name_as_c_str()
            .map_or(&[][..], |n| n.to_bytes());
        d.with_recording(cb, |rec| rec.open_label(bytes));
    });
    if let (false, Some(next)) = (d.stop_labels, d.fns.cmd_begin_debug_utils_label) {
        next(cb, label);
    }
}

unsafe extern "system" fn cmd_end_label(cb: vk::CommandBuffer) {
    let Some(d) = registry::device(cb.as_raw()) else {
        return;
    };
    guard("vkCmdEndDebugUtilsLabelEXT", || {
        d.with_recording(cb, |rec| {
            rec.labels.pop();
        })
    });
    if let (false, Some(next)) = (d.stop_labels, d.fns.cmd_end_debug_utils_label) {
        next(cb);
    }
}
