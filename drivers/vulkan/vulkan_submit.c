// Queue submission: waits, command buffers (each brought up to date with its
// binding table: 1 handle, or 3 with the slot copies), signals, the device's own submit timeline, a fence.
// Devices without timeline semaphores go through vulkan_host_timeline.c.
#include <string.h>

#include "kiln/base/time.h"
#include "vulkan_internal.h"

enum { kMaxSubmitItems = 64 };

// One vkQueueSubmit with timeline semaphores: the waits and signals, plus
// the device's submit timeline at the next value.
static kiln_status_t submit_timeline(kiln_vk_device_t* device,
                                     const kiln_hal_semaphore_value_t* waits,
                                     uint32_t wait_count,
                                     const VkCommandBuffer* command_buffers,
                                     uint32_t command_buffer_count,
                                     const kiln_hal_semaphore_value_t* signals,
                                     uint32_t signal_count, VkFence fence,
                                     uint64_t* out_value) {
  VkSemaphore wait_handles[kMaxSubmitItems];
  uint64_t wait_values[kMaxSubmitItems];
  VkPipelineStageFlags wait_stages[kMaxSubmitItems];
  for (uint32_t i = 0; i < wait_count; ++i) {
    wait_handles[i] = ((kiln_vk_semaphore_t*)waits[i].semaphore)->handle;
    wait_values[i] = waits[i].value;
    wait_stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  }
  VkSemaphore signal_handles[kMaxSubmitItems];
  uint64_t signal_values[kMaxSubmitItems];
  for (uint32_t i = 0; i < signal_count; ++i) {
    signal_handles[i] = ((kiln_vk_semaphore_t*)signals[i].semaphore)->handle;
    signal_values[i] = signals[i].value;
  }
  signal_handles[signal_count] = device->submit_timeline;
  pthread_mutex_lock(&device->queue_mutex);
  uint64_t value = ++device->submit_value;
  signal_values[signal_count] = value;
  VkTimelineSemaphoreSubmitInfo timeline = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .waitSemaphoreValueCount = wait_count,
      .pWaitSemaphoreValues = wait_values,
      .signalSemaphoreValueCount = signal_count + 1,
      .pSignalSemaphoreValues = signal_values,
  };
  VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &timeline,
      .waitSemaphoreCount = wait_count,
      .pWaitSemaphores = wait_handles,
      .pWaitDstStageMask = wait_stages,
      .commandBufferCount = command_buffer_count,
      .pCommandBuffers = command_buffers,
      .signalSemaphoreCount = signal_count + 1,
      .pSignalSemaphores = signal_handles,
  };
  VkResult result = device->vk.vkQueueSubmit(device->queue, 1, &submit, fence);
  if (result != VK_SUCCESS) device->submit_value--;
  pthread_mutex_unlock(&device->queue_mutex);
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(result, "vkQueueSubmit"));
  *out_value = value;
  return kiln_ok_status();
}

kiln_status_t kiln_vk_submit(kiln_vk_device_t* device,
                             const kiln_hal_semaphore_value_t* waits,
                             uint32_t wait_count,
                             const VkCommandBuffer* command_buffers,
                             uint32_t command_buffer_count,
                             const kiln_hal_semaphore_value_t* signals,
                             uint32_t signal_count, VkFence fence,
                             uint64_t* out_value) {
  *out_value = 0;
  if (wait_count > kMaxSubmitItems || signal_count + 1 > kMaxSubmitItems ||
      command_buffer_count > kMaxSubmitItems * KILN_VK_MAX_HANDLES_PER_COMMAND_BUFFER) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "submit: more than %d waits, signals or command "
                            "buffers",
                            kMaxSubmitItems);
  }
  if (device->host_timeline) {
    return kiln_vk_host_submit(device, waits, wait_count, command_buffers,
                               command_buffer_count, signals, signal_count,
                               fence, out_value);
  }
  return submit_timeline(device, waits, wait_count, command_buffers,
                         command_buffer_count, signals, signal_count, fence,
                         out_value);
}

kiln_status_t kiln_vk_queue_submit(kiln_hal_device_t* base,
                                   const kiln_hal_submit_batch_t* batch) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  int64_t start = kiln_time_now_ns();
  if (batch->command_buffer_count > kMaxSubmitItems) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "submit: more than %d command buffers",
                            kMaxSubmitItems);
  }
  VkCommandBuffer handles[kMaxSubmitItems * KILN_VK_MAX_HANDLES_PER_COMMAND_BUFFER];
  uint32_t handle_count = 0;
  static const kiln_hal_binding_table_t kEmptyTable = {NULL, 0};
  for (uint32_t i = 0; i < batch->command_buffer_count; ++i) {
    uint32_t count = 0;
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_vk_command_buffer_prepare_submit(
            batch->command_buffers[i],
            batch->binding_tables ? &batch->binding_tables[i] : &kEmptyTable,
            handles + handle_count, &count),
        "submit: command buffer %u", i);
    handle_count += count;
  }
  VkFence fence = VK_NULL_HANDLE;
  if (batch->fence) {
    fence = ((kiln_vk_fence_t*)batch->fence)->handle;
    if (device->vk.vkGetFenceStatus(device->device, fence) == VK_SUCCESS) {
      return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "submit: the fence is still signalled; reset "
                              "it first");
    }
  }
  uint64_t value = 0;
  int64_t prepared = kiln_time_now_ns();
  KILN_RETURN_IF_ERROR(kiln_vk_submit(device, batch->waits, batch->wait_count,
                                      handles, handle_count,
                                      batch->signals, batch->signal_count,
                                      fence, &value));
  kiln_hal_submit_stats_t* stats = &base->submit_stats;
  __atomic_add_fetch(&stats->submissions, 1, __ATOMIC_RELAXED);
  __atomic_add_fetch(&stats->prepare_ns, (uint64_t)(prepared - start), __ATOMIC_RELAXED);
  __atomic_add_fetch(&stats->queue_ns, (uint64_t)(kiln_time_now_ns() - prepared),
                     __ATOMIC_RELAXED);
  for (uint32_t i = 0; i < batch->command_buffer_count; ++i) {
    kiln_vk_command_buffer_mark_submitted(batch->command_buffers[i], value);
  }
  // Waiting for the fence then proves this submission done.
  if (batch->fence) ((kiln_vk_fence_t*)batch->fence)->submit_value = value;
  return kiln_ok_status();
}
