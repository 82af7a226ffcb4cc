#include "kiln/vm/ref.h"

#include <stddef.h>

void kiln_vm_ref_retain(kiln_vm_ref_object_t* object) {
  if (object) __atomic_fetch_add(&object->ref_count, 1, __ATOMIC_RELAXED);
}

void kiln_vm_ref_release(kiln_vm_ref_object_t* object) {
  if (!object) return;
  if (__atomic_fetch_sub(&object->ref_count, 1, __ATOMIC_ACQ_REL) == 1) {
    object->type->destroy(object);
  }
}

kiln_status_t kiln_vm_ref_check(const kiln_vm_ref_object_t* object,
                                const kiln_vm_ref_type_t* type,
                                const char* what) {
  if (!object) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: expected a %s ref, got null", what,
                            type->name);
  }
  if (object->type != type) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: expected a %s ref, got %s", what, type->name,
                            object->type->name);
  }
  return kiln_ok_status();
}
