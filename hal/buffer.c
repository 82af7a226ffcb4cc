// Buffer wrappers: parameter and range checks, mapping.
#include "kiln/base/memory_budget.h"
#include "kiln/base/size_math.h"
#include "kiln/hal/driver_api.h"

#define BUFFER_VTABLE(buffer) \
  ((const kiln_hal_buffer_vtable_t*)(buffer)->resource.vtable)

kiln_status_t kiln_hal_buffer_allocate(kiln_hal_device_t* device,
                                       const kiln_hal_buffer_params_t* params,
                                       kiln_hal_buffer_t** out_buffer) {
  *out_buffer = NULL;
  if (params->size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "buffer_allocate: size is 0");
  }
  if ((unsigned)params->memory_type > KILN_HAL_MEMORY_STAGING) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "buffer_allocate: unknown memory type %d",
                            (int)params->memory_type);
  }
  const kiln_hal_buffer_usage_t known =
      KILN_HAL_BUFFER_USAGE_TRANSFER | KILN_HAL_BUFFER_USAGE_DISPATCH_STORAGE |
      KILN_HAL_BUFFER_USAGE_MAPPING;
  if (params->usage == 0 || (params->usage & ~known)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "buffer_allocate: bad usage bits 0x%x",
                            params->usage);
  }
  if ((params->usage & KILN_HAL_BUFFER_USAGE_MAPPING) &&
      params->memory_type == KILN_HAL_MEMORY_DEVICE_LOCAL) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "buffer_allocate: MAPPING usage needs host-visible "
                            "or staging memory, not device-local");
  }
  // The budget is taken before the driver allocates: 64 x 1 GiB buffers
  // must be refused, not attempted. The buffer keeps the budget it used.
  kiln_hal_buffer_params_t resolved = *params;
  if (!resolved.memory_budget) resolved.memory_budget = device->memory_budget;
  kiln_memory_budget_t* budget = resolved.memory_budget;
  const kiln_hal_device_vtable_t* vtable = device->resource.vtable;
  // A reused buffer keeps the budget and byte count it already holds.
  if (vtable->buffer_reuse) {
    *out_buffer = vtable->buffer_reuse(device, &resolved);
    if (*out_buffer) return kiln_ok_status();
  }
  if (budget) {
    KILN_RETURN_IF_ERROR(
        kiln_memory_budget_reserve(budget, params->size, "a device buffer"));
  }
  kiln_status_t status = vtable->buffer_allocate(device, &resolved, out_buffer);
  if (!kiln_status_is_ok(status)) {
    if (budget) kiln_memory_budget_unreserve(budget, params->size);
    return kiln_status_annotate(status, "while allocating a %llu-byte buffer",
                                (unsigned long long)params->size);
  }
  (*out_buffer)->params.memory_budget = budget;
  (*out_buffer)->immutable = false;
  kiln_memory_budget_retain(budget);
  uint64_t live = __atomic_add_fetch(&device->live_buffer_bytes, params->size,
                                     __ATOMIC_RELAXED);
  uint64_t peak = __atomic_load_n(&device->peak_buffer_bytes, __ATOMIC_RELAXED);
  while (live > peak &&
         !__atomic_compare_exchange_n(&device->peak_buffer_bytes, &peak, live,
                                      true, __ATOMIC_RELAXED,
                                      __ATOMIC_RELAXED)) {
  }
  return kiln_ok_status();
}

kiln_hal_submit_stats_t kiln_hal_device_submit_stats(
    const kiln_hal_device_t* device) {
  const kiln_hal_submit_stats_t* s = &device->submit_stats;
  kiln_hal_submit_stats_t stats = {
      __atomic_load_n(&s->submissions, __ATOMIC_RELAXED),
      __atomic_load_n(&s->prepare_ns, __ATOMIC_RELAXED),
      __atomic_load_n(&s->queue_ns, __ATOMIC_RELAXED),
      __atomic_load_n(&s->fence_wait_ns, __ATOMIC_RELAXED)};
  return stats;
}

kiln_hal_memory_stats_t kiln_hal_device_memory_stats(
    const kiln_hal_device_t* device) {
  kiln_hal_memory_stats_t stats = {
      __atomic_load_n(&device->live_buffer_bytes, __ATOMIC_RELAXED),
      __atomic_load_n(&device->peak_buffer_bytes, __ATOMIC_RELAXED)};
  return stats;
}

void kiln_hal_buffer_retain(kiln_hal_buffer_t* buffer) {
  if (buffer) kiln_hal_resource_retain(&buffer->resource);
}

void kiln_hal_buffer_release(kiln_hal_buffer_t* buffer) {
  if (buffer && kiln_hal_resource_release(&buffer->resource)) {
    __atomic_sub_fetch(&buffer->device->live_buffer_bytes,
                       buffer->params.size, __ATOMIC_RELAXED);
    kiln_memory_budget_t* budget = buffer->params.memory_budget;
    if (budget) kiln_memory_budget_unreserve(budget, buffer->params.size);
    BUFFER_VTABLE(buffer)->destroy(buffer);
    kiln_memory_budget_release(budget);  // after the driver freed the buffer
  }
}

void kiln_hal_buffer_make_immutable(kiln_hal_buffer_t* buffer) {
  buffer->immutable = true;
}

bool kiln_hal_buffer_is_immutable(const kiln_hal_buffer_t* buffer) {
  return buffer->immutable;
}

uint64_t kiln_hal_buffer_size(const kiln_hal_buffer_t* buffer) {
  return buffer->params.size;
}

kiln_hal_memory_type_t kiln_hal_buffer_memory_type(
    const kiln_hal_buffer_t* buffer) {
  return buffer->params.memory_type;
}

kiln_hal_buffer_usage_t kiln_hal_buffer_usage(const kiln_hal_buffer_t* buffer) {
  return buffer->params.usage;
}

kiln_hal_device_t* kiln_hal_buffer_device(const kiln_hal_buffer_t* buffer) {
  return buffer->device;
}

kiln_status_t kiln_hal_buffer_check_range(const kiln_hal_buffer_t* buffer,
                                          const char* what, uint64_t offset,
                                          uint64_t length,
                                          uint64_t* out_length) {
  *out_length = 0;
  if (!buffer) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: buffer is NULL",
                            what);
  }
  uint64_t size = buffer->params.size;
  if (length == KILN_HAL_WHOLE_BUFFER) {
    if (offset > size) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "%s: offset %llu is past the end of a %llu-byte "
                              "buffer",
                              what, (unsigned long long)offset,
                              (unsigned long long)size);
    }
    length = size - offset;
  }
  if (!kiln_range_fits(offset, length, size)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s: range [%llu, +%llu) does not fit a %llu-byte "
                            "buffer",
                            what, (unsigned long long)offset,
                            (unsigned long long)length,
                            (unsigned long long)size);
  }
  *out_length = length;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_buffer_map_range(kiln_hal_buffer_t* buffer,
                                        uint64_t offset, uint64_t length,
                                        void** out_data) {
  *out_data = NULL;
  uint64_t resolved = 0;
  KILN_RETURN_IF_ERROR(
      kiln_hal_buffer_check_range(buffer, "map_range", offset, length,
                                  &resolved));
  if (buffer->immutable) {
    return kiln_make_status(KILN_STATUS_PERMISSION_DENIED,
                            "map_range: the buffer is immutable (shared "
                            "constants)");
  }
  if (!(buffer->params.usage & KILN_HAL_BUFFER_USAGE_MAPPING) ||
      !buffer->host_pointer) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "map_range: buffer was not allocated with MAPPING "
                            "usage in host-visible memory");
  }
  *out_data = buffer->host_pointer + offset;
  return kiln_ok_status();
}

kiln_status_t kiln_hal_buffer_unmap_range(kiln_hal_buffer_t* buffer,
                                          uint64_t offset, uint64_t length) {
  uint64_t resolved = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_buffer_check_range(buffer, "unmap_range",
                                                   offset, length, &resolved));
  // Mappable memory is always allocated host-coherent: nothing to flush.
  return kiln_ok_status();
}
