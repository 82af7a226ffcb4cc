// Device wrappers: argument checks before the driver's vtable.
#include <stdio.h>
#include <string.h>

#include "kiln/base/memory_budget.h"
#include "kiln/hal/driver_api.h"

#define DEVICE_VTABLE(device) \
  ((const kiln_hal_device_vtable_t*)(device)->resource.vtable)

void kiln_hal_device_options_init(kiln_hal_device_options_t* options) {
  memset(options, 0, sizeof(*options));
  options->print_validation_messages = true;
}

void kiln_hal_device_retain(kiln_hal_device_t* device) {
  if (device) kiln_hal_resource_retain(&device->resource);
}

void kiln_hal_device_release(kiln_hal_device_t* device) {
  if (device && kiln_hal_resource_release(&device->resource)) {
    kiln_memory_budget_t* budget = device->memory_budget;
    DEVICE_VTABLE(device)->destroy(device);
    kiln_memory_budget_release(budget);  // after the buffers are gone
  }
}

const kiln_hal_device_info_t* kiln_hal_device_info(
    const kiln_hal_device_t* device) {
  return &device->info;
}

kiln_allocator_t kiln_hal_device_allocator(const kiln_hal_device_t* device) {
  return device->allocator;
}

uint64_t kiln_hal_device_validation_message_count(
    const kiln_hal_device_t* device) {
  return __atomic_load_n(&device->validation_message_count, __ATOMIC_ACQUIRE);
}

const char* kiln_hal_device_last_validation_message(
    const kiln_hal_device_t* device) {
  return device->last_validation_message;
}

void kiln_hal_device_record_validation_message(kiln_hal_device_t* device,
                                               const char* message) {
  snprintf(device->last_validation_message,
           sizeof(device->last_validation_message), "%s", message);
  __atomic_fetch_add(&device->validation_message_count, 1, __ATOMIC_RELEASE);
}

static kiln_status_t check_semaphores(kiln_hal_device_t* device,
                                      const kiln_hal_semaphore_value_t* list,
                                      uint32_t count, const char* what) {
  if (count && !list) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "submit: %u %s semaphores but no list", count,
                            what);
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (!list[i].semaphore || list[i].semaphore->device != device) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "submit: %s semaphore %u is %s", what, i,
                              list[i].semaphore ? "from another device"
                                                : "NULL");
    }
  }
  return kiln_ok_status();
}

kiln_status_t kiln_hal_device_queue_submit(
    kiln_hal_device_t* device, const kiln_hal_submit_batch_t* batch) {
  KILN_RETURN_IF_ERROR(
      check_semaphores(device, batch->waits, batch->wait_count, "wait"));
  KILN_RETURN_IF_ERROR(
      check_semaphores(device, batch->signals, batch->signal_count, "signal"));
  if (batch->command_buffer_count && !batch->command_buffers) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "submit: %u command buffers but no list",
                            batch->command_buffer_count);
  }
  for (uint32_t i = 0; i < batch->command_buffer_count; ++i) {
    const kiln_hal_command_buffer_t* command_buffer =
        batch->command_buffers[i];
    if (!command_buffer || command_buffer->device != device) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "submit: command buffer %u is %s", i,
                              command_buffer ? "from another device" : "NULL");
    }
    if (command_buffer->state != KILN_HAL_COMMAND_BUFFER_STATE_EXECUTABLE) {
      return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                              "submit: command buffer %u was not ended", i);
    }
    uint32_t table_count =
        batch->binding_tables ? batch->binding_tables[i].count : 0;
    if (table_count < command_buffer->slot_count) {
      return kiln_make_status(
          KILN_STATUS_INVALID_ARGUMENT,
          "submit: command buffer %u uses binding slots 0..%u but its "
          "binding table has %u entries",
          i, command_buffer->slot_count - 1, table_count);
    }
    for (uint32_t slot = 0; slot < table_count; ++slot) {
      const kiln_hal_binding_table_entry_t* entry =
          &batch->binding_tables[i].entries[slot];
      if (!entry->buffer || entry->buffer->device != device) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "submit: binding table %u slot %u: buffer is "
                                "%s",
                                i, slot,
                                entry->buffer ? "from another device" : "NULL");
      }
      if (!(entry->buffer->params.usage &
            KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE)) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "submit: binding table %u slot %u: buffer "
                                "lacks DISPATCH_STORAGE usage",
                                i, slot);
      }
      if (entry->buffer->immutable &&
          ((command_buffer->written_slots[slot / 64] >> (slot % 64)) & 1)) {
        return kiln_make_status(KILN_STATUS_PERMISSION_DENIED,
                                "submit: binding table %u slot %u: the "
                                "buffer is immutable (shared constants) but "
                                "a dispatch binds the slot writable",
                                i, slot);
      }
      uint64_t length = 0;
      KILN_RETURN_IF_ERROR_ANNOTATE(
          kiln_hal_buffer_check_range(entry->buffer, "binding table entry",
                                      entry->offset, entry->length, &length),
          "submit: binding table %u slot %u", i, slot);
    }
  }
  if (batch->fence && batch->fence->device != device) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "submit: fence is from another device");
  }
  return DEVICE_VTABLE(device)->queue_submit(device, batch);
}

kiln_status_t kiln_hal_device_wait_idle(kiln_hal_device_t* device,
                                        int64_t timeout_ns) {
  return DEVICE_VTABLE(device)->wait_idle(device, timeout_ns);
}

kiln_status_t kiln_hal_device_write_buffer(kiln_hal_device_t* device,
                                           kiln_hal_buffer_t* buffer,
                                           uint64_t offset, const void* data,
                                           uint64_t length) {
  uint64_t resolved = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_buffer_check_range(buffer, "write_buffer",
                                                   offset, length, &resolved));
  if (buffer->immutable) {
    return kiln_make_status(KILN_STATUS_PERMISSION_DENIED,
                            "write_buffer: the buffer is immutable (shared "
                            "constants)");
  }
  if (!data && resolved) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "write_buffer: data is NULL");
  }
  if (resolved == 0) return kiln_ok_status();
  return DEVICE_VTABLE(device)->write_buffer(device, buffer, offset, data,
                                             resolved);
}

kiln_status_t kiln_hal_device_read_buffer(kiln_hal_device_t* device,
                                          kiln_hal_buffer_t* buffer,
                                          uint64_t offset, void* data,
                                          uint64_t length) {
  uint64_t resolved = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_buffer_check_range(buffer, "read_buffer",
                                                   offset, length, &resolved));
  if (!data && resolved) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "read_buffer: data is NULL");
  }
  if (resolved == 0) return kiln_ok_status();
  return DEVICE_VTABLE(device)->read_buffer(device, buffer, offset, data,
                                            resolved);
}

kiln_status_t kiln_hal_device_pipeline_cache_stats(
    kiln_hal_device_t* device, kiln_hal_pipeline_cache_stats_t* out_stats) {
  memset(out_stats, 0, sizeof(*out_stats));
  return DEVICE_VTABLE(device)->pipeline_cache_stats(device, out_stats);
}

kiln_status_t kiln_hal_device_pipeline_cache_save(kiln_hal_device_t* device,
                                                  const char* path) {
  if (!path || !path[0]) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "pipeline_cache_save: empty path");
  }
  return DEVICE_VTABLE(device)->pipeline_cache_save(device, path);
}
