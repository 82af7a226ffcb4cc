#include "kiln/base/byte_buffer.h"

#include <string.h>

#include "kiln/base/size_math.h"

void kiln_byte_buffer_init(kiln_byte_buffer_t* buffer,
                           kiln_allocator_t allocator) {
  buffer->allocator = allocator;
  buffer->data = NULL;
  buffer->size = 0;
  buffer->capacity = 0;
}

void kiln_byte_buffer_deinit(kiln_byte_buffer_t* buffer) {
  kiln_allocator_free(buffer->allocator, buffer->data);
  buffer->data = NULL;
  buffer->size = 0;
  buffer->capacity = 0;
}

kiln_status_t kiln_byte_buffer_reserve(kiln_byte_buffer_t* buffer,
                                       size_t capacity) {
  if (capacity <= buffer->capacity) return kiln_ok_status();
  // Geometric growth keeps appends amortized O(1).
  size_t grown = buffer->capacity < 64 ? 64 : buffer->capacity;
  while (grown < capacity) {
    if (!kiln_size_mul(grown, 2, &grown)) {
      grown = capacity;
      break;
    }
  }
  void* data = buffer->data;
  KILN_RETURN_IF_ERROR(kiln_allocator_realloc(buffer->allocator, grown, &data));
  buffer->data = (uint8_t*)data;
  buffer->capacity = grown;
  return kiln_ok_status();
}

static kiln_status_t kiln_byte_buffer_grow_by(kiln_byte_buffer_t* buffer,
                                              size_t length,
                                              uint8_t** out_position) {
  size_t new_size;
  if (!kiln_size_add(buffer->size, length, &new_size)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "byte buffer of %zu bytes cannot grow by %zu",
                            buffer->size, length);
  }
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_reserve(buffer, new_size));
  *out_position = buffer->data + buffer->size;
  buffer->size = new_size;
  return kiln_ok_status();
}

kiln_status_t kiln_byte_buffer_append(kiln_byte_buffer_t* buffer,
                                      const void* data, size_t length) {
  if (length == 0) return kiln_ok_status();
  uint8_t* position;
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_grow_by(buffer, length, &position));
  memcpy(position, data, length);
  return kiln_ok_status();
}

kiln_status_t kiln_byte_buffer_append_zeros(kiln_byte_buffer_t* buffer,
                                            size_t length) {
  if (length == 0) return kiln_ok_status();
  uint8_t* position;
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_grow_by(buffer, length, &position));
  memset(position, 0, length);
  return kiln_ok_status();
}

static void kiln_store_le(uint8_t* p, uint64_t value, size_t bytes) {
  for (size_t i = 0; i < bytes; ++i) p[i] = (uint8_t)(value >> (8 * i));
}

static kiln_status_t kiln_byte_buffer_append_le(kiln_byte_buffer_t* buffer,
                                                uint64_t value, size_t bytes) {
  uint8_t* position;
  KILN_RETURN_IF_ERROR(kiln_byte_buffer_grow_by(buffer, bytes, &position));
  kiln_store_le(position, value, bytes);
  return kiln_ok_status();
}

kiln_status_t kiln_byte_buffer_append_u8(kiln_byte_buffer_t* buffer,
                                         uint8_t value) {
  return kiln_byte_buffer_append_le(buffer, value, 1);
}
kiln_status_t kiln_byte_buffer_append_u16(kiln_byte_buffer_t* buffer,
                                          uint16_t value) {
  return kiln_byte_buffer_append_le(buffer, value, 2);
}
kiln_status_t kiln_byte_buffer_append_u32(kiln_byte_buffer_t* buffer,
                                          uint32_t value) {
  return kiln_byte_buffer_append_le(buffer, value, 4);
}
kiln_status_t kiln_byte_buffer_append_u64(kiln_byte_buffer_t* buffer,
                                          uint64_t value) {
  return kiln_byte_buffer_append_le(buffer, value, 8);
}
kiln_status_t kiln_byte_buffer_append_f32(kiln_byte_buffer_t* buffer,
                                          float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return kiln_byte_buffer_append_le(buffer, bits, 4);
}
kiln_status_t kiln_byte_buffer_append_f64(kiln_byte_buffer_t* buffer,
                                          double value) {
  uint64_t bits;
  memcpy(&bits, &value, sizeof(bits));
  return kiln_byte_buffer_append_le(buffer, bits, 8);
}

kiln_status_t kiln_byte_buffer_align(kiln_byte_buffer_t* buffer,
                                     size_t alignment) {
  size_t aligned;
  if (!kiln_size_align_up(buffer->size, alignment, &aligned)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "alignment %zu is not a power of two", alignment);
  }
  return kiln_byte_buffer_append_zeros(buffer, aligned - buffer->size);
}

static kiln_status_t kiln_byte_buffer_patch(kiln_byte_buffer_t* buffer,
                                            size_t offset, uint64_t value,
                                            size_t bytes) {
  if (!kiln_range_fits(offset, bytes, buffer->size)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "patch of %zu bytes at offset %zu is outside the "
                            "%zu bytes written",
                            bytes, offset, buffer->size);
  }
  kiln_store_le(buffer->data + offset, value, bytes);
  return kiln_ok_status();
}

kiln_status_t kiln_byte_buffer_patch_u32(kiln_byte_buffer_t* buffer,
                                         size_t offset, uint32_t value) {
  return kiln_byte_buffer_patch(buffer, offset, value, 4);
}
kiln_status_t kiln_byte_buffer_patch_u64(kiln_byte_buffer_t* buffer,
                                         size_t offset, uint64_t value) {
  return kiln_byte_buffer_patch(buffer, offset, value, 8);
}
