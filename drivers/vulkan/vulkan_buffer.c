// Buffers: a VkBuffer bound to a suballocated range.
#include <string.h>

#include "vulkan_internal.h"

static void buffer_destroy(kiln_hal_buffer_t* base) {
  kiln_vk_buffer_t* buffer = (kiln_vk_buffer_t*)base;
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  if (buffer->handle) {
    device->vk.vkDestroyBuffer(device->device, buffer->handle, NULL);
  }
  kiln_vk_memory_free(&device->memory, &buffer->allocation);
  kiln_allocator_free(device->base.allocator, buffer);
  kiln_hal_device_release(&device->base);
}

static const kiln_hal_buffer_vtable_t kBufferVtable = {
    .destroy = buffer_destroy,
};

kiln_status_t kiln_vk_buffer_allocate(kiln_hal_device_t* base,
                                      const kiln_hal_buffer_params_t* params,
                                      kiln_hal_buffer_t** out_buffer) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  VkBufferUsageFlags usage = 0;
  if (params->usage & KILN_HAL_BUFFER_USAGE_TRANSFER_SRC) {
    usage |= VK_BUFFER_USAGE_TRANSFER_SRC_BIT;
  }
  if (params->usage & KILN_HAL_BUFFER_USAGE_TRANSFER_DST) {
    usage |= VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  }
  if (params->usage & KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE) {
    // Dispatch buffers may also be bound as texel buffers (vec4 f32).
    usage |= VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
             VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  }
  if (usage == 0) usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT;  // mapping only
  kiln_vk_buffer_t* buffer = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(base->allocator, sizeof(*buffer),
                                             (void**)&buffer));
  buffer->vk_size = params->size;
  if ((params->usage & KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE) &&
      params->size <= UINT64_MAX - 15) {
    buffer->vk_size = (params->size + 15) & ~(uint64_t)15;
  }
  VkBufferCreateInfo create_info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
      .size = buffer->vk_size,
      .usage = usage,
      .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
  };
  kiln_status_t status = kiln_vk_result_status(
      device->vk.vkCreateBuffer(device->device, &create_info, NULL,
                                &buffer->handle),
      "vkCreateBuffer");
  if (!status) {
    VkMemoryRequirements requirements;
    device->vk.vkGetBufferMemoryRequirements(device->device, buffer->handle,
                                             &requirements);
    status = kiln_vk_memory_allocate(&device->memory, &requirements,
                                     params->memory_type, &buffer->allocation);
  }
  if (!status) {
    status = kiln_vk_result_status(
        device->vk.vkBindBufferMemory(device->device, buffer->handle,
                                      buffer->allocation.memory,
                                      buffer->allocation.offset),
        "vkBindBufferMemory");
  }
  if (status) {
    if (buffer->handle) {
      device->vk.vkDestroyBuffer(device->device, buffer->handle, NULL);
    }
    kiln_vk_memory_free(&device->memory, &buffer->allocation);
    kiln_allocator_free(base->allocator, buffer);
    return status;
  }
  kiln_hal_resource_init(&buffer->base.resource, &kBufferVtable);
  kiln_hal_device_retain(base);
  buffer->base.device = base;
  buffer->base.params = *params;
  buffer->base.host_pointer = buffer->allocation.host_pointer;
  *out_buffer = &buffer->base;
  return kiln_ok_status();
}
