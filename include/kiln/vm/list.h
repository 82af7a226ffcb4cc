// vm.list: a growable list of i32, i64 or ref elements (KILN_VM_LIST_*).
// f32/f64 values travel as their bits in i32/i64 lists.
#ifndef KILN_VM_LIST_H_
#define KILN_VM_LIST_H_

#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/vm/isa.h"
#include "kiln/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vm_list_t {
  kiln_vm_ref_object_t header;
  kiln_allocator_t allocator;
  uint32_t element_type;  // KILN_VM_LIST_*
  uint32_t size;
  uint32_t capacity;
  void* data;  // int32_t[], int64_t[] or kiln_vm_ref_object_t*[]
} kiln_vm_list_t;

extern const kiln_vm_ref_type_t kiln_vm_list_type;

#define KILN_VM_LIST_MAX_SIZE (1u << 28)

kiln_status_t kiln_vm_list_create(kiln_allocator_t allocator,
                                  uint32_t element_type, uint32_t capacity,
                                  kiln_vm_list_t** out_list);
// New elements are zero / NULL; dropped refs are released.
kiln_status_t kiln_vm_list_resize(kiln_vm_list_t* list, uint32_t size);

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_LIST_H_
