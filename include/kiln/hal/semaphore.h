// Timeline semaphores (GPU<->GPU and GPU<->host ordering) and fences
// (one-shot completion of a submission).
#ifndef KILN_HAL_SEMAPHORE_H_
#define KILN_HAL_SEMAPHORE_H_

#include "kiln/hal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

kiln_status_t kiln_hal_semaphore_create(kiln_hal_device_t* device,
                                        uint64_t initial_value,
                                        kiln_hal_semaphore_t** out_semaphore);
void kiln_hal_semaphore_retain(kiln_hal_semaphore_t* semaphore);
void kiln_hal_semaphore_release(kiln_hal_semaphore_t* semaphore);

kiln_status_t kiln_hal_semaphore_query(kiln_hal_semaphore_t* semaphore,
                                       uint64_t* out_value);
// Host signal; the value must grow.
kiln_status_t kiln_hal_semaphore_signal(kiln_hal_semaphore_t* semaphore,
                                        uint64_t value);
// Waits until the value is reached; DEADLINE_EXCEEDED on timeout (0 polls).
kiln_status_t kiln_hal_semaphore_wait(kiln_hal_semaphore_t* semaphore,
                                      uint64_t value, int64_t timeout_ns);

kiln_status_t kiln_hal_fence_create(kiln_hal_device_t* device,
                                    kiln_hal_fence_t** out_fence);
void kiln_hal_fence_retain(kiln_hal_fence_t* fence);
void kiln_hal_fence_release(kiln_hal_fence_t* fence);
kiln_status_t kiln_hal_fence_wait(kiln_hal_fence_t* fence, int64_t timeout_ns);
kiln_status_t kiln_hal_fence_reset(kiln_hal_fence_t* fence);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_SEMAPHORE_H_
