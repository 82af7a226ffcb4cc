// The "hal" native VM module: exposes a HAL device to bytecode. Bytecode
// imports its functions as "hal.<name>" (see docs/hal-module.md for every
// export and its signature). HAL objects cross into the VM as typed refs
// (hal.device, hal.buffer, hal.buffer_view, hal.executable,
// hal.command_buffer, hal.fence, hal.semaphore); every export checks the
// types of the refs it is handed, and misuse is a trap with a message.
#ifndef KILN_MODULES_HAL_MODULE_H_
#define KILN_MODULES_HAL_MODULE_H_

#include "kiln/hal/buffer_view.h"
#include "kiln/hal/command_buffer.h"
#include "kiln/hal/device.h"
#include "kiln/vm/module.h"
#include "kiln/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_hal_module_options_t {
  // Every command buffer the bytecode creates records GPU timestamps around
  // its dispatches (for --print_statistics), whatever flags it asked for.
  bool force_timestamps;
} kiln_hal_module_options_t;

// Creates the module bound to `device` (retained). Registers the hal.* ref
// types with the instance on first use. `options` may be NULL.
kiln_status_t kiln_hal_module_create(kiln_vm_instance_t* instance,
                                     kiln_hal_device_t* device,
                                     kiln_vm_module_t** out_module);
kiln_status_t kiln_hal_module_create_with_options(
    kiln_vm_instance_t* instance, kiln_hal_device_t* device,
    const kiln_hal_module_options_t* options, kiln_vm_module_t** out_module);

// Ref types, for hosts that pass HAL objects in and out of functions.
extern const kiln_vm_ref_type_t kiln_hal_device_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_buffer_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_buffer_view_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_executable_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_command_buffer_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_fence_ref_type;
extern const kiln_vm_ref_type_t kiln_hal_semaphore_ref_type;

// Wraps a buffer view as a VM ref (the view is retained; the caller keeps
// its own reference). Release the ref with kiln_vm_ref_release.
kiln_status_t kiln_hal_module_wrap_buffer_view(
    kiln_allocator_t allocator, kiln_hal_buffer_view_t* view,
    kiln_vm_ref_object_t** out_ref);
// The buffer view inside a ref, or an error naming `what` when the ref is
// NULL or of another type. The view is borrowed from the ref.
kiln_status_t kiln_hal_module_unwrap_buffer_view(
    kiln_vm_ref_object_t* ref, const char* what,
    kiln_hal_buffer_view_t** out_view);

// The command buffer inside a hal.command_buffer ref (borrowed).
kiln_status_t kiln_hal_module_unwrap_command_buffer(
    kiln_vm_ref_object_t* ref, const char* what,
    kiln_hal_command_buffer_t** out_command_buffer);

#ifdef __cplusplus
}
#endif

#endif  // KILN_MODULES_HAL_MODULE_H_
