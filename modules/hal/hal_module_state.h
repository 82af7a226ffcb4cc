// Per-context state of the hal module and the helpers its exports share.
#ifndef KILN_MODULES_HAL_HAL_MODULE_STATE_H_
#define KILN_MODULES_HAL_HAL_MODULE_STATE_H_

#include <stdio.h>

#include "hal_refs.h"
#include "kiln/vm/buffer.h"
#include "kiln/vm/context.h"
#include "kiln/vm/list.h"
#include "kiln/vm/native_module.h"

typedef struct kiln_hal_cached_executable_t {
  char* name;
  kiln_vm_ref_object_t* ref;  // hal.executable
} kiln_hal_cached_executable_t;

typedef struct kiln_hal_module_state_t {
  kiln_allocator_t allocator;
  kiln_hal_device_t* device;
  kiln_vm_context_t* context;
  kiln_hal_module_options_t options;  // shared_cache set; both borrowed
  // Executables are built once per context, on first lookup.
  kiln_hal_cached_executable_t* executables;
  size_t executable_count;
  size_t executable_capacity;
  // submit_and_wait's fence, reused (reset before each submit): creating and
  // destroying one per call cost ~0.5 ms of host time on NVIDIA.
  kiln_hal_fence_t* wait_fence;
} kiln_hal_module_state_t;

// Unwraps argument `index` of `export_name` as `type`; the error names both.
kiln_status_t kiln_hal_arg(const kiln_vm_value_t* args, size_t index,
                           const kiln_vm_ref_type_t* type,
                           const char* export_name, void** out_object);
// Argument `index` as a vm.buffer (bytes from rodata or allocated).
kiln_status_t kiln_hal_arg_bytes(const kiln_vm_value_t* args, size_t index,
                                 const char* export_name,
                                 kiln_vm_buffer_t** out_buffer);
// Argument `index` as a vm.list of `element_type` (NULL allowed when
// `optional`).
kiln_status_t kiln_hal_arg_list(const kiln_vm_value_t* args, size_t index,
                                uint32_t element_type, bool optional,
                                const char* export_name,
                                kiln_vm_list_t** out_list);
// Checks [offset, offset + length) lies inside a vm.buffer.
kiln_status_t kiln_hal_check_bytes_range(const kiln_vm_buffer_t* buffer,
                                         int64_t offset, int64_t length,
                                         const char* export_name);
// A buffer or a buffer view (its buffer and range) as one binding range.
kiln_status_t kiln_hal_resolve_buffer_like(kiln_vm_ref_object_t* ref,
                                           const char* what,
                                           kiln_hal_buffer_t** out_buffer,
                                           uint64_t* out_offset,
                                           uint64_t* out_length);

// The exports, grouped by object; each file defines its own table.
extern const kiln_vm_native_export_t kiln_hal_device_exports[];
extern const size_t kiln_hal_device_export_count;
extern const kiln_vm_native_export_t kiln_hal_buffer_exports[];
extern const size_t kiln_hal_buffer_export_count;
extern const kiln_vm_native_export_t kiln_hal_command_buffer_exports[];
extern const size_t kiln_hal_command_buffer_export_count;
extern const kiln_vm_native_export_t kiln_hal_executable_exports[];
extern const size_t kiln_hal_executable_export_count;

#endif  // KILN_MODULES_HAL_HAL_MODULE_STATE_H_
