#include "kiln/base/reader.h"

#include <string.h>

#include "kiln/base/size_math.h"

void kiln_reader_init(kiln_reader_t* reader, kiln_const_byte_span_t bytes,
                      size_t base_offset, const char* what) {
  reader->data = bytes.data;
  reader->size = bytes.data ? bytes.size : 0;
  reader->offset = 0;
  reader->base_offset = base_offset;
  reader->what = what;
}

static kiln_status_t kiln_reader_short(const kiln_reader_t* reader,
                                       size_t needed) {
  return kiln_make_status(
      KILN_STATUS_OUT_OF_RANGE,
      "%s%struncated at offset %zu: needed %zu bytes, %zu remain",
      reader->what ? reader->what : "", reader->what ? " " : "",
      reader->base_offset + reader->offset, needed,
      reader->size - reader->offset);
}

// Hands out a pointer to `length` bytes and advances, or fails with the
// offset at which the data ran out.
static kiln_status_t kiln_reader_take(kiln_reader_t* reader, size_t length,
                                      const uint8_t** out) {
  if (KILN_UNLIKELY(length > reader->size - reader->offset)) {
    return kiln_reader_short(reader, length);
  }
  *out = reader->data + reader->offset;
  reader->offset += length;
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_u8(kiln_reader_t* reader, uint8_t* out) {
  const uint8_t* p = NULL;
  KILN_RETURN_IF_ERROR(kiln_reader_take(reader, 1, &p));
  *out = p[0];
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_u16(kiln_reader_t* reader, uint16_t* out) {
  const uint8_t* p = NULL;
  KILN_RETURN_IF_ERROR(kiln_reader_take(reader, 2, &p));
  *out = kiln_load_le_u16(p);
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_u32(kiln_reader_t* reader, uint32_t* out) {
  const uint8_t* p = NULL;
  KILN_RETURN_IF_ERROR(kiln_reader_take(reader, 4, &p));
  *out = kiln_load_le_u32(p);
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_u64(kiln_reader_t* reader, uint64_t* out) {
  const uint8_t* p = NULL;
  KILN_RETURN_IF_ERROR(kiln_reader_take(reader, 8, &p));
  *out = kiln_load_le_u64(p);
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_i32(kiln_reader_t* reader, int32_t* out) {
  uint32_t bits;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &bits));
  memcpy(out, &bits, sizeof(bits));
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_i64(kiln_reader_t* reader, int64_t* out) {
  uint64_t bits;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u64(reader, &bits));
  memcpy(out, &bits, sizeof(bits));
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_f32(kiln_reader_t* reader, float* out) {
  uint32_t bits;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u32(reader, &bits));
  memcpy(out, &bits, sizeof(bits));
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_f64(kiln_reader_t* reader, double* out) {
  uint64_t bits;
  KILN_RETURN_IF_ERROR(kiln_reader_read_u64(reader, &bits));
  memcpy(out, &bits, sizeof(bits));
  return kiln_ok_status();
}

kiln_status_t kiln_reader_read_span(kiln_reader_t* reader, size_t length,
                                    kiln_const_byte_span_t* out) {
  const uint8_t* p = NULL;
  KILN_RETURN_IF_ERROR(kiln_reader_take(reader, length, &p));
  *out = kiln_make_const_byte_span(p, length);
  return kiln_ok_status();
}

kiln_status_t kiln_reader_skip(kiln_reader_t* reader, size_t length) {
  const uint8_t* p = NULL;
  return kiln_reader_take(reader, length, &p);
}

kiln_status_t kiln_reader_seek(kiln_reader_t* reader, size_t offset) {
  if (offset > reader->size) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "%s%soffset %zu is past the end (size %zu)",
                            reader->what ? reader->what : "",
                            reader->what ? " " : "",
                            reader->base_offset + offset, reader->size);
  }
  reader->offset = offset;
  return kiln_ok_status();
}

kiln_status_t kiln_reader_align(kiln_reader_t* reader, size_t alignment) {
  size_t aligned;
  if (!kiln_size_align_up(reader->offset, alignment, &aligned)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "alignment %zu is not a power of two", alignment);
  }
  return kiln_reader_skip(reader, aligned - reader->offset);
}

kiln_status_t kiln_reader_subreader(const kiln_reader_t* reader, size_t offset,
                                    size_t length, const char* what,
                                    kiln_reader_t* out) {
  if (!kiln_range_fits(offset, length, reader->size)) {
    return kiln_make_status(
        KILN_STATUS_OUT_OF_RANGE,
        "%s%s[%zu, +%zu) lies outside %s%s(size %zu)", what ? what : "",
        what ? " " : "", reader->base_offset + offset, length,
        reader->what ? reader->what : "", reader->what ? " " : "",
        reader->size);
  }
  kiln_reader_init(out,
                   kiln_make_const_byte_span(reader->data + offset, length),
                   reader->base_offset + offset, what);
  return kiln_ok_status();
}
