// Device buffers: allocation by memory type and usage, and mapping of
// ranges (bounds-checked) for host-visible ones.
#ifndef KILN_HAL_BUFFER_H_
#define KILN_HAL_BUFFER_H_

#include "kiln/hal/types.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_hal_buffer_params_t {
  kiln_hal_memory_type_t memory_type;
  kiln_hal_buffer_usage_t usage;
  uint64_t size;  // bytes, > 0
  // Budget the bytes count against (retained while the buffer lives); NULL:
  // the device's (kiln_hal_device_options_t.memory_budget), if any. Lets
  // sessions that share one device each count their own buffers.
  struct kiln_memory_budget_t* memory_budget;
} kiln_hal_buffer_params_t;

kiln_status_t kiln_hal_buffer_allocate(kiln_hal_device_t* device,
                                       const kiln_hal_buffer_params_t* params,
                                       kiln_hal_buffer_t** out_buffer);
void kiln_hal_buffer_retain(kiln_hal_buffer_t* buffer);
void kiln_hal_buffer_release(kiln_hal_buffer_t* buffer);

uint64_t kiln_hal_buffer_size(const kiln_hal_buffer_t* buffer);
kiln_hal_memory_type_t kiln_hal_buffer_memory_type(
    const kiln_hal_buffer_t* buffer);
kiln_hal_buffer_usage_t kiln_hal_buffer_usage(const kiln_hal_buffer_t* buffer);
kiln_hal_device_t* kiln_hal_buffer_device(const kiln_hal_buffer_t* buffer);

// After its contents are written: no later write (write_buffer, fill,
// update, copy target, mapping, a writable dispatch binding or binding-table
// slot) is accepted, so the buffer may be shared by sessions on any thread.
// One-way.
void kiln_hal_buffer_make_immutable(kiln_hal_buffer_t* buffer);
bool kiln_hal_buffer_is_immutable(const kiln_hal_buffer_t* buffer);

// Maps [offset, offset + length) of a buffer allocated with
// KILN_HAL_BUFFER_USAGE_MAPPING in host-visible or staging memory. The
// pointer stays valid until the buffer is released; coherent memory needs no
// unmap, but pairing calls keeps the code correct for non-coherent memory.
kiln_status_t kiln_hal_buffer_map_range(kiln_hal_buffer_t* buffer,
                                        uint64_t offset, uint64_t length,
                                        void** out_data);
kiln_status_t kiln_hal_buffer_unmap_range(kiln_hal_buffer_t* buffer,
                                          uint64_t offset, uint64_t length);

// Resolves KILN_HAL_WHOLE_BUFFER and checks the range; names the argument at
// fault. Used by every entry point that takes a buffer range.
kiln_status_t kiln_hal_buffer_check_range(const kiln_hal_buffer_t* buffer,
                                          const char* what, uint64_t offset,
                                          uint64_t length,
                                          uint64_t* out_length);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_BUFFER_H_
