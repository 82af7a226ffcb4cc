// Buffer reuse: a buffer whose only holder is the slot copies of a command
// buffer (vulkan_slot_staging.c keeps the caller's table buffers for its
// recorded copies) and whose last submission has finished is handed out
// again by the next allocation of the same size and kind. A model that
// allocates its outputs on every call thus gets last call's buffer back once
// the caller released it: the binding table then matches the recorded
// copies, and the call creates, binds and destroys no VkBuffer and records
// no command. The contents are stale, as those of any new buffer.
#include <string.h>

#include "vulkan_internal.h"

void kiln_vk_buffer_reuse_add(kiln_vk_device_t* device, kiln_hal_buffer_t* buffer,
                              const uint64_t* last_use) {
  kiln_vk_buffer_reuse_t* reuse = &device->reuse;
  pthread_mutex_lock(&reuse->mutex);
  if (reuse->count < KILN_VK_REUSE_CAPACITY) {  // else just never reused
    reuse->entries[reuse->count++] = (kiln_vk_reuse_entry_t){buffer, last_use};
  }
  pthread_mutex_unlock(&reuse->mutex);
}

void kiln_vk_buffer_reuse_remove(kiln_vk_device_t* device, kiln_hal_buffer_t* buffer,
                                 const uint64_t* last_use) {
  kiln_vk_buffer_reuse_t* reuse = &device->reuse;
  pthread_mutex_lock(&reuse->mutex);
  for (uint32_t i = 0; i < reuse->count; ++i) {
    if (reuse->entries[i].buffer == buffer && reuse->entries[i].last_use == last_use) {
      reuse->entries[i] = reuse->entries[--reuse->count];
      break;
    }
  }
  pthread_mutex_unlock(&reuse->mutex);
}

kiln_hal_buffer_t* kiln_vk_buffer_reuse_take(kiln_hal_device_t* base,
                                             const kiln_hal_buffer_params_t* params) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  kiln_vk_buffer_reuse_t* reuse = &device->reuse;
  kiln_hal_buffer_t* found = NULL;
  uint64_t completed = __atomic_load_n(&device->completed_value, __ATOMIC_ACQUIRE);
  pthread_mutex_lock(&reuse->mutex);
  for (uint32_t i = 0; i < reuse->count && !found; ++i) {
    kiln_hal_buffer_t* buffer = reuse->entries[i].buffer;
    const kiln_hal_buffer_params_t* have = &buffer->params;
    // Each entry stands for one reference of a staging table, taken before
    // the entry was added and dropped after it was removed: a count of 1
    // means no one else holds the buffer (and no one else can take a new
    // reference without holding one).
    if (have->size == params->size && have->memory_type == params->memory_type &&
        have->usage == params->usage && have->memory_budget == params->memory_budget &&
        !buffer->immutable &&
        __atomic_load_n(&buffer->resource.ref_count, __ATOMIC_ACQUIRE) == 1 &&
        __atomic_load_n(reuse->entries[i].last_use, __ATOMIC_ACQUIRE) <= completed) {
      kiln_hal_buffer_retain(buffer);
      found = buffer;
    }
  }
  pthread_mutex_unlock(&reuse->mutex);
  return found;
}
