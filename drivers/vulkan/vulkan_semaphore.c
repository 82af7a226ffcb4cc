// Timeline semaphores (host-emulated where the device has none; see
// vulkan_host_timeline.c) and fences.
#include "vulkan_internal.h"

static void semaphore_destroy(kiln_hal_semaphore_t* base) {
  kiln_vk_semaphore_t* semaphore = (kiln_vk_semaphore_t*)base;
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  if (semaphore->handle) {
    device->vk.vkDestroySemaphore(device->device, semaphore->handle, NULL);
  }
  kiln_allocator_free(device->base.allocator, semaphore);
  kiln_hal_device_release(&device->base);
}

static kiln_status_t semaphore_query(kiln_hal_semaphore_t* base,
                                     uint64_t* out_value) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  if (device->host_timeline) {
    return kiln_vk_host_semaphore_query((kiln_vk_semaphore_t*)base, out_value);
  }
  return kiln_vk_result_status(
      device->get_semaphore_counter_value(
          device->device, ((kiln_vk_semaphore_t*)base)->handle, out_value),
      "vkGetSemaphoreCounterValue");
}

static kiln_status_t semaphore_signal(kiln_hal_semaphore_t* base,
                                      uint64_t value) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  if (device->host_timeline) {
    return kiln_vk_host_semaphore_signal((kiln_vk_semaphore_t*)base, value);
  }
  VkSemaphoreSignalInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO,
      .semaphore = ((kiln_vk_semaphore_t*)base)->handle,
      .value = value,
  };
  return kiln_vk_result_status(
      device->signal_semaphore(device->device, &info), "vkSignalSemaphore");
}

static kiln_status_t semaphore_wait(kiln_hal_semaphore_t* base, uint64_t value,
                                    int64_t timeout_ns) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  if (device->host_timeline) {
    return kiln_vk_host_semaphore_wait((kiln_vk_semaphore_t*)base, value,
                                       timeout_ns);
  }
  VkSemaphore handle = ((kiln_vk_semaphore_t*)base)->handle;
  VkSemaphoreWaitInfo info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
      .semaphoreCount = 1,
      .pSemaphores = &handle,
      .pValues = &value,
  };
  VkResult result = device->wait_semaphores(
      device->device, &info, kiln_vk_timeout_to_vulkan(timeout_ns));
  if (result == VK_TIMEOUT) {
    return kiln_make_status(KILN_STATUS_DEADLINE_EXCEEDED,
                            "semaphore did not reach %llu within %lld ns",
                            (unsigned long long)value, (long long)timeout_ns);
  }
  return kiln_vk_result_status(result, "vkWaitSemaphores");
}

static const kiln_hal_semaphore_vtable_t kSemaphoreVtable = {
    .destroy = semaphore_destroy,
    .query = semaphore_query,
    .signal = semaphore_signal,
    .wait = semaphore_wait,
};

kiln_status_t kiln_vk_semaphore_create(kiln_hal_device_t* base,
                                       uint64_t initial_value,
                                       kiln_hal_semaphore_t** out) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  kiln_vk_semaphore_t* semaphore = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(base->allocator,
                                             sizeof(*semaphore),
                                             (void**)&semaphore));
  semaphore->host_value = initial_value;
  if (!device->host_timeline) {
    VkSemaphoreTypeCreateInfo type_info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
        .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
        .initialValue = initial_value,
    };
    VkSemaphoreCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type_info};
    kiln_status_t status = kiln_vk_result_status(
        device->vk.vkCreateSemaphore(device->device, &info, NULL,
                                     &semaphore->handle),
        "vkCreateSemaphore");
    if (status) {
      kiln_allocator_free(base->allocator, semaphore);
      return status;
    }
  }
  kiln_hal_resource_init(&semaphore->base.resource, &kSemaphoreVtable);
  kiln_hal_device_retain(base);
  semaphore->base.device = base;
  *out = &semaphore->base;
  return kiln_ok_status();
}

static void fence_destroy(kiln_hal_fence_t* base) {
  kiln_vk_fence_t* fence = (kiln_vk_fence_t*)base;
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  device->vk.vkDestroyFence(device->device, fence->handle, NULL);
  kiln_allocator_free(device->base.allocator, fence);
  kiln_hal_device_release(&device->base);
}

static kiln_status_t fence_wait(kiln_hal_fence_t* base, int64_t timeout_ns) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  VkFence handle = ((kiln_vk_fence_t*)base)->handle;
  VkResult result = kiln_vk_wait(device, handle, 0, timeout_ns);
  if (result == VK_TIMEOUT) {
    return kiln_make_status(KILN_STATUS_DEADLINE_EXCEEDED,
                            "fence not signalled within %lld ns",
                            (long long)timeout_ns);
  }
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(result, "vkWaitForFences"));
  kiln_vk_device_note_completed(device, ((kiln_vk_fence_t*)base)->submit_value);
  return kiln_ok_status();
}

static kiln_status_t fence_reset(kiln_hal_fence_t* base) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base->device);
  kiln_vk_fence_t* fence = (kiln_vk_fence_t*)base;
  fence->submit_value = 0;
  return kiln_vk_result_status(
      device->vk.vkResetFences(device->device, 1, &fence->handle), "vkResetFences");
}

static const kiln_hal_fence_vtable_t kFenceVtable = {
    .destroy = fence_destroy,
    .wait = fence_wait,
    .reset = fence_reset,
};

kiln_status_t kiln_vk_fence_create(kiln_hal_device_t* base,
                                   kiln_hal_fence_t** out) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  kiln_vk_fence_t* fence = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(base->allocator, sizeof(*fence), (void**)&fence));
  VkFenceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  kiln_status_t status = kiln_vk_result_status(
      device->vk.vkCreateFence(device->device, &info, NULL, &fence->handle),
      "vkCreateFence");
  if (status) {
    kiln_allocator_free(base->allocator, fence);
    return status;
  }
  kiln_hal_resource_init(&fence->base.resource, &kFenceVtable);
  kiln_hal_device_retain(base);
  fence->base.device = base;
  *out = &fence->base;
  return kiln_ok_status();
}
