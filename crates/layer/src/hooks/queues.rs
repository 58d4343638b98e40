//! Queues, submits and host syncs: where submissions are noted and where steps close.
//!
//! A step is the work between two host syncs on a queue (a decode loop's token): a
//! fence wait or a fence poll that finds it signalled (counted once per wait, however
//! often it polled), a queue or device wait idle, a semaphore wait. A fence covers every
//! earlier submission on its queue, so a step closes through the last submission whose
//! fence signalled.

use std::collections::HashSet;

use ash::vk;
use ash::vk::Handle;
use gpuscope_trace::recording::{QueueRecord, Record, RecordedSpan};

use crate::device::{thread_id, Device, Execution, Queue, Submission};
use crate::registry;
use crate::{guard, writer};

/// The hook for `name`, if this module has one.
pub fn hook(name: &[u8]) -> Option<*const ()> {
    Some(match name {
        b"vkGetDeviceQueue" => get_device_queue as *const (),
        b"vkGetDeviceQueue2" => get_device_queue2 as *const (),
        b"vkQueueSubmit" => queue_submit as *const (),
        b"vkQueueSubmit2" | b"vkQueueSubmit2KHR" => queue_submit2 as *const (),
        b"vkQueueWaitIdle" => queue_wait_idle as *const (),
        b"vkDeviceWaitIdle" => device_wait_idle as *const (),
        b"vkWaitForFences" => wait_for_fences as *const (),
        b"vkGetFenceStatus" => get_fence_status as *const (),
        b"vkWaitSemaphores" | b"vkWaitSemaphoresKHR" => wait_semaphores as *const (),
        _ => return None,
    })
}

/// Notes a queue the first time the program gets it.
fn note_queue(d: &Device, queue: vk::Queue, family: u32, index: u32) {
    let mut st = d.lock();
    if queue == vk::Queue::null() || st.queues.contains_key(&queue.as_raw()) {
        return;
    }
    let id = writer::with(|w| {
        w.ids.queues += 1;
        w.ids.queues - 1
    })
    .unwrap_or(st.queues.len() as u32);
    st.queues.insert(
        queue.as_raw(),
        Queue {
            id,
            family,
            pending: Vec::new(),
            step_start_ns: None,
            counters: Default::default(),
            spans: Vec::new(),
        },
    );
    drop(st);
    let timestamps = d
        .family_timestamp_mask
        .get(family as usize)
        .is_some_and(|&m| m != 0);
    writer::record(Record::Queue(QueueRecord {
        id,
        device: d.id,
        family,
        index,
        name: None,
        timestamps,
    }));
}

unsafe extern "system" fn get_device_queue(
    device: vk::Device,
    family: u32,
    index: u32,
    out: *mut vk::Queue,
) {
    let Some(d) = registry::device(device.as_raw()) else {
        return;
    };
    let Some(next) = d.fns.get_device_queue else {
        return;
    };
    next(device, family, index, out);
    guard("vkGetDeviceQueue", || note_queue(d, *out, family, index));
}

unsafe extern "system" fn get_device_queue2(
    device: vk::Device,
    info: *const vk::DeviceQueueInfo2,
    out: *mut vk::Queue,
) {
    let Some(d) = registry::device(device.as_raw()) else {
        return;
    };
    let Some(next) = d.fns.get_device_queue2 else {
        return;
    };
    next(device, info, out);
    let (family, index) = ((*info).queue_family_index, (*info).queue_index);
    guard("vkGetDeviceQueue2", || note_queue(d, *out, family, index));
}

/// The executions a submit carries: each command buffer's last recording.
fn executions(d: &Device, command_buffers: &[vk::CommandBuffer]) -> Vec<Execution> {
    let st = d.lock();
    command_buffers
        .iter()
        .filter_map(|cb| {
            let c = st.command_buffers.get(&cb.as_raw())?;
            Some(Execution {
                command_buffer: cb.as_raw(),
                name: c.name.clone(),
                recording: c.last.clone()?,
                ticks: None,
            })
        })
        .collect()
}

/// Notes a submit that went through.
fn note_submit(
    d: &Device,
    queue: vk::Queue,
    fence: vk::Fence,
    executions: Vec<Execution>,
    start: u64,
) {
    let end = writer::now_ns();
    let mut st = d.lock();
    let Some(q) = st.queues.get_mut(&queue.as_raw()) else {
        return;
    };
    q.step_start_ns.get_or_insert(start);
    *q.counters.entry("submits").or_default() += 1;
    q.spans.push(RecordedSpan {
        name: "submit".into(),
        thread: thread_id(),
        start_ns: start,
        end_ns: end,
    });
    q.pending.push(Submission {
        fence,
        executions,
        cpu_ns: start,
    });
}

unsafe fn slice<'a, T>(ptr: *const T, n: u32) -> &'a [T] {
    if ptr.is_null() || n == 0 {
        &[]
    } else {
        std::slice::from_raw_parts(ptr, n as usize)
    }
}

unsafe extern "system" fn queue_submit(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo,
    fence: vk::Fence,
) -> vk::Result {
    let Some(d) = registry::device(queue.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let Some(next) = d.fns.queue_submit else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let start = writer::now_ns();
    let execs = guard("vkQueueSubmit", || {
        let cbs: Vec<vk::CommandBuffer> = slice(submits, count)
            .iter()
            .flat_map(|s| {
                slice(s.p_command_buffers, s.command_buffer_count)
                    .iter()
                    .copied()
            })
            .collect();
        executions(d, &cbs)
    });
    let r = next(queue, count, submits, fence);
    if r == vk::Result::SUCCESS {
        guard("vkQueueSubmit", || {
            note_submit(d, queue, fence, execs.unwrap_or_default(), start)
        });
    }
    r
}

unsafe extern "system" fn queue_submit2(
    queue: vk::Queue,
    count: u32,
    submits: *const vk::SubmitInfo2,
    fence: vk::Fence,
) -> vk::Result {
    let Some(d) = registry::device(queue.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let Some(next) = d.fns.queue_submit2 else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let start = writer::now_ns();
    let execs = guard("vkQueueSubmit2", || {
        let cbs: Vec<vk::CommandBuffer> = slice(submits, count)
            .iter()
            .flat_map(|s| slice(s.p_command_buffer_infos, s.command_buffer_info_count).iter())
            .map(|i| i.command_buffer)
            .collect();
        executions(d, &cbs)
    });
    let r = next(queue, count, submits, fence);
    if r == vk::Result::SUCCESS {
        guard("vkQueueSubmit2", || {
            note_submit(d, queue, fence, execs.unwrap_or_default(), start)
        });
    }
    r
}

fn wait_span(start: u64) -> RecordedSpan {
    RecordedSpan {
        name: "wait".into(),
        thread: thread_id(),
        start_ns: start,
        end_ns: writer::now_ns(),
    }
}

/// Closes, on every queue of `d`, the submissions up to the last one `covered` says
/// is complete; a wait that closed nothing still counts as a sync.
unsafe fn close_where(
    d: &Device,
    ended_by: &str,
    start: u64,
    covered: impl Fn(u64, &Queue) -> usize,
) {
    let mut st = d.lock();
    let ranges: Vec<(u64, usize)> = st
        .queues
        .iter()
        .map(|(&h, q)| (h, covered(h, q)))
        .filter(|&(_, n)| n > 0)
        .collect();
    if ranges.is_empty() {
        *st.host_counters.entry("syncs").or_default() += 1;
        return;
    }
    let mut span = Some(wait_span(start));
    for (queue, upto) in ranges {
        d.close(&mut st, queue, upto, ended_by, span.take());
    }
}

/// Submissions of `q` through the last one whose fence is in `fences`.
fn through_fences(q: &Queue, fences: &HashSet<u64>) -> usize {
    q.pending
        .iter()
        .rposition(|s| fences.contains(&s.fence.as_raw()))
        .map_or(0, |i| i + 1)
}

unsafe extern "system" fn wait_for_fences(
    device: vk::Device,
    count: u32,
    fences: *const vk::Fence,
    wait_all: vk::Bool32,
    timeout: u64,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let Some(next) = d.fns.wait_for_fences else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let start = writer::now_ns();
    let r = next(device, count, fences, wait_all, timeout);
    if r == vk::Result::SUCCESS {
        guard("vkWaitForFences", || {
            let all = slice(fences, count);
            // With "any", ask which signalled (a status query, not a wait).
            let signalled: HashSet<u64> = all
                .iter()
                .filter(|&&f| {
                    wait_all != 0
                        || count == 1
                        || d.fns
                            .get_fence_status
                            .is_some_and(|s| s(device, f) == vk::Result::SUCCESS)
                })
                .map(|f| f.as_raw())
                .collect();
            close_where(d, "vkWaitForFences", start, |_, q| {
                through_fences(q, &signalled)
            });
        });
    }
    r
}

unsafe extern "system" fn get_fence_status(device: vk::Device, fence: vk::Fence) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let Some(next) = d.fns.get_fence_status else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let start = writer::now_ns();
    let r = next(device, fence);
    if r == vk::Result::SUCCESS {
        guard("vkGetFenceStatus", || {
            // Counted once per wait: only a poll that finds a pending submission done.
            let set = HashSet::from([fence.as_raw()]);
            let st = d.lock();
            let pending = st.queues.values().any(|q| through_fences(q, &set) > 0);
            drop(st);
            if pending {
                close_where(d, "vkGetFenceStatus", start, |_, q| through_fences(q, &set));
            }
        });
    }
    r
}

unsafe extern "system" fn queue_wait_idle(queue: vk::Queue) -> vk::Result {
    let Some(d) = registry::device(queue.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let Some(next) = d.fns.queue_wait_idle else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let start = writer::now_ns();
    let r = next(queue);
    if r == vk::Result::SUCCESS {
        guard("vkQueueWaitIdle", || {
            let mut st = d.lock();
            let n = st
                .queues
                .get(&queue.as_raw())
                .map_or(0, |q| q.pending.len());
            d.close(
                &mut st,
                queue.as_raw(),
                n,
                "vkQueueWaitIdle",
                Some(wait_span(start)),
            );
        });
    }
    r
}

unsafe extern "system" fn device_wait_idle(device: vk::Device) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let Some(next) = d.fns.device_wait_idle else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let start = writer::now_ns();
    let r = next(device);
    if r == vk::Result::SUCCESS {
        guard("vkDeviceWaitIdle", || {
            close_where(d, "vkDeviceWaitIdle", start, |_, q| q.pending.len())
        });
    }
    r
}

unsafe extern "system" fn wait_semaphores(
    device: vk::Device,
    info: *const vk::SemaphoreWaitInfo,
    timeout: u64,
) -> vk::Result {
    let Some(d) = registry::device(device.as_raw()) else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let Some(next) = d.fns.wait_semaphores else {
        return vk::Result::ERROR_DEVICE_LOST;
    };
    let start = writer::now_ns();
    let r = next(device, info, timeout);
    if r == vk::Result::SUCCESS {
        // Which submissions a timeline value covers is not known here: everything
        // submitted before the wait began is taken as done (what a program waiting on
        // its last signal means; an earlier value leaves later timestamps unread, 0).
        guard("vkWaitSemaphores", || {
            close_where(d, "vkWaitSemaphores", start, |_, q| {
                q.pending.iter().filter(|s| s.cpu_ns <= start).count()
            })
        });
    }
    r
}
