// Command buffers. Commands are kept in a compact list and translated into a
// VkCommandBuffer: at end() when no binding names a slot, otherwise at the
// first submit. Slot bindings go through the command buffer's own staging
// buffers (vulkan_slot_staging.c), so later submits with new table buffers
// only copy them in and out: the dispatches are translated again only when
// an entry's length changes (or, for buffers that cannot be copied, when
// the table changes).
#include <stdlib.h>
#include <string.h>

#include "vulkan_internal.h"

typedef enum cmd_type_e {
  CMD_FILL,
  CMD_UPDATE,
  CMD_COPY,
  CMD_BARRIER,
  CMD_DISPATCH,
} cmd_type_t;

typedef struct cmd_t {
  cmd_type_t type;
  union {
    struct {
      VkBuffer target;
      uint64_t offset, length;
      uint32_t pattern;
    } fill;
    struct {
      VkBuffer target;
      uint64_t offset, length;
      size_t data_offset;  // into the byte pool
    } update;
    struct {
      VkBuffer source, target;
      uint64_t source_offset, target_offset, length;
    } copy;
    struct {
      VkPipelineStageFlags source_stages, target_stages;
      VkAccessFlags source_access, target_access;
    } barrier;
    struct {
      kiln_vk_executable_t* executable;
      uint32_t entry_point;
      uint32_t counts[3];
      size_t push_offset;  // into the byte pool
      uint32_t push_bytes;
      size_t binding_start;  // into the binding pool
      uint32_t binding_count;
    } dispatch;
  };
} cmd_t;

typedef struct kiln_vk_command_buffer_t {
  kiln_hal_command_buffer_t base;
  VkCommandPool pool;
  VkCommandBuffer handle;
  VkDescriptorPool descriptor_pool;
  uint32_t descriptor_pool_sets;
  uint32_t descriptor_pool_descriptors;
  uint32_t descriptor_pool_texels;
  // Views of texel bindings, made at translation and destroyed at the next
  // one (which waits for the GPU first) or with the command buffer.
  VkBufferView* views;
  size_t view_count, view_capacity;
  VkQueryPool query_pool;
  uint32_t query_capacity;
  // The recorded commands and the pools they point into.
  cmd_t* commands;
  size_t command_count, command_capacity;
  kiln_hal_binding_t* bindings;
  size_t binding_count, binding_capacity;
  uint8_t* bytes;
  size_t byte_count, byte_capacity;
  // Objects the commands use, kept alive until the next begin.
  kiln_hal_buffer_t** buffers;
  size_t buffer_count, buffer_capacity;
  kiln_hal_executable_t** executables;
  size_t executable_count, executable_capacity;
  // What the VkCommandBuffer was last translated with: the staging buffers
  // (`staged`), or the caller's table itself (bound_table, or the staging
  // io_table once it came twice in a row).
  bool translated;
  bool staged;
  kiln_vk_slot_staging_t staging;
  // The bindings that name a slot (indices into `bindings`; the top bit
  // set when the kernel writes it), listed once per recording so a
  // submit's work does not grow with the number of dispatches.
  uint32_t* slot_refs;
  size_t slot_ref_count, slot_ref_capacity;
  bool slot_refs_listed;
  kiln_hal_binding_table_entry_t* bound_table;  // buffers retained
  uint32_t bound_table_count;
  uint64_t last_submit_value;
  uint32_t translated_dispatch_count;
} kiln_vk_command_buffer_t;

static kiln_vk_device_t* cb_device(kiln_vk_command_buffer_t* cb) {
  return kiln_vk_device_cast(cb->base.device);
}

// Grows an array of `element_size` items (from the device's allocator) to
// hold `needed` items.
static kiln_status_t grow(struct kiln_vk_command_buffer_t* cb, void** items,
                          size_t* capacity, size_t needed,
                          size_t element_size) {
  if (needed <= *capacity) return kiln_ok_status();
  size_t new_capacity = *capacity ? *capacity : 16;
  while (new_capacity < needed) {
    if (new_capacity > SIZE_MAX / 2) {
      return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "command buffer grew past the address space");
    }
    new_capacity *= 2;
  }
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(cb->base.device->allocator,
                                                    new_capacity,
                                                    element_size, items));
  *capacity = new_capacity;
  return kiln_ok_status();
}

static kiln_status_t push_command(kiln_vk_command_buffer_t* cb,
                                  const cmd_t* command) {
  KILN_RETURN_IF_ERROR(grow(cb, (void**)&cb->commands, &cb->command_capacity,
                            cb->command_count + 1, sizeof(cmd_t)));
  cb->commands[cb->command_count++] = *command;
  return kiln_ok_status();
}

static kiln_status_t push_bytes(kiln_vk_command_buffer_t* cb, const void* data,
                                size_t length, size_t* out_offset) {
  size_t aligned = (cb->byte_count + 7) & ~(size_t)7;
  KILN_RETURN_IF_ERROR(grow(cb, (void**)&cb->bytes, &cb->byte_capacity,
                            aligned + length, 1));
  memcpy(cb->bytes + aligned, data, length);
  *out_offset = aligned;
  cb->byte_count = aligned + length;
  return kiln_ok_status();
}

static kiln_status_t keep_buffer(kiln_vk_command_buffer_t* cb,
                                 kiln_hal_buffer_t* buffer) {
  if (cb->buffer_count && cb->buffers[cb->buffer_count - 1] == buffer) {
    return kiln_ok_status();
  }
  KILN_RETURN_IF_ERROR(grow(cb, (void**)&cb->buffers, &cb->buffer_capacity,
                            cb->buffer_count + 1, sizeof(*cb->buffers)));
  kiln_hal_buffer_retain(buffer);
  cb->buffers[cb->buffer_count++] = buffer;
  return kiln_ok_status();
}

static kiln_status_t keep_executable(kiln_vk_command_buffer_t* cb,
                                     kiln_hal_executable_t* executable) {
  if (cb->executable_count &&
      cb->executables[cb->executable_count - 1] == executable) {
    return kiln_ok_status();
  }
  KILN_RETURN_IF_ERROR(grow(cb, (void**)&cb->executables, &cb->executable_capacity,
                            cb->executable_count + 1,
                            sizeof(*cb->executables)));
  kiln_hal_executable_retain(executable);
  cb->executables[cb->executable_count++] = executable;
  return kiln_ok_status();
}

static void release_bound_table(kiln_vk_command_buffer_t* cb) {
  for (uint32_t i = 0; i < cb->bound_table_count; ++i) {
    kiln_hal_buffer_release(cb->bound_table[i].buffer);
  }
  cb->bound_table_count = 0;
}

static void destroy_views(kiln_vk_command_buffer_t* cb) {
  kiln_vk_device_t* device = cb_device(cb);
  for (size_t i = 0; i < cb->view_count; ++i) {
    device->vk.vkDestroyBufferView(device->device, cb->views[i], NULL);
  }
  cb->view_count = 0;
}

static void clear_recording(kiln_vk_command_buffer_t* cb) {
  destroy_views(cb);
  for (size_t i = 0; i < cb->buffer_count; ++i) {
    kiln_hal_buffer_release(cb->buffers[i]);
  }
  for (size_t i = 0; i < cb->executable_count; ++i) {
    kiln_hal_executable_release(cb->executables[i]);
  }
  cb->buffer_count = cb->executable_count = 0;
  cb->command_count = cb->binding_count = cb->byte_count = 0;
  release_bound_table(cb);
  kiln_vk_slot_staging_reset(&cb->staging);
  cb->translated = cb->staged = false;
  cb->slot_ref_count = 0;
  cb->slot_refs_listed = false;
}

static kiln_status_t wait_pending(kiln_vk_command_buffer_t* cb) {
  return kiln_vk_device_wait_value(cb_device(cb), cb->last_submit_value,
                                   KILN_INFINITE_TIMEOUT_NS);
}

// ---- recording (the vtable) ----

static kiln_status_t cb_begin(kiln_hal_command_buffer_t* base) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  KILN_RETURN_IF_ERROR(wait_pending(cb));
  clear_recording(cb);
  return kiln_ok_status();
}

static kiln_status_t cb_fill(kiln_hal_command_buffer_t* base,
                             kiln_hal_buffer_t* target, uint64_t offset,
                             uint64_t length, uint32_t pattern) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  KILN_RETURN_IF_ERROR(keep_buffer(cb, target));
  cmd_t command = {.type = CMD_FILL};
  command.fill.target = kiln_vk_buffer_handle(target);
  command.fill.offset = offset;
  command.fill.length = length;
  command.fill.pattern = pattern;
  return push_command(cb, &command);
}

static kiln_status_t cb_update(kiln_hal_command_buffer_t* base,
                               const void* data, kiln_hal_buffer_t* target,
                               uint64_t offset, uint64_t length) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  if (length > SIZE_MAX / 2) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "update: %llu bytes is too large",
                            (unsigned long long)length);
  }
  KILN_RETURN_IF_ERROR(keep_buffer(cb, target));
  cmd_t command = {.type = CMD_UPDATE};
  KILN_RETURN_IF_ERROR(
      push_bytes(cb, data, (size_t)length, &command.update.data_offset));
  command.update.target = kiln_vk_buffer_handle(target);
  command.update.offset = offset;
  command.update.length = length;
  return push_command(cb, &command);
}

static kiln_status_t cb_copy(kiln_hal_command_buffer_t* base,
                             kiln_hal_buffer_t* source, uint64_t source_offset,
                             kiln_hal_buffer_t* target, uint64_t target_offset,
                             uint64_t length) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  KILN_RETURN_IF_ERROR(keep_buffer(cb, source));
  KILN_RETURN_IF_ERROR(keep_buffer(cb, target));
  cmd_t command = {.type = CMD_COPY};
  command.copy.source = kiln_vk_buffer_handle(source);
  command.copy.target = kiln_vk_buffer_handle(target);
  command.copy.source_offset = source_offset;
  command.copy.target_offset = target_offset;
  command.copy.length = length;
  return push_command(cb, &command);
}

static void stage_masks(kiln_hal_stages_t stages, VkPipelineStageFlags* out_stages,
                        VkAccessFlags* out_reads, VkAccessFlags* out_writes) {
  *out_stages = 0;
  *out_reads = 0;
  *out_writes = 0;
  if (stages & KILN_HAL_STAGE_DISPATCH) {
    *out_stages |= VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT;
    *out_reads |= VK_ACCESS_SHADER_READ_BIT;
    *out_writes |= VK_ACCESS_SHADER_WRITE_BIT;
  }
  if (stages & KILN_HAL_STAGE_TRANSFER) {
    *out_stages |= VK_PIPELINE_STAGE_TRANSFER_BIT;
    *out_reads |= VK_ACCESS_TRANSFER_READ_BIT;
    *out_writes |= VK_ACCESS_TRANSFER_WRITE_BIT;
  }
  if (stages & KILN_HAL_STAGE_HOST) {
    *out_stages |= VK_PIPELINE_STAGE_HOST_BIT;
    *out_reads |= VK_ACCESS_HOST_READ_BIT;
    *out_writes |= VK_ACCESS_HOST_WRITE_BIT;
  }
}

static kiln_status_t cb_barrier(kiln_hal_command_buffer_t* base,
                                kiln_hal_stages_t source,
                                kiln_hal_stages_t target) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  cmd_t command = {.type = CMD_BARRIER};
  VkAccessFlags reads, writes;
  stage_masks(source, &command.barrier.source_stages, &reads, &writes);
  command.barrier.source_access = writes;
  stage_masks(target, &command.barrier.target_stages, &reads, &writes);
  command.barrier.target_access = reads | writes;
  return push_command(cb, &command);
}

static kiln_status_t cb_dispatch(kiln_hal_command_buffer_t* base,
                                 const kiln_hal_dispatch_t* dispatch) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  KILN_RETURN_IF_ERROR(keep_executable(cb, dispatch->executable));
  cmd_t command = {.type = CMD_DISPATCH};
  command.dispatch.executable = (kiln_vk_executable_t*)dispatch->executable;
  command.dispatch.entry_point = dispatch->entry_point;
  memcpy(command.dispatch.counts, dispatch->workgroup_count,
         sizeof(command.dispatch.counts));
  command.dispatch.push_bytes = dispatch->push_constant_bytes;
  if (dispatch->push_constant_bytes) {
    KILN_RETURN_IF_ERROR(push_bytes(cb, dispatch->push_constants,
                                    dispatch->push_constant_bytes,
                                    &command.dispatch.push_offset));
  }
  KILN_RETURN_IF_ERROR(grow(cb, (void**)&cb->bindings, &cb->binding_capacity,
                            cb->binding_count + dispatch->binding_count,
                            sizeof(kiln_hal_binding_t)));
  for (uint32_t i = 0; i < dispatch->binding_count; ++i) {
    if (dispatch->bindings[i].buffer) {
      KILN_RETURN_IF_ERROR(keep_buffer(cb, dispatch->bindings[i].buffer));
    }
  }
  command.dispatch.binding_start = cb->binding_count;
  command.dispatch.binding_count = dispatch->binding_count;
  if (dispatch->binding_count) {
    memcpy(cb->bindings + cb->binding_count, dispatch->bindings,
           dispatch->binding_count * sizeof(kiln_hal_binding_t));
  }
  cb->binding_count += dispatch->binding_count;
  return push_command(cb, &command);
}

// ---- translation into Vulkan ----

// Resolves a binding (a buffer or a table slot) to a descriptor.
static kiln_status_t resolve_binding(kiln_vk_command_buffer_t* cb,
                                     const kiln_hal_binding_t* binding,
                                     const kiln_hal_binding_table_t* table,
                                     VkDescriptorBufferInfo* out_info,
                                     const kiln_hal_buffer_t** out_buffer) {
  if (binding->buffer) {
    *out_buffer = binding->buffer;
    out_info->buffer = kiln_vk_buffer_handle(binding->buffer);
    out_info->offset = binding->offset;
    out_info->range = binding->length;
    return kiln_ok_status();
  }
  const kiln_hal_binding_table_entry_t* entry = &table->entries[binding->slot];
  uint64_t entry_length = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_buffer_check_range(
      entry->buffer, "binding table entry", entry->offset, entry->length,
      &entry_length));
  const kiln_hal_device_info_t* info = &cb->base.device->info;
  uint64_t length = binding->length;
  if (length == KILN_HAL_WHOLE_BUFFER) {
    if (binding->offset > entry_length) length = UINT64_MAX;
    else length = entry_length - binding->offset;
  }
  if (length == UINT64_MAX ||
      !kiln_range_fits(binding->offset, length, entry_length)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "slot %u: binding range [%llu, +%llu) does not "
                            "fit the table entry's %llu bytes",
                            binding->slot, (unsigned long long)binding->offset,
                            (unsigned long long)binding->length,
                            (unsigned long long)entry_length);
  }
  uint64_t offset = entry->offset + binding->offset;
  if (offset % info->min_storage_buffer_offset_alignment || length == 0 ||
      length > info->limits.max_storage_buffer_range) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "slot %u: offset %llu must be a multiple of %llu "
                            "and length %llu in 1..%llu",
                            binding->slot, (unsigned long long)offset,
                            (unsigned long long)
                                info->min_storage_buffer_offset_alignment,
                            (unsigned long long)length,
                            (unsigned long long)
                                info->limits.max_storage_buffer_range);
  }
  *out_buffer = entry->buffer;
  out_info->buffer = kiln_vk_buffer_handle(entry->buffer);
  out_info->offset = offset;
  out_info->range = length;
  return kiln_ok_status();
}

// Rounds a storage range up to whole 16-byte units inside the VkBuffer (its
// size is rounded to 16), as texel views are: kernels address vec4 arrays,
// and the HAL's robust-access pass clamps any index past the last whole vec4
// of the range (OpArrayLength rounds down), which would move a write to a
// tensor's partial last vec4 onto the one before it.
static void round_storage_range(const kiln_vk_command_buffer_t* cb,
                                const kiln_hal_buffer_t* buffer,
                                VkDescriptorBufferInfo* info) {
  if (info->range == VK_WHOLE_SIZE || info->range > UINT64_MAX - 15) return;
  uint64_t vk_size = kiln_vk_buffer_vk_size(buffer);
  uint64_t rounded = (info->range + 15) & ~(uint64_t)15;
  if (info->offset <= vk_size && rounded <= vk_size - info->offset &&
      rounded <= cb->base.device->info.limits.max_storage_buffer_range) {
    info->range = rounded;
  }
}

// Views a resolved binding as vec4 f32 texels: the range is rounded up to
// whole texels, which stay inside the VkBuffer (its size is rounded to 16).
static kiln_status_t make_texel_view(kiln_vk_command_buffer_t* cb,
                                     const kiln_hal_buffer_t* buffer,
                                     const VkDescriptorBufferInfo* info,
                                     uint32_t set, uint32_t binding,
                                     VkBufferView* out_view) {
  kiln_vk_device_t* device = cb_device(cb);
  const kiln_vk_device_support_t* support = &device->support;
  uint64_t vk_size = kiln_vk_buffer_vk_size(buffer);
  uint64_t range = info->range;
  if (range == VK_WHOLE_SIZE) range = vk_size - info->offset;
  range = (range + 15) & ~(uint64_t)15;
  if (info->offset % support->min_texel_buffer_offset_alignment ||
      info->offset % 16 || range == 0 || info->offset > vk_size ||
      range > ((vk_size - info->offset) & ~(uint64_t)15) ||
      range / 16 > support->max_texel_buffer_elements) {
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "texel binding (set %u, binding %u): offset %llu must be a multiple "
        "of %llu and 16, and %llu bytes (rounded to texels) must fit the "
        "buffer's %llu bytes and %u texels of device '%s'",
        set, binding, (unsigned long long)info->offset,
        (unsigned long long)support->min_texel_buffer_offset_alignment,
        (unsigned long long)range, (unsigned long long)vk_size,
        support->max_texel_buffer_elements, cb->base.device->info.name);
  }
  KILN_RETURN_IF_ERROR(grow(cb, (void**)&cb->views, &cb->view_capacity,
                            cb->view_count + 1, sizeof(*cb->views)));
  VkBufferViewCreateInfo view_info = {
      .sType = VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO,
      .buffer = info->buffer,
      .format = VK_FORMAT_R32G32B32A32_SFLOAT,
      .offset = info->offset,
      .range = range,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkCreateBufferView(device->device, &view_info, NULL, out_view),
      "vkCreateBufferView"));
  cb->views[cb->view_count++] = *out_view;
  return kiln_ok_status();
}

// The layout type of (set, binding) in the dispatched entry point.
static bool binding_is_texel(const kiln_hal_entry_point_spec_t* spec,
                             uint32_t set, uint32_t binding) {
  for (uint32_t i = 0; i < spec->binding_count; ++i) {
    if (spec->bindings[i].set == set && spec->bindings[i].binding == binding) {
      return spec->bindings[i].type ==
             KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32;
    }
  }
  return false;
}

// Sizes the descriptor pool for dispatches that cannot push descriptors.
static kiln_status_t prepare_descriptor_pool(kiln_vk_command_buffer_t* cb) {
  kiln_vk_device_t* device = cb_device(cb);
  uint32_t sets = 0, descriptors = 0, texels = 0;
  for (size_t i = 0; i < cb->command_count; ++i) {
    const cmd_t* command = &cb->commands[i];
    if (command->type != CMD_DISPATCH) continue;
    const kiln_vk_entry_point_t* entry =
        &command->dispatch.executable->entry_points[command->dispatch.entry_point];
    if (entry->use_push_descriptors) continue;
    for (uint32_t s = 0; s < entry->set_count; ++s) {
      if (entry->set_binding_counts[s]) sets++;
    }
    descriptors += command->dispatch.binding_count - entry->texel_binding_count;
    texels += entry->texel_binding_count;
  }
  if (sets == 0) return kiln_ok_status();
  if (cb->descriptor_pool && sets <= cb->descriptor_pool_sets &&
      descriptors <= cb->descriptor_pool_descriptors &&
      texels <= cb->descriptor_pool_texels) {
    return kiln_vk_result_status(
        device->vk.vkResetDescriptorPool(device->device, cb->descriptor_pool, 0),
        "vkResetDescriptorPool");
  }
  if (cb->descriptor_pool) {
    device->vk.vkDestroyDescriptorPool(device->device, cb->descriptor_pool,
                                       NULL);
    cb->descriptor_pool = VK_NULL_HANDLE;
  }
  // A pool size must not be 0.
  VkDescriptorPoolSize sizes[2];
  uint32_t size_count = 0;
  if (descriptors) {
    sizes[size_count++] = (VkDescriptorPoolSize){VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                 descriptors};
  }
  if (texels) {
    sizes[size_count++] = (VkDescriptorPoolSize){
        VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, texels};
  }
  VkDescriptorPoolCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
      .maxSets = sets,
      .poolSizeCount = size_count,
      .pPoolSizes = sizes,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkCreateDescriptorPool(device->device, &info, NULL,
                                        &cb->descriptor_pool),
      "vkCreateDescriptorPool"));
  cb->descriptor_pool_sets = sets;
  cb->descriptor_pool_descriptors = descriptors;
  cb->descriptor_pool_texels = texels;
  return kiln_ok_status();
}

static bool span_stamped(const kiln_vk_command_buffer_t* cb) {
  return cb->base.flags &
         (KILN_HAL_COMMAND_BUFFER_TIMESTAMPS | KILN_HAL_COMMAND_BUFFER_SPAN_TIMESTAMPS);
}

static kiln_status_t prepare_query_pool(kiln_vk_command_buffer_t* cb) {
  if (!span_stamped(cb)) return kiln_ok_status();
  // Two per dispatch (written only with KILN_HAL_COMMAND_BUFFER_TIMESTAMPS),
  // then two around the whole recording.
  uint32_t needed = 2 * cb->base.dispatch_count + 2;
  if (needed <= cb->query_capacity) return kiln_ok_status();
  kiln_vk_device_t* device = cb_device(cb);
  if (cb->query_pool) {
    device->vk.vkDestroyQueryPool(device->device, cb->query_pool, NULL);
    cb->query_pool = VK_NULL_HANDLE;
    cb->query_capacity = 0;
  }
  VkQueryPoolCreateInfo info = {
      .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
      .queryType = VK_QUERY_TYPE_TIMESTAMP,
      .queryCount = needed,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkCreateQueryPool(device->device, &info, NULL,
                                   &cb->query_pool),
      "vkCreateQueryPool"));
  cb->query_capacity = needed;
  return kiln_ok_status();
}

static kiln_status_t record_dispatch(kiln_vk_command_buffer_t* cb,
                                     const cmd_t* command,
                                     const kiln_hal_binding_table_t* table,
                                     VkPipeline* io_bound_pipeline,
                                     uint32_t dispatch_index) {
  kiln_vk_device_t* device = cb_device(cb);
  const struct VolkDeviceTable* vk = &device->vk;
  const kiln_vk_entry_point_t* entry =
      &command->dispatch.executable->entry_points[command->dispatch.entry_point];
  if (*io_bound_pipeline != entry->pipeline) {
    vk->vkCmdBindPipeline(cb->handle, VK_PIPELINE_BIND_POINT_COMPUTE,
                          entry->pipeline);
    *io_bound_pipeline = entry->pipeline;
  }
  const kiln_hal_binding_t* bindings = cb->bindings + command->dispatch.binding_start;
  uint32_t binding_count = command->dispatch.binding_count;
  const kiln_hal_entry_point_spec_t* spec = kiln_hal_executable_entry_point(
      &command->dispatch.executable->base, command->dispatch.entry_point);
  for (uint32_t set = 0; set < entry->set_count && binding_count; ++set) {
    if (!entry->set_binding_counts[set]) continue;
    VkDescriptorBufferInfo infos[KILN_HAL_MAX_BINDINGS_PER_DISPATCH];
    VkBufferView views[KILN_HAL_MAX_BINDINGS_PER_DISPATCH];
    VkWriteDescriptorSet writes[KILN_HAL_MAX_BINDINGS_PER_DISPATCH];
    uint32_t write_count = 0;
    for (uint32_t i = 0; i < binding_count; ++i) {
      if (bindings[i].set != set) continue;
      const kiln_hal_buffer_t* buffer = NULL;
      KILN_RETURN_IF_ERROR(resolve_binding(cb, &bindings[i], table,
                                           &infos[write_count], &buffer));
      writes[write_count] = (VkWriteDescriptorSet){
          .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
          .dstBinding = bindings[i].binding,
          .descriptorCount = 1,
          .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
          .pBufferInfo = &infos[write_count],
      };
      if (binding_is_texel(spec, set, bindings[i].binding)) {
        KILN_RETURN_IF_ERROR(make_texel_view(cb, buffer, &infos[write_count], set,
                                             bindings[i].binding,
                                             &views[write_count]));
        writes[write_count].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
        writes[write_count].pBufferInfo = NULL;
        writes[write_count].pTexelBufferView = &views[write_count];
      } else {
        round_storage_range(cb, buffer, &infos[write_count]);
      }
      write_count++;
    }
    if (entry->use_push_descriptors) {
      vk->vkCmdPushDescriptorSetKHR(cb->handle, VK_PIPELINE_BIND_POINT_COMPUTE,
                                    entry->layout, set, write_count, writes);
      continue;
    }
    VkDescriptorSetAllocateInfo allocate_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = cb->descriptor_pool,
        .descriptorSetCount = 1,
        .pSetLayouts = &entry->set_layouts[set],
    };
    VkDescriptorSet descriptor_set = VK_NULL_HANDLE;
    KILN_RETURN_IF_ERROR(kiln_vk_result_status(
        vk->vkAllocateDescriptorSets(device->device, &allocate_info,
                                     &descriptor_set),
        "vkAllocateDescriptorSets"));
    for (uint32_t i = 0; i < write_count; ++i) writes[i].dstSet = descriptor_set;
    vk->vkUpdateDescriptorSets(device->device, write_count, writes, 0, NULL);
    vk->vkCmdBindDescriptorSets(cb->handle, VK_PIPELINE_BIND_POINT_COMPUTE,
                                entry->layout, set, 1, &descriptor_set, 0,
                                NULL);
  }
  if (command->dispatch.push_bytes) {
    vk->vkCmdPushConstants(cb->handle, entry->layout,
                           VK_SHADER_STAGE_COMPUTE_BIT, 0,
                           command->dispatch.push_bytes,
                           cb->bytes + command->dispatch.push_offset);
  }
  bool timestamps = cb->base.flags & KILN_HAL_COMMAND_BUFFER_TIMESTAMPS;
  if (timestamps) {
    vk->vkCmdWriteTimestamp(cb->handle, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                            cb->query_pool, 2 * dispatch_index);
  }
  vk->vkCmdDispatch(cb->handle, command->dispatch.counts[0],
                    command->dispatch.counts[1], command->dispatch.counts[2]);
  if (timestamps) {
    vk->vkCmdWriteTimestamp(cb->handle, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                            cb->query_pool, 2 * dispatch_index + 1);
  }
  return kiln_ok_status();
}

static kiln_status_t translate(kiln_vk_command_buffer_t* cb,
                               const kiln_hal_binding_table_t* table) {
  kiln_vk_device_t* device = cb_device(cb);
  const struct VolkDeviceTable* vk = &device->vk;
  cb->translated = false;
  destroy_views(cb);  // callers waited for the GPU
  KILN_RETURN_IF_ERROR(prepare_descriptor_pool(cb));
  KILN_RETURN_IF_ERROR(prepare_query_pool(cb));
  VkCommandBufferBeginInfo begin = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
      .flags = VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      vk->vkBeginCommandBuffer(cb->handle, &begin), "vkBeginCommandBuffer"));
  const bool timestamps = span_stamped(cb);
  const uint32_t total_query = 2 * cb->base.dispatch_count;
  if (timestamps) {
    vk->vkCmdResetQueryPool(cb->handle, cb->query_pool, 0, total_query + 2);
    vk->vkCmdWriteTimestamp(cb->handle, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT,
                            cb->query_pool, total_query);
  }
  VkPipeline bound = VK_NULL_HANDLE;
  uint32_t dispatch_index = 0;
  kiln_status_t status = kiln_ok_status();
  for (size_t i = 0; i < cb->command_count && !status; ++i) {
    const cmd_t* command = &cb->commands[i];
    switch (command->type) {
      case CMD_FILL:
        vk->vkCmdFillBuffer(cb->handle, command->fill.target,
                            command->fill.offset, command->fill.length,
                            command->fill.pattern);
        break;
      case CMD_UPDATE: {
        // vkCmdUpdateBuffer takes at most 64 KiB per call.
        for (uint64_t done = 0; done < command->update.length;) {
          uint64_t chunk = command->update.length - done;
          if (chunk > 65536) chunk = 65536;
          vk->vkCmdUpdateBuffer(cb->handle, command->update.target,
                                command->update.offset + done, chunk,
                                cb->bytes + command->update.data_offset + done);
          done += chunk;
        }
        break;
      }
      case CMD_COPY: {
        VkBufferCopy region = {command->copy.source_offset,
                               command->copy.target_offset,
                               command->copy.length};
        vk->vkCmdCopyBuffer(cb->handle, command->copy.source,
                            command->copy.target, 1, &region);
        break;
      }
      case CMD_BARRIER: {
        VkMemoryBarrier barrier = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
            .srcAccessMask = command->barrier.source_access,
            .dstAccessMask = command->barrier.target_access,
        };
        vk->vkCmdPipelineBarrier(cb->handle, command->barrier.source_stages,
                                 command->barrier.target_stages, 0, 1,
                                 &barrier, 0, NULL, 0, NULL);
        break;
      }
      case CMD_DISPATCH:
        status = record_dispatch(cb, command, table, &bound, dispatch_index++);
        break;
    }
  }
  if (timestamps) {
    vk->vkCmdWriteTimestamp(cb->handle, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                            cb->query_pool, total_query + 1);
  }
  VkResult end_result = vk->vkEndCommandBuffer(cb->handle);
  KILN_RETURN_IF_ERROR(status);
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(end_result, "vkEndCommandBuffer"));
  cb->translated = true;
  cb->translated_dispatch_count = dispatch_index;
  return kiln_ok_status();
}

static kiln_status_t cb_end(kiln_hal_command_buffer_t* base) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  if (base->slot_count) return kiln_ok_status();  // translated at submit
  static const kiln_hal_binding_table_t kEmpty = {NULL, 0};
  return translate(cb, &kEmpty);
}

static bool table_matches(const kiln_vk_command_buffer_t* cb,
                          const kiln_hal_binding_table_t* table,
                          uint32_t slots) {
  if (cb->bound_table_count != slots) return false;
  for (uint32_t i = 0; i < slots; ++i) {
    const kiln_hal_binding_table_entry_t* a = &cb->bound_table[i];
    const kiln_hal_binding_table_entry_t* b = &table->entries[i];
    if (a->buffer != b->buffer || a->offset != b->offset ||
        a->length != b->length) {
      return false;
    }
  }
  return true;
}

// Lists the slot bindings of the recording (once).
static kiln_status_t list_slot_refs(kiln_vk_command_buffer_t* cb) {
  if (cb->slot_refs_listed) return kiln_ok_status();
  cb->slot_ref_count = 0;
  for (size_t c = 0; c < cb->command_count; ++c) {
    const cmd_t* command = &cb->commands[c];
    if (command->type != CMD_DISPATCH) continue;
    const kiln_hal_entry_point_spec_t* spec = kiln_hal_executable_entry_point(
        &command->dispatch.executable->base, command->dispatch.entry_point);
    for (uint32_t b = 0; b < command->dispatch.binding_count; ++b) {
      size_t index = command->dispatch.binding_start + b;
      const kiln_hal_binding_t* binding = &cb->bindings[index];
      if (binding->buffer) continue;
      if (index >= 0x80000000u) {
        return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "too many bindings");
      }
      uint32_t ref = (uint32_t)index;
      for (uint32_t l = 0; l < spec->binding_count; ++l) {
        if (spec->bindings[l].set == binding->set &&
            spec->bindings[l].binding == binding->binding && !spec->bindings[l].read_only) {
          ref |= 0x80000000u;
        }
      }
      KILN_RETURN_IF_ERROR(grow(cb, (void**)&cb->slot_refs, &cb->slot_ref_capacity,
                                cb->slot_ref_count + 1, sizeof(*cb->slot_refs)));
      cb->slot_refs[cb->slot_ref_count++] = ref;
    }
  }
  cb->slot_refs_listed = true;
  return kiln_ok_status();
}

// Checks every slot binding against the caller's `table` (the errors a
// direct translation would give) and fills each slot's bound range and
// the entries' lengths.
static kiln_status_t check_slot_bindings(kiln_vk_command_buffer_t* cb,
                                         const kiln_hal_binding_table_t* table,
                                         uint64_t* lengths,
                                         kiln_vk_slot_range_t* ranges) {
  KILN_RETURN_IF_ERROR(list_slot_refs(cb));
  uint32_t slots = cb->base.slot_count;
  for (uint32_t i = 0; i < slots; ++i) {
    const kiln_hal_binding_table_entry_t* entry = &table->entries[i];
    KILN_RETURN_IF_ERROR(kiln_hal_buffer_check_range(
        entry->buffer, "binding table entry", entry->offset, entry->length,
        &lengths[i]));
    ranges[i] = (kiln_vk_slot_range_t){UINT64_MAX, 0, false};
  }
  for (size_t r = 0; r < cb->slot_ref_count; ++r) {
    const kiln_hal_binding_t* binding = &cb->bindings[cb->slot_refs[r] & 0x7fffffffu];
    VkDescriptorBufferInfo info;
    const kiln_hal_buffer_t* buffer = NULL;
    KILN_RETURN_IF_ERROR(resolve_binding(cb, binding, table, &info, &buffer));
    kiln_vk_slot_range_t* range = &ranges[binding->slot];
    uint64_t begin = info.offset - table->entries[binding->slot].offset;
    if (begin < range->begin) range->begin = begin;
    if (begin + info.range > range->end) range->end = begin + info.range;
    if (cb->slot_refs[r] & 0x80000000u) range->written = true;
  }
  return kiln_ok_status();
}

// Larger tables bind directly (the hal module passes at most 256).
enum { kMaxStagedSlots = 256 };

// The staged path: translate against own buffers when their lengths no
// longer match, record the copies when the caller's table changed. The
// same table a second time in a row is bound directly from then on
// (vulkan_slot_staging.c): on an H100 the copies of MatMul 4096^3's 192
// MiB took 0.5 ms a call (f16 1.58 -> 1.08 ms wall, fp32 4.12 -> 3.65;
// MobileNetV2 0.598 -> 0.582; alternating A/B runs).
static kiln_status_t prepare_staged(kiln_vk_command_buffer_t* cb,
                                    const kiln_hal_binding_table_t* table) {
  kiln_vk_slot_staging_t* staging = &cb->staging;
  uint32_t slots = cb->base.slot_count;
  if (cb->translated && kiln_vk_slot_staging_io_matches(staging, table)) {
    if (!cb->staged || !kiln_vk_slot_staging_bindable(table, slots)) return kiln_ok_status();
    KILN_RETURN_IF_ERROR(wait_pending(cb));
    cb->staged = false;
    KILN_RETURN_IF_ERROR(translate(cb, table));
    return kiln_vk_slot_staging_record_barriers(staging, cb_device(cb), cb->pool);
  }
  uint64_t lengths[kMaxStagedSlots];
  kiln_vk_slot_range_t ranges[kMaxStagedSlots];
  KILN_RETURN_IF_ERROR(check_slot_bindings(cb, table, lengths, ranges));
  // Neither the own buffers nor the copies may change under a pending
  // execution.
  KILN_RETURN_IF_ERROR(wait_pending(cb));
  const bool fits = kiln_vk_slot_staging_fits(staging, lengths, slots);
  if (!(cb->translated && cb->staged && fits)) {
    release_bound_table(cb);
    cb->translated = cb->staged = false;
    if (!fits) {
      KILN_RETURN_IF_ERROR(
          kiln_vk_slot_staging_allocate(staging, cb->base.device, lengths, slots));
    }
    kiln_hal_binding_table_t own = {staging->table, slots};
    KILN_RETURN_IF_ERROR(translate(cb, &own));
    cb->staged = true;
  }
  memcpy(staging->ranges, ranges, slots * sizeof(ranges[0]));
  return kiln_vk_slot_staging_record_io(staging, cb_device(cb), cb->pool, table);
}

// The direct path (table buffers that cannot be copied): translate against
// the caller's table whenever it changed.
static kiln_status_t prepare_direct(kiln_vk_command_buffer_t* cb,
                                    const kiln_hal_binding_table_t* table) {
  uint32_t slots = cb->base.slot_count;
  if (cb->translated && !cb->staged && table_matches(cb, table, slots)) {
    return kiln_ok_status();
  }
  // Re-recording must not race a pending execution of the old recording.
  KILN_RETURN_IF_ERROR(wait_pending(cb));
  kiln_vk_slot_staging_reset(&cb->staging);
  cb->staged = false;
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc_array(
      cb->base.device->allocator, slots, sizeof(*cb->bound_table),
      (void**)&cb->bound_table));
  kiln_hal_binding_table_entry_t* copy = cb->bound_table;
  for (uint32_t i = 0; i < slots; ++i) kiln_hal_buffer_retain(table->entries[i].buffer);
  // The old entries are released after the new ones are retained, so a
  // buffer in both stays alive.
  for (uint32_t i = 0; i < cb->bound_table_count; ++i) {
    kiln_hal_buffer_release(copy[i].buffer);
  }
  memcpy(copy, table->entries, slots * sizeof(*copy));
  cb->bound_table = copy;
  cb->bound_table_count = slots;
  return translate(cb, table);
}

kiln_status_t kiln_vk_command_buffer_prepare_submit(
    kiln_hal_command_buffer_t* base, const kiln_hal_binding_table_t* table,
    VkCommandBuffer out_handles[KILN_VK_MAX_HANDLES_PER_COMMAND_BUFFER],
    uint32_t* out_handle_count) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  *out_handle_count = 0;
  uint32_t slots = base->slot_count;
  bool staged = false;
  if (slots) {
    staged = slots <= kMaxStagedSlots && kiln_vk_slot_staging_usable(table, slots);
    KILN_RETURN_IF_ERROR(staged ? prepare_staged(cb, table) : prepare_direct(cb, table));
  }
  if (!cb->translated) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "command buffer has no valid recording (an "
                            "earlier translation failed)");
  }
  uint32_t count = 0;
  if (staged) out_handles[count++] = cb->staging.copy_in;
  out_handles[count++] = cb->handle;
  if (staged) out_handles[count++] = cb->staging.copy_out;
  *out_handle_count = count;
  return kiln_ok_status();
}

bool kiln_vk_command_buffer_binds_table(const kiln_hal_command_buffer_t* base) {
  const kiln_vk_command_buffer_t* cb = (const kiln_vk_command_buffer_t*)base;
  return base->slot_count && cb->translated && !cb->staged;
}

void kiln_vk_command_buffer_mark_submitted(kiln_hal_command_buffer_t* base,
                                           uint64_t submit_value) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  cb->last_submit_value = submit_value;
  // Read by kiln_vk_buffer_reuse_take (any thread): the table's buffers
  // are not reused before this submission finished.
  __atomic_store_n(&cb->staging.io_last_use, submit_value, __ATOMIC_RELEASE);
}

static kiln_status_t cb_dispatch_time_ns(kiln_hal_command_buffer_t* base,
                                         uint32_t dispatch_index,
                                         double* out_ns) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  if (!cb->last_submit_value || !cb->translated) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "dispatch_time_ns: the command buffer has not "
                            "been submitted");
  }
  KILN_RETURN_IF_ERROR(wait_pending(cb));
  kiln_vk_device_t* device = cb_device(cb);
  uint64_t stamps[2] = {0, 0};
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      device->vk.vkGetQueryPoolResults(
          device->device, cb->query_pool, 2 * dispatch_index, 2,
          sizeof(stamps), stamps, sizeof(uint64_t),
          VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
      "vkGetQueryPoolResults"));
  uint32_t bits = device->support.timestamp_valid_bits;
  uint64_t mask = bits >= 64 ? UINT64_MAX : ((uint64_t)1 << bits) - 1;
  uint64_t ticks = (stamps[1] - stamps[0]) & mask;
  *out_ns = (double)ticks * base->device->info.timestamp_period_ns;
  return kiln_ok_status();
}

static void cb_destroy(kiln_hal_command_buffer_t* base) {
  kiln_vk_command_buffer_t* cb = (kiln_vk_command_buffer_t*)base;
  kiln_vk_device_t* device = cb_device(cb);
  kiln_status_ignore(wait_pending(cb));
  clear_recording(cb);
  if (cb->descriptor_pool) {
    device->vk.vkDestroyDescriptorPool(device->device, cb->descriptor_pool,
                                       NULL);
  }
  if (cb->query_pool) {
    device->vk.vkDestroyQueryPool(device->device, cb->query_pool, NULL);
  }
  if (cb->pool) device->vk.vkDestroyCommandPool(device->device, cb->pool, NULL);
  kiln_allocator_t allocator = device->base.allocator;
  kiln_allocator_free(allocator, cb->commands);
  kiln_allocator_free(allocator, cb->bindings);
  kiln_allocator_free(allocator, cb->bytes);
  kiln_allocator_free(allocator, cb->buffers);
  kiln_allocator_free(allocator, cb->executables);
  kiln_allocator_free(allocator, cb->bound_table);
  kiln_allocator_free(allocator, cb->views);
  kiln_vk_slot_staging_deinit(&cb->staging, allocator);
  kiln_allocator_free(allocator, cb->slot_refs);
  kiln_allocator_free(device->base.allocator, cb);
  kiln_hal_device_release(&device->base);
}

static const kiln_hal_command_buffer_vtable_t kCommandBufferVtable = {
    .destroy = cb_destroy,
    .begin = cb_begin,
    .end = cb_end,
    .fill = cb_fill,
    .update = cb_update,
    .copy = cb_copy,
    .barrier = cb_barrier,
    .dispatch = cb_dispatch,
    .dispatch_time_ns = cb_dispatch_time_ns,
};

kiln_status_t kiln_vk_command_buffer_create(
    kiln_hal_device_t* base, kiln_hal_command_buffer_flags_t flags,
    kiln_hal_command_buffer_t** out) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  kiln_vk_command_buffer_t* cb = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(base->allocator, sizeof(*cb), (void**)&cb));
  // One pool per command buffer: pools are externally synchronized, so
  // command buffers on different threads never share one.
  VkCommandPoolCreateInfo pool_info = {
      .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
      .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
      .queueFamilyIndex = device->support.queue_family,
  };
  kiln_status_t status = kiln_vk_result_status(
      device->vk.vkCreateCommandPool(device->device, &pool_info, NULL,
                                     &cb->pool),
      "vkCreateCommandPool");
  if (!status) {
    VkCommandBufferAllocateInfo allocate_info = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = cb->pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    status = kiln_vk_result_status(
        device->vk.vkAllocateCommandBuffers(device->device, &allocate_info,
                                            &cb->handle),
        "vkAllocateCommandBuffers");
  }
  if (status) {
    if (cb->pool) device->vk.vkDestroyCommandPool(device->device, cb->pool, NULL);
    kiln_allocator_free(base->allocator, cb);
    return status;
  }
  kiln_hal_resource_init(&cb->base.resource, &kCommandBufferVtable);
  kiln_hal_device_retain(base);
  cb->base.device = base;
  cb->base.flags = flags;
  *out = &cb->base;
  return kiln_ok_status();
}
