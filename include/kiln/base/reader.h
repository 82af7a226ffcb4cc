// A bounded little-endian reader over untrusted bytes. It cannot read past
// its end: every read checks the remaining length first, and a short read
// reports the offset where data ran out. Loaders use it for every field.
#ifndef KILN_BASE_READER_H_
#define KILN_BASE_READER_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/base/views.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_reader_t {
  const uint8_t* data;
  size_t size;
  size_t offset;  // next byte to read, always <= size
  // Added to offsets in error messages so a reader over a section reports
  // positions in the whole file.
  size_t base_offset;
  const char* what;  // names the data in errors ("module header"); may be NULL
} kiln_reader_t;

void kiln_reader_init(kiln_reader_t* reader, kiln_const_byte_span_t bytes,
                      size_t base_offset, const char* what);
static inline size_t kiln_reader_remaining(const kiln_reader_t* reader) {
  return reader->size - reader->offset;
}

kiln_status_t kiln_reader_read_u8(kiln_reader_t* reader, uint8_t* out);
kiln_status_t kiln_reader_read_u16(kiln_reader_t* reader, uint16_t* out);
kiln_status_t kiln_reader_read_u32(kiln_reader_t* reader, uint32_t* out);
kiln_status_t kiln_reader_read_u64(kiln_reader_t* reader, uint64_t* out);
kiln_status_t kiln_reader_read_i32(kiln_reader_t* reader, int32_t* out);
kiln_status_t kiln_reader_read_i64(kiln_reader_t* reader, int64_t* out);
kiln_status_t kiln_reader_read_f32(kiln_reader_t* reader, float* out);
kiln_status_t kiln_reader_read_f64(kiln_reader_t* reader, double* out);
// Returns a view of the next `length` bytes without copying.
kiln_status_t kiln_reader_read_span(kiln_reader_t* reader, size_t length,
                                    kiln_const_byte_span_t* out);
kiln_status_t kiln_reader_skip(kiln_reader_t* reader, size_t length);
// Moves to an absolute offset inside the data (offset == size is allowed).
kiln_status_t kiln_reader_seek(kiln_reader_t* reader, size_t offset);
// Skips to the next multiple of `alignment` (a power of two).
kiln_status_t kiln_reader_align(kiln_reader_t* reader, size_t alignment);
// A reader over [offset, offset + length) of this one, for sections.
kiln_status_t kiln_reader_subreader(const kiln_reader_t* reader, size_t offset,
                                    size_t length, const char* what,
                                    kiln_reader_t* out);

// Unchecked little-endian loads for data already bounds-checked.
static inline uint16_t kiln_load_le_u16(const uint8_t* p) {
  return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t kiln_load_le_u32(const uint8_t* p) {
  return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
         ((uint32_t)p[3] << 24);
}
static inline uint64_t kiln_load_le_u64(const uint8_t* p) {
  return (uint64_t)kiln_load_le_u32(p) | ((uint64_t)kiln_load_le_u32(p + 4) << 32);
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_READER_H_
