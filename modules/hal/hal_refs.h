// VM refs around HAL objects: one small wrapper per object, holding a HAL
// reference that is dropped when the VM lets go of the wrapper.
#ifndef KILN_MODULES_HAL_HAL_REFS_H_
#define KILN_MODULES_HAL_HAL_REFS_H_

#include "kiln/hal/buffer.h"
#include "kiln/hal/buffer_view.h"
#include "kiln/hal/command_buffer.h"
#include "kiln/hal/device.h"
#include "kiln/hal/executable.h"
#include "kiln/hal/semaphore.h"
#include "kiln/modules/hal_module.h"
#include "kiln/vm/ref.h"

typedef struct kiln_hal_ref_t {
  kiln_vm_ref_object_t header;
  kiln_allocator_t allocator;
  void* object;  // the HAL object; its type follows header.type
} kiln_hal_ref_t;

// Wraps `object` (the wrapper takes over one HAL reference the caller owns).
// On failure the HAL reference is released.
kiln_status_t kiln_hal_ref_wrap(kiln_allocator_t allocator,
                                const kiln_vm_ref_type_t* type, void* object,
                                kiln_vm_ref_object_t** out_ref);
// Checks the type and returns the HAL object (borrowed). `what` names the
// argument ("argument 1 (buffer) of hal.command_buffer.copy").
kiln_status_t kiln_hal_ref_unwrap(kiln_vm_ref_object_t* ref,
                                  const kiln_vm_ref_type_t* type,
                                  const char* what, void** out_object);
// Registers every hal.* type (ALREADY_EXISTS from a second module is fine).
kiln_status_t kiln_hal_refs_register(kiln_vm_instance_t* instance);

#endif  // KILN_MODULES_HAL_HAL_REFS_H_
