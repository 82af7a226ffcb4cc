// The VM instance: the allocator and the registry of ref types shared by
// every module and context made from it. It must outlive them.
#ifndef KILN_VM_INSTANCE_H_
#define KILN_VM_INSTANCE_H_

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vm_instance_t kiln_vm_instance_t;

// Registers the built-in types (vm.list, vm.buffer).
kiln_status_t kiln_vm_instance_create(kiln_allocator_t allocator,
                                      kiln_vm_instance_t** out_instance);
void kiln_vm_instance_destroy(kiln_vm_instance_t* instance);
kiln_allocator_t kiln_vm_instance_allocator(const kiln_vm_instance_t* instance);

// Adds a type (kept by pointer: it must outlive the instance). A second type
// with the same name is ALREADY_EXISTS. Thread-safe.
kiln_status_t kiln_vm_instance_register_ref_type(
    kiln_vm_instance_t* instance, const kiln_vm_ref_type_t* type);
// The type with `name`, or NULL. Thread-safe.
const kiln_vm_ref_type_t* kiln_vm_instance_lookup_ref_type(
    kiln_vm_instance_t* instance, kiln_string_view_t name);

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_INSTANCE_H_
