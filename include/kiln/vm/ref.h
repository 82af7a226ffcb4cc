// Reference-counted objects the VM moves through its ref registers. Every
// object starts with kiln_vm_ref_object_t; its type (name + destroy) says
// how to free it and lets native code check what it was handed. Counts are
// atomic, so refs may cross threads.
#ifndef KILN_VM_REF_H_
#define KILN_VM_REF_H_

#include <stdint.h>

#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vm_ref_object_t kiln_vm_ref_object_t;

typedef struct kiln_vm_ref_type_t {
  const char* name;  // "vm.list", "hal.buffer", ...
  // Frees the object (called when the last reference goes).
  void (*destroy)(kiln_vm_ref_object_t* object);
} kiln_vm_ref_type_t;

struct kiln_vm_ref_object_t {
  uint32_t ref_count;  // atomic; use retain/release
  const kiln_vm_ref_type_t* type;
};

// Starts an object's life with one reference.
static inline void kiln_vm_ref_object_init(kiln_vm_ref_object_t* object,
                                           const kiln_vm_ref_type_t* type) {
  object->ref_count = 1;
  object->type = type;
}

// Both accept NULL.
void kiln_vm_ref_retain(kiln_vm_ref_object_t* object);
void kiln_vm_ref_release(kiln_vm_ref_object_t* object);

// OK when `object` is non-NULL and of `type`; otherwise an error naming
// `what` (an argument name) and both type names.
kiln_status_t kiln_vm_ref_check(const kiln_vm_ref_object_t* object,
                                const kiln_vm_ref_type_t* type,
                                const char* what);

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_REF_H_
