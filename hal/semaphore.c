// Semaphore and fence wrappers.
#include "kiln/hal/semaphore.h"

#include "kiln/base/time.h"
#include "kiln/hal/driver_api.h"

#define SEMAPHORE_VTABLE(s) ((const kiln_hal_semaphore_vtable_t*)(s)->resource.vtable)
#define FENCE_VTABLE(f) ((const kiln_hal_fence_vtable_t*)(f)->resource.vtable)

kiln_status_t kiln_hal_semaphore_create(kiln_hal_device_t* device,
                                        uint64_t initial_value,
                                        kiln_hal_semaphore_t** out_semaphore) {
  *out_semaphore = NULL;
  const kiln_hal_device_vtable_t* vtable = device->resource.vtable;
  return vtable->semaphore_create(device, initial_value, out_semaphore);
}

void kiln_hal_semaphore_retain(kiln_hal_semaphore_t* semaphore) {
  if (semaphore) kiln_hal_resource_retain(&semaphore->resource);
}

void kiln_hal_semaphore_release(kiln_hal_semaphore_t* semaphore) {
  if (semaphore && kiln_hal_resource_release(&semaphore->resource)) {
    SEMAPHORE_VTABLE(semaphore)->destroy(semaphore);
  }
}

kiln_status_t kiln_hal_semaphore_query(kiln_hal_semaphore_t* semaphore,
                                       uint64_t* out_value) {
  *out_value = 0;
  return SEMAPHORE_VTABLE(semaphore)->query(semaphore, out_value);
}

kiln_status_t kiln_hal_semaphore_signal(kiln_hal_semaphore_t* semaphore,
                                        uint64_t value) {
  uint64_t current = 0;
  KILN_RETURN_IF_ERROR(kiln_hal_semaphore_query(semaphore, &current));
  if (value <= current) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "semaphore_signal: value %llu is not above the "
                            "current %llu",
                            (unsigned long long)value,
                            (unsigned long long)current);
  }
  return SEMAPHORE_VTABLE(semaphore)->signal(semaphore, value);
}

kiln_status_t kiln_hal_semaphore_wait(kiln_hal_semaphore_t* semaphore,
                                      uint64_t value, int64_t timeout_ns) {
  if (timeout_ns < 0) timeout_ns = 0;
  return SEMAPHORE_VTABLE(semaphore)->wait(semaphore, value, timeout_ns);
}

kiln_status_t kiln_hal_fence_create(kiln_hal_device_t* device,
                                    kiln_hal_fence_t** out_fence) {
  *out_fence = NULL;
  const kiln_hal_device_vtable_t* vtable = device->resource.vtable;
  return vtable->fence_create(device, out_fence);
}

void kiln_hal_fence_retain(kiln_hal_fence_t* fence) {
  if (fence) kiln_hal_resource_retain(&fence->resource);
}

void kiln_hal_fence_release(kiln_hal_fence_t* fence) {
  if (fence && kiln_hal_resource_release(&fence->resource)) {
    FENCE_VTABLE(fence)->destroy(fence);
  }
}

kiln_status_t kiln_hal_fence_wait(kiln_hal_fence_t* fence, int64_t timeout_ns) {
  if (timeout_ns < 0) timeout_ns = 0;
  int64_t start = kiln_time_now_ns();
  kiln_status_t status = FENCE_VTABLE(fence)->wait(fence, timeout_ns);
  __atomic_add_fetch(&fence->device->submit_stats.fence_wait_ns,
                     (uint64_t)(kiln_time_now_ns() - start), __ATOMIC_RELAXED);
  return status;
}

kiln_status_t kiln_hal_fence_reset(kiln_hal_fence_t* fence) {
  return FENCE_VTABLE(fence)->reset(fence);
}
