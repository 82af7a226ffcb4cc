// A growable little-endian byte writer: the mirror of kiln_reader_t, used by
// the module writer, .npy writer and anything that serializes.
#ifndef KILN_BASE_BYTE_BUFFER_H_
#define KILN_BASE_BYTE_BUFFER_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/status.h"
#include "kiln/base/views.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_byte_buffer_t {
  kiln_allocator_t allocator;
  uint8_t* data;
  size_t size;
  size_t capacity;
} kiln_byte_buffer_t;

void kiln_byte_buffer_init(kiln_byte_buffer_t* buffer,
                           kiln_allocator_t allocator);
void kiln_byte_buffer_deinit(kiln_byte_buffer_t* buffer);
kiln_status_t kiln_byte_buffer_reserve(kiln_byte_buffer_t* buffer,
                                       size_t capacity);
kiln_status_t kiln_byte_buffer_append(kiln_byte_buffer_t* buffer,
                                      const void* data, size_t length);
kiln_status_t kiln_byte_buffer_append_zeros(kiln_byte_buffer_t* buffer,
                                            size_t length);
kiln_status_t kiln_byte_buffer_append_u8(kiln_byte_buffer_t* buffer,
                                         uint8_t value);
kiln_status_t kiln_byte_buffer_append_u16(kiln_byte_buffer_t* buffer,
                                          uint16_t value);
kiln_status_t kiln_byte_buffer_append_u32(kiln_byte_buffer_t* buffer,
                                          uint32_t value);
kiln_status_t kiln_byte_buffer_append_u64(kiln_byte_buffer_t* buffer,
                                          uint64_t value);
kiln_status_t kiln_byte_buffer_append_f32(kiln_byte_buffer_t* buffer,
                                          float value);
kiln_status_t kiln_byte_buffer_append_f64(kiln_byte_buffer_t* buffer,
                                          double value);
// Pads with zeros up to a multiple of `alignment` (a power of two).
kiln_status_t kiln_byte_buffer_align(kiln_byte_buffer_t* buffer,
                                     size_t alignment);
// Overwrites a u32 already written (for offsets patched after the fact).
kiln_status_t kiln_byte_buffer_patch_u32(kiln_byte_buffer_t* buffer,
                                         size_t offset, uint32_t value);
kiln_status_t kiln_byte_buffer_patch_u64(kiln_byte_buffer_t* buffer,
                                         size_t offset, uint64_t value);
static inline kiln_const_byte_span_t kiln_byte_buffer_span(
    const kiln_byte_buffer_t* buffer) {
  return kiln_make_const_byte_span(buffer->data, buffer->size);
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_BYTE_BUFFER_H_
