#include "kiln/vm/buffer.h"

#include <string.h>

#define KILN_VM_BUFFER_MAX_LENGTH (UINT64_C(1) << 40)

static void kiln_vm_buffer_destroy(kiln_vm_ref_object_t* object) {
  kiln_vm_buffer_t* buffer = (kiln_vm_buffer_t*)object;
  if (buffer->owns_data) kiln_allocator_free(buffer->allocator, buffer->data);
  kiln_vm_ref_release(buffer->owner);
  kiln_allocator_free(buffer->allocator, buffer);
}

const kiln_vm_ref_type_t kiln_vm_buffer_type = {"vm.buffer",
                                                kiln_vm_buffer_destroy};

kiln_status_t kiln_vm_buffer_allocate(kiln_allocator_t allocator,
                                      uint64_t length,
                                      kiln_vm_buffer_t** out_buffer) {
  *out_buffer = NULL;
  if (length > KILN_VM_BUFFER_MAX_LENGTH || length > SIZE_MAX) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "buffer length %llu exceeds the limit %llu",
                            (unsigned long long)length,
                            (unsigned long long)KILN_VM_BUFFER_MAX_LENGTH);
  }
  kiln_vm_buffer_t* buffer = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*buffer), (void**)&buffer));
  kiln_status_t status =
      kiln_allocator_calloc(allocator, (size_t)length, (void**)&buffer->data);
  if (status) {
    kiln_allocator_free(allocator, buffer);
    return status;
  }
  kiln_vm_ref_object_init(&buffer->header, &kiln_vm_buffer_type);
  buffer->allocator = allocator;
  buffer->length = length;
  buffer->owns_data = true;
  *out_buffer = buffer;
  return kiln_ok_status();
}

kiln_status_t kiln_vm_buffer_wrap_read_only(kiln_allocator_t allocator,
                                            const uint8_t* data,
                                            uint64_t length,
                                            kiln_vm_ref_object_t* owner,
                                            kiln_vm_buffer_t** out_buffer) {
  *out_buffer = NULL;
  kiln_vm_buffer_t* buffer = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*buffer), (void**)&buffer));
  kiln_vm_ref_object_init(&buffer->header, &kiln_vm_buffer_type);
  buffer->allocator = allocator;
  buffer->data = (uint8_t*)data;
  buffer->length = length;
  buffer->read_only = true;
  buffer->owner = owner;
  kiln_vm_ref_retain(owner);
  *out_buffer = buffer;
  return kiln_ok_status();
}
