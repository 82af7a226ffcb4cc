// Queue submission: waits, command buffers (re-recorded first if their slot
// bindings changed), signals, the device's own submit timeline, a fence.
#include <string.h>

#include "vulkan_internal.h"

enum { kMaxSubmitItems = 64 };

kiln_status_t kiln_vk_queue_submit(kiln_hal_device_t* base,
                                   const kiln_hal_submit_batch_t* batch) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  if (batch->wait_count > kMaxSubmitItems ||
      batch->signal_count + 1 > kMaxSubmitItems ||
      batch->command_buffer_count > kMaxSubmitItems) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "submit: more than %d waits, signals or command "
                            "buffers",
                            kMaxSubmitItems);
  }
  VkSemaphore waits[kMaxSubmitItems];
  uint64_t wait_values[kMaxSubmitItems];
  VkPipelineStageFlags wait_stages[kMaxSubmitItems];
  for (uint32_t i = 0; i < batch->wait_count; ++i) {
    waits[i] = ((kiln_vk_semaphore_t*)batch->waits[i].semaphore)->handle;
    wait_values[i] = batch->waits[i].value;
    wait_stages[i] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
  }
  VkSemaphore signals[kMaxSubmitItems];
  uint64_t signal_values[kMaxSubmitItems];
  for (uint32_t i = 0; i < batch->signal_count; ++i) {
    signals[i] = ((kiln_vk_semaphore_t*)batch->signals[i].semaphore)->handle;
    signal_values[i] = batch->signals[i].value;
  }
  VkCommandBuffer handles[kMaxSubmitItems];
  static const kiln_hal_binding_table_t kEmptyTable = {NULL, 0};
  for (uint32_t i = 0; i < batch->command_buffer_count; ++i) {
    KILN_RETURN_IF_ERROR_ANNOTATE(
        kiln_vk_command_buffer_prepare_submit(
            batch->command_buffers[i],
            batch->binding_tables ? &batch->binding_tables[i] : &kEmptyTable,
            &handles[i]),
        "submit: command buffer %u", i);
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
  signals[batch->signal_count] = device->submit_timeline;
  pthread_mutex_lock(&device->queue_mutex);
  uint64_t value = ++device->submit_value;
  signal_values[batch->signal_count] = value;
  VkTimelineSemaphoreSubmitInfo timeline = {
      .sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
      .waitSemaphoreValueCount = batch->wait_count,
      .pWaitSemaphoreValues = wait_values,
      .signalSemaphoreValueCount = batch->signal_count + 1,
      .pSignalSemaphoreValues = signal_values,
  };
  VkSubmitInfo submit = {
      .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
      .pNext = &timeline,
      .waitSemaphoreCount = batch->wait_count,
      .pWaitSemaphores = waits,
      .pWaitDstStageMask = wait_stages,
      .commandBufferCount = batch->command_buffer_count,
      .pCommandBuffers = handles,
      .signalSemaphoreCount = batch->signal_count + 1,
      .pSignalSemaphores = signals,
  };
  VkResult result = device->vk.vkQueueSubmit(device->queue, 1, &submit, fence);
  if (result != VK_SUCCESS) device->submit_value--;
  pthread_mutex_unlock(&device->queue_mutex);
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(result, "vkQueueSubmit"));
  for (uint32_t i = 0; i < batch->command_buffer_count; ++i) {
    kiln_vk_command_buffer_mark_submitted(batch->command_buffers[i], value);
  }
  return kiln_ok_status();
}
