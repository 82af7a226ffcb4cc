// Slot staging: the per-call path of a command buffer whose dispatches bind
// binding-table slots. The dispatches are translated once against device
// buffers of the command buffer's own (one per slot, the entry's length);
// each submission copies the caller's table entries in and the written
// ones back out through two small command buffers, recorded again only
// when the caller's table changes. A new input or output buffer thus costs
// one copy each way on the GPU and a few commands on the host, never a
// re-recording of the model's dispatches; new entry lengths (a shape
// change) re-translate. A table submitted twice in a row (a warm call's
// inputs and the outputs buffer reuse hands back) whose entries are whole
// device-local buffers is then bound directly (the dispatches translated
// against it once, the two command buffers left with their barriers only)
// until the table changes: no copies at all.
#include <string.h>

#include "vulkan_internal.h"

void kiln_vk_slot_staging_release_table(kiln_vk_slot_staging_t* staging) {
  for (uint32_t i = 0; i < staging->io_count; ++i) {
    kiln_hal_buffer_t* buffer = staging->io_table[i].buffer;
    kiln_vk_buffer_reuse_remove(kiln_vk_device_cast(buffer->device), buffer,
                                &staging->io_last_use);
    kiln_hal_buffer_release(buffer);
  }
  staging->io_count = 0;
  staging->io_recorded = false;
}

void kiln_vk_slot_staging_reset(kiln_vk_slot_staging_t* staging) {
  kiln_vk_slot_staging_release_table(staging);
  for (uint32_t i = 0; i < staging->slot_count; ++i) {
    kiln_hal_buffer_release(staging->table[i].buffer);
  }
  staging->slot_count = 0;
}

void kiln_vk_slot_staging_deinit(kiln_vk_slot_staging_t* staging,
                                 kiln_allocator_t allocator) {
  kiln_vk_slot_staging_reset(staging);
  kiln_allocator_free(allocator, staging->table);
  kiln_allocator_free(allocator, staging->io_table);
  kiln_allocator_free(allocator, staging->ranges);
  memset(staging, 0, sizeof(*staging));
}

bool kiln_vk_slot_staging_usable(const kiln_hal_binding_table_t* table,
                                 uint32_t slots) {
  const kiln_hal_buffer_usage_t needed = KILN_HAL_BUFFER_USAGE_TRANSFER;
  for (uint32_t i = 0; i < slots; ++i) {
    if ((table->entries[i].buffer->params.usage & needed) != needed) return false;
  }
  return true;
}

bool kiln_vk_slot_staging_fits(const kiln_vk_slot_staging_t* staging,
                               const uint64_t* lengths, uint32_t slots) {
  if (staging->slot_count != slots) return false;
  for (uint32_t i = 0; i < slots; ++i) {
    if (staging->table[i].length != lengths[i]) return false;
  }
  return true;
}

kiln_status_t kiln_vk_slot_staging_allocate(kiln_vk_slot_staging_t* staging,
                                            kiln_hal_device_t* device,
                                            const uint64_t* lengths, uint32_t slots) {
  kiln_vk_slot_staging_reset(staging);
  kiln_allocator_t allocator = device->allocator;
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(allocator, slots, sizeof(*staging->table),
                                                    (void**)&staging->table));
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(allocator, slots, sizeof(*staging->io_table),
                                                    (void**)&staging->io_table));
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(allocator, slots, sizeof(*staging->ranges),
                                                    (void**)&staging->ranges));
  for (uint32_t i = 0; i < slots; ++i) {
    kiln_hal_buffer_params_t params = {
        .memory_type = KILN_HAL_MEMORY_DEVICE_LOCAL,
        .usage = KILN_HAL_BUFFER_USAGE_DEFAULT,
        .size = lengths[i],
    };
    kiln_hal_buffer_t* buffer = NULL;
    KILN_RETURN_IF_ERROR_ANNOTATE(kiln_hal_buffer_allocate(device, &params, &buffer),
                                  "staging buffer of binding table slot %u", i);
    staging->table[i] = (kiln_hal_binding_table_entry_t){buffer, 0, lengths[i]};
    staging->slot_count = i + 1;
  }
  return kiln_ok_status();
}

bool kiln_vk_slot_staging_io_matches(const kiln_vk_slot_staging_t* staging,
                                     const kiln_hal_binding_table_t* table) {
  if (!staging->io_recorded || staging->io_count != staging->slot_count) return false;
  for (uint32_t i = 0; i < staging->io_count; ++i) {
    const kiln_hal_binding_table_entry_t* a = &staging->io_table[i];
    const kiln_hal_binding_table_entry_t* b = &table->entries[i];
    if (a->buffer != b->buffer || a->offset != b->offset || a->length != b->length) {
      return false;
    }
  }
  return true;
}

static void memory_barrier(const struct VolkDeviceTable* vk, VkCommandBuffer handle,
                           VkPipelineStageFlags source_stages, VkAccessFlags source_access,
                           VkPipelineStageFlags target_stages, VkAccessFlags target_access) {
  VkMemoryBarrier barrier = {
      .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
      .srcAccessMask = source_access,
      .dstAccessMask = target_access,
  };
  vk->vkCmdPipelineBarrier(handle, source_stages, target_stages, 0, 1, &barrier, 0, NULL, 0,
                           NULL);
}

static kiln_status_t ensure_handles(kiln_vk_slot_staging_t* staging, kiln_vk_device_t* device,
                                    VkCommandPool pool) {
  if (staging->copy_in) return kiln_ok_status();
  VkCommandBuffer handles[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};
  VkCommandBufferAllocateInfo info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
      .commandPool = pool,
      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
      .commandBufferCount = 2,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkAllocateCommandBuffers(device->device, &info, handles),
      "vkAllocateCommandBuffers (slot copies)"));
  staging->copy_in = handles[0];
  staging->copy_out = handles[1];
  return kiln_ok_status();
}

static const VkPipelineStageFlags kGpuStages =
    VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
static const VkAccessFlags kGpuWrites = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
static const VkAccessFlags kGpuAccess = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                        VK_ACCESS_TRANSFER_READ_BIT |
                                        VK_ACCESS_TRANSFER_WRITE_BIT;

// Copies of every slot's bound range in (before the dispatches) and of the
// written ones out (after), each between barriers that order them against
// the dispatches and against earlier and later submissions on the queue;
// without `copies`, the barriers alone (a table bound directly).
static kiln_status_t record_copies(kiln_vk_slot_staging_t* staging, kiln_vk_device_t* device,
                                   const kiln_hal_binding_table_t* table, bool out,
                                   bool copies) {
  const struct VolkDeviceTable* vk = &device->vk;
  VkCommandBuffer handle = out ? staging->copy_out : staging->copy_in;
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
  };
  KILN_RETURN_IF_ERROR(
      kiln_vk_result_status(vk->vkBeginCommandBuffer(handle, &begin), "vkBeginCommandBuffer"));
  if (out) {
    memory_barrier(vk, handle, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
                   VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT);
  } else {
    memory_barrier(vk, handle, kGpuStages, kGpuWrites, VK_PIPELINE_STAGE_TRANSFER_BIT,
                   VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  }
  for (uint32_t i = 0; copies && i < staging->slot_count; ++i) {
    const kiln_vk_slot_range_t* range = &staging->ranges[i];
    if (range->end <= range->begin || (out && !range->written)) continue;
    const kiln_hal_binding_table_entry_t* entry = &table->entries[i];
    VkBuffer caller = kiln_vk_buffer_handle(entry->buffer);
    VkBuffer own = kiln_vk_buffer_handle(staging->table[i].buffer);
    VkBufferCopy region = {entry->offset + range->begin, range->begin,
                           range->end - range->begin};
    if (out) {
      region.srcOffset = range->begin;
      region.dstOffset = entry->offset + range->begin;
      vk->vkCmdCopyBuffer(handle, own, caller, 1, &region);
    } else {
      vk->vkCmdCopyBuffer(handle, caller, own, 1, &region);
    }
  }
  if (out) {
    memory_barrier(vk, handle, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   kGpuStages | VK_PIPELINE_STAGE_HOST_BIT, kGpuAccess | VK_ACCESS_HOST_READ_BIT);
  } else {
    memory_barrier(vk, handle, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
                   VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                   VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT);
  }
  return kiln_vk_result_status(vk->vkEndCommandBuffer(handle), "vkEndCommandBuffer");
}

kiln_status_t kiln_vk_slot_staging_record_io(kiln_vk_slot_staging_t* staging,
                                             kiln_vk_device_t* device, VkCommandPool pool,
                                             const kiln_hal_binding_table_t* table) {
  KILN_RETURN_IF_ERROR(ensure_handles(staging, device, pool));
  // Retain the new entries before releasing the old: a buffer in both
  // stays alive.
  for (uint32_t i = 0; i < staging->slot_count; ++i) {
    kiln_hal_buffer_retain(table->entries[i].buffer);
  }
  kiln_vk_slot_staging_release_table(staging);
  memcpy(staging->io_table, table->entries, staging->slot_count * sizeof(*staging->io_table));
  staging->io_count = staging->slot_count;
  for (uint32_t i = 0; i < staging->io_count; ++i) {
    kiln_vk_buffer_reuse_add(device, staging->io_table[i].buffer, &staging->io_last_use);
  }
  KILN_RETURN_IF_ERROR(record_copies(staging, device, table, false, true));
  KILN_RETURN_IF_ERROR(record_copies(staging, device, table, true, true));
  staging->io_recorded = true;
  return kiln_ok_status();
}

bool kiln_vk_slot_staging_bindable(const kiln_hal_binding_table_t* table, uint32_t slots) {
  for (uint32_t i = 0; i < slots; ++i) {
    const kiln_hal_binding_table_entry_t* entry = &table->entries[i];
    const kiln_hal_buffer_t* buffer = entry->buffer;
    if (buffer->params.memory_type != KILN_HAL_MEMORY_DEVICE_LOCAL || entry->offset != 0 ||
        (entry->length != KILN_HAL_WHOLE_BUFFER && entry->length != buffer->params.size)) {
      return false;
    }
    // One buffer in two slots (an in-place call): the copies give its
    // inputs as they were before the call; bound directly, a kernel could
    // read what another wrote.
    for (uint32_t j = 0; j < i; ++j) {
      if (table->entries[j].buffer == buffer) return false;
    }
  }
  return true;
}

kiln_status_t kiln_vk_slot_staging_record_barriers(kiln_vk_slot_staging_t* staging,
                                                   kiln_vk_device_t* device,
                                                   VkCommandPool pool) {
  KILN_RETURN_IF_ERROR(ensure_handles(staging, device, pool));
  const kiln_hal_binding_table_t table = {staging->io_table, staging->io_count};
  KILN_RETURN_IF_ERROR(record_copies(staging, device, &table, false, false));
  return record_copies(staging, device, &table, true, false);
}
