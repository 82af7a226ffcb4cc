// Host <-> device copies for buffers the host cannot map: through one
// reusable staging buffer, in chunks, waiting on a one-shot submission.
#include <string.h>

#include "vulkan_internal.h"

enum { kStagingBytes = 8u << 20 };

static kiln_status_t ensure_transfer_objects(kiln_vk_device_t* device) {
  if (device->transfer_command_buffer) return kiln_ok_status();
  VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT |
               VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
      .queueFamilyIndex = device->support.queue_family,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkCreateCommandPool(device->device, &pool_info, NULL,
                                     &device->transfer_pool),
      "vkCreateCommandPool (transfer)"));
  VkCommandBufferAllocateInfo allocate_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = device->transfer_pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 1,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkAllocateCommandBuffers(device->device, &allocate_info,
                                          &device->transfer_command_buffer),
      "vkAllocateCommandBuffers (transfer)"));
  kiln_hal_buffer_params_t params = {
      .memory_type = KILN_HAL_MEMORY_STAGING,
      .usage = KILN_HAL_BUFFER_USAGE_TRANSFER | KILN_HAL_BUFFER_USAGE_MAPPING,
      .size = kStagingBytes,
  };
  KILN_RETURN_IF_ERROR(
      kiln_vk_buffer_allocate(&device->base, &params, &device->staging));
  // The staging buffer must not keep its own device alive.
  kiln_hal_resource_release(&device->base.resource);
  return kiln_ok_status();
}

void kiln_vk_transfer_deinit(kiln_vk_device_t* device) {
  if (device->staging) {
    kiln_vk_buffer_t* staging = (kiln_vk_buffer_t*)device->staging;
    device->vk.vkDestroyBuffer(device->device, staging->handle, NULL);
    kiln_vk_memory_free(&device->memory, &staging->allocation);
    kiln_allocator_free(device->base.allocator, staging);
    device->staging = NULL;
  }
  if (device->transfer_pool) {
    device->vk.vkDestroyCommandPool(device->device, device->transfer_pool,
                                    NULL);
    device->transfer_pool = VK_NULL_HANDLE;
    device->transfer_command_buffer = VK_NULL_HANDLE;
  }
}

// Records one copy, submits it (signalling the submit timeline) and waits.
static kiln_status_t copy_and_wait(kiln_vk_device_t* device, VkBuffer source,
                                   VkDeviceSize source_offset, VkBuffer target,
                                   VkDeviceSize target_offset,
                                   VkDeviceSize length) {
  VkCommandBuffer cb = device->transfer_command_buffer;
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkBeginCommandBuffer(cb, &begin), "vkBeginCommandBuffer"));
  VkBufferCopy region = {source_offset, target_offset, length};
  device->vk.vkCmdCopyBuffer(cb, source, target, 1, &region);
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(device->vk.vkEndCommandBuffer(cb),
                                             "vkEndCommandBuffer"));
  uint64_t value = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_vk_submit(device, NULL, 0, &cb, 1, NULL, 0, VK_NULL_HANDLE, &value),
      "transfer");
  return kiln_vk_device_wait_value(device, value, KILN_INFINITE_TIMEOUT_NS);
}

static kiln_status_t check_transfer_usage(kiln_hal_buffer_t* buffer,
                                          kiln_hal_buffer_usage_t bit,
                                          const char* what) {
  if (!(buffer->params.usage & bit)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: buffer is not mappable and lacks %s usage "
                            "for a staged copy",
                            what,
                            bit == KILN_HAL_BUFFER_USAGE_TRANSFER_DST
                                ? "TRANSFER_DST"
                                : "TRANSFER_SRC");
  }
  return kiln_ok_status();
}

kiln_status_t kiln_vk_device_write_buffer(kiln_hal_device_t* base,
                                          kiln_hal_buffer_t* buffer,
                                          uint64_t offset, const void* data,
                                          uint64_t length) {
  if (buffer->host_pointer) {
    memcpy(buffer->host_pointer + offset, data, length);
    return kiln_ok_status();
  }
  KILN_RETURN_IF_ERROR(check_transfer_usage(
      buffer, KILN_HAL_BUFFER_USAGE_TRANSFER_DST, "write_buffer"));
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  pthread_mutex_lock(&device->transfer_mutex);
  kiln_status_t status = ensure_transfer_objects(device);
  const uint8_t* bytes = data;
  for (uint64_t done = 0; !status && done < length;) {
    uint64_t chunk = length - done < kStagingBytes ? length - done : kStagingBytes;
    memcpy(device->staging->host_pointer, bytes + done, chunk);
    status = copy_and_wait(device, kiln_vk_buffer_handle(device->staging), 0,
                           kiln_vk_buffer_handle(buffer), offset + done, chunk);
    done += chunk;
  }
  pthread_mutex_unlock(&device->transfer_mutex);
  return status;
}

kiln_status_t kiln_vk_device_read_buffer(kiln_hal_device_t* base,
                                         kiln_hal_buffer_t* buffer,
                                         uint64_t offset, void* data,
                                         uint64_t length) {
  if (buffer->host_pointer) {
    memcpy(data, buffer->host_pointer + offset, length);
    return kiln_ok_status();
  }
  KILN_RETURN_IF_ERROR(check_transfer_usage(
      buffer, KILN_HAL_BUFFER_USAGE_TRANSFER_SRC, "read_buffer"));
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  pthread_mutex_lock(&device->transfer_mutex);
  kiln_status_t status = ensure_transfer_objects(device);
  uint8_t* bytes = data;
  for (uint64_t done = 0; !status && done < length;) {
    uint64_t chunk = length - done < kStagingBytes ? length - done : kStagingBytes;
    status = copy_and_wait(device, kiln_vk_buffer_handle(buffer), offset + done,
                           kiln_vk_buffer_handle(device->staging), 0, chunk);
    if (!status) memcpy(bytes + done, device->staging->host_pointer, chunk);
    done += chunk;
  }
  pthread_mutex_unlock(&device->transfer_mutex);
  return status;
}
