//! The next layer's (or the driver's) functions, looked up once per instance and device.
//! Every entry is optional: a function the driver lacks is `None`, and the layer then
//! neither calls nor exposes it (the debug-utils naming functions excepted: the layer
//! implements them when the driver has none).

use std::ffi::c_char;

use ash::vk;

/// Looks up `names` in turn (core name first, then its KHR/EXT alias) with `get`.
///
/// # Safety
/// `get` must be a valid `vkGet*ProcAddr` for `handle`, and `F` the function pointer
/// type of the names.
pub unsafe fn lookup<H: Copy, F: Copy>(
    get: unsafe extern "system" fn(H, *const c_char) -> vk::PFN_vkVoidFunction,
    handle: H,
    names: &[&[u8]],
) -> Option<F> {
    debug_assert_eq!(
        std::mem::size_of::<F>(),
        std::mem::size_of::<unsafe extern "system" fn()>()
    );
    names.iter().find_map(|name| {
        debug_assert_eq!(name.last(), Some(&0));
        get(handle, name.as_ptr().cast()).map(|f| std::mem::transmute_copy::<_, F>(&f))
    })
}

macro_rules! fn_table {
    ($(#[$doc:meta])* $table:ident for $handle:ty { $($field:ident: $pfn:ident = [$($name:literal),+];)* }) => {
        $(#[$doc])*
        #[derive(Clone, Copy)]
        pub struct $table {
            $(pub $field: Option<vk::$pfn>,)*
        }

        impl $table {
            /// # Safety
            /// `get` must be the next layer's `vkGet*ProcAddr` for `handle`.
            pub unsafe fn load(
                get: unsafe extern "system" fn($handle, *const c_char) -> vk::PFN_vkVoidFunction,
                handle: $handle,
            ) -> Self {
                Self {
                    $($field: lookup(get, handle, &[$(concat!($name, "\0").as_bytes()),+]),)*
                }
            }
        }
    };
}

fn_table! {
    /// Instance-level functions of the next layer.
    InstanceFns for vk::Instance {
        destroy_instance: PFN_vkDestroyInstance = ["vkDestroyInstance"];
        get_physical_device_properties: PFN_vkGetPhysicalDeviceProperties = ["vkGetPhysicalDeviceProperties"];
        get_physical_device_properties2: PFN_vkGetPhysicalDeviceProperties2 = ["vkGetPhysicalDeviceProperties2", "vkGetPhysicalDeviceProperties2KHR"];
        get_physical_device_queue_family_properties: PFN_vkGetPhysicalDeviceQueueFamilyProperties = ["vkGetPhysicalDeviceQueueFamilyProperties"];
        get_physical_device_memory_properties: PFN_vkGetPhysicalDeviceMemoryProperties = ["vkGetPhysicalDeviceMemoryProperties"];
    }
}

fn_table! {
    /// Device-level functions of the next layer.
    DeviceFns for vk::Device {
        destroy_device: PFN_vkDestroyDevice = ["vkDestroyDevice"];
        get_device_queue: PFN_vkGetDeviceQueue = ["vkGetDeviceQueue"];
        get_device_queue2: PFN_vkGetDeviceQueue2 = ["vkGetDeviceQueue2"];
        queue_submit: PFN_vkQueueSubmit = ["vkQueueSubmit"];
        queue_submit2: PFN_vkQueueSubmit2 = ["vkQueueSubmit2", "vkQueueSubmit2KHR"];
        queue_wait_idle: PFN_vkQueueWaitIdle = ["vkQueueWaitIdle"];
        device_wait_idle: PFN_vkDeviceWaitIdle = ["vkDeviceWaitIdle"];
        wait_for_fences: PFN_vkWaitForFences = ["vkWaitForFences"];
        get_fence_status: PFN_vkGetFenceStatus = ["vkGetFenceStatus"];
        wait_semaphores: PFN_vkWaitSemaphores = ["vkWaitSemaphores", "vkWaitSemaphoresKHR"];
        create_shader_module: PFN_vkCreateShaderModule = ["vkCreateShaderModule"];
        create_compute_pipelines: PFN_vkCreateComputePipelines = ["vkCreateComputePipelines"];
        allocate_command_buffers: PFN_vkAllocateCommandBuffers = ["vkAllocateCommandBuffers"];
        free_command_buffers: PFN_vkFreeCommandBuffers = ["vkFreeCommandBuffers"];
        begin_command_buffer: PFN_vkBeginCommandBuffer = ["vkBeginCommandBuffer"];
        end_command_buffer: PFN_vkEndCommandBuffer = ["vkEndCommandBuffer"];
        reset_command_buffer: PFN_vkResetCommandBuffer = ["vkResetCommandBuffer"];
        create_command_pool: PFN_vkCreateCommandPool = ["vkCreateCommandPool"];
        reset_command_pool: PFN_vkResetCommandPool = ["vkResetCommandPool"];
        destroy_command_pool: PFN_vkDestroyCommandPool = ["vkDestroyCommandPool"];
        cmd_bind_pipeline: PFN_vkCmdBindPipeline = ["vkCmdBindPipeline"];
        cmd_dispatch: PFN_vkCmdDispatch = ["vkCmdDispatch"];
        cmd_dispatch_indirect: PFN_vkCmdDispatchIndirect = ["vkCmdDispatchIndirect"];
        cmd_dispatch_base: PFN_vkCmdDispatchBase = ["vkCmdDispatchBase", "vkCmdDispatchBaseKHR"];
        cmd_pipeline_barrier: PFN_vkCmdPipelineBarrier = ["vkCmdPipelineBarrier"];
        cmd_pipeline_barrier2: PFN_vkCmdPipelineBarrier2 = ["vkCmdPipelineBarrier2", "vkCmdPipelineBarrier2KHR"];
        cmd_copy_buffer: PFN_vkCmdCopyBuffer = ["vkCmdCopyBuffer"];
        cmd_copy_buffer2: PFN_vkCmdCopyBuffer2 = ["vkCmdCopyBuffer2", "vkCmdCopyBuffer2KHR"];
        cmd_fill_buffer: PFN_vkCmdFillBuffer = ["vkCmdFillBuffer"];
        cmd_update_buffer: PFN_vkCmdUpdateBuffer = ["vkCmdUpdateBuffer"];
        cmd_execute_commands: PFN_vkCmdExecuteCommands = ["vkCmdExecuteCommands"];
        create_buffer: PFN_vkCreateBuffer = ["vkCreateBuffer"];
        bind_buffer_memory: PFN_vkBindBufferMemory = ["vkBindBufferMemory"];
        allocate_memory: PFN_vkAllocateMemory = ["vkAllocateMemory"];
        free_memory: PFN_vkFreeMemory = ["vkFreeMemory"];
        update_descriptor_sets: PFN_vkUpdateDescriptorSets = ["vkUpdateDescriptorSets"];
        set_debug_utils_object_name: PFN_vkSetDebugUtilsObjectNameEXT = ["vkSetDebugUtilsObjectNameEXT"];
        cmd_begin_debug_utils_label: PFN_vkCmdBeginDebugUtilsLabelEXT = ["vkCmdBeginDebugUtilsLabelEXT"];
        cmd_end_debug_utils_label: PFN_vkCmdEndDebugUtilsLabelEXT = ["vkCmdEndDebugUtilsLabelEXT"];
        create_query_pool: PFN_vkCreateQueryPool = ["vkCreateQueryPool"];
        destroy_query_pool: PFN_vkDestroyQueryPool = ["vkDestroyQueryPool"];
        cmd_reset_query_pool: PFN_vkCmdResetQueryPool = ["vkCmdResetQueryPool"];
        reset_query_pool: PFN_vkResetQueryPool = ["vkResetQueryPool", "vkResetQueryPoolEXT"];
        cmd_write_timestamp: PFN_vkCmdWriteTimestamp = ["vkCmdWriteTimestamp"];
        get_query_pool_results: PFN_vkGetQueryPoolResults = ["vkGetQueryPoolResults"];
    }
}
