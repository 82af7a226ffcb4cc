// vm.buffer: a byte buffer. Rodata buffers view a module's read-only data
// (and keep the module alive); allocated buffers own zeroed memory.
#ifndef KILN_VM_BUFFER_H_
#define KILN_VM_BUFFER_H_

#include <stdbool.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/vm/ref.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_vm_buffer_t {
  kiln_vm_ref_object_t header;
  kiln_allocator_t allocator;
  uint8_t* data;
  uint64_t length;
  bool read_only;
  kiln_vm_ref_object_t* owner;  // released with the buffer (may be NULL)
  bool owns_data;
} kiln_vm_buffer_t;

extern const kiln_vm_ref_type_t kiln_vm_buffer_type;

// A zero-filled buffer of `length` bytes (at most 2^40).
kiln_status_t kiln_vm_buffer_allocate(kiln_allocator_t allocator,
                                      uint64_t length,
                                      kiln_vm_buffer_t** out_buffer);
// A read-only view of `data`; `owner` (may be NULL) is retained for the
// buffer's lifetime.
kiln_status_t kiln_vm_buffer_wrap_read_only(kiln_allocator_t allocator,
                                            const uint8_t* data,
                                            uint64_t length,
                                            kiln_vm_ref_object_t* owner,
                                            kiln_vm_buffer_t** out_buffer);

#ifdef __cplusplus
}
#endif

#endif  // KILN_VM_BUFFER_H_
