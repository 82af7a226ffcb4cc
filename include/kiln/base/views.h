// Non-owning string and byte views. Strings are not NUL-terminated: module
// string tables and command-line fragments are sliced without copying.
#ifndef KILN_BASE_VIEWS_H_
#define KILN_BASE_VIEWS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kiln_string_view_t {
  const char* data;
  size_t size;
} kiln_string_view_t;

typedef struct kiln_byte_span_t {
  uint8_t* data;
  size_t size;
} kiln_byte_span_t;

typedef struct kiln_const_byte_span_t {
  const uint8_t* data;
  size_t size;
} kiln_const_byte_span_t;

static inline kiln_string_view_t kiln_make_string_view(const char* data,
                                                       size_t size) {
  kiln_string_view_t view = {data, size};
  return view;
}
// From a NUL-terminated string; NULL gives the empty view.
kiln_string_view_t kiln_make_cstring_view(const char* text);
static inline kiln_const_byte_span_t kiln_make_const_byte_span(
    const void* data, size_t size) {
  kiln_const_byte_span_t span = {(const uint8_t*)data, size};
  return span;
}
static inline kiln_byte_span_t kiln_make_byte_span(void* data, size_t size) {
  kiln_byte_span_t span = {(uint8_t*)data, size};
  return span;
}

// For printf: printf("%.*s", KILN_SV_ARG(view)).
#define KILN_SV_ARG(view) (int)(view).size, (view).data

bool kiln_string_view_equal(kiln_string_view_t a, kiln_string_view_t b);
bool kiln_string_view_equal_cstring(kiln_string_view_t a, const char* b);
bool kiln_string_view_starts_with(kiln_string_view_t text,
                                  kiln_string_view_t prefix);
bool kiln_string_view_ends_with(kiln_string_view_t text,
                                kiln_string_view_t suffix);
// Index of the first `c`, or SIZE_MAX.
size_t kiln_string_view_find_char(kiln_string_view_t text, char c);
size_t kiln_string_view_find_last_char(kiln_string_view_t text, char c);
// Clamps out-of-range positions instead of failing.
kiln_string_view_t kiln_string_view_substring(kiln_string_view_t text,
                                              size_t position, size_t length);
kiln_string_view_t kiln_string_view_trim(kiln_string_view_t text);
// Splits at the first `separator`: head before it, tail after it. Without a
// separator, head is the whole text, tail is empty, and false is returned.
bool kiln_string_view_split(kiln_string_view_t text, char separator,
                            kiln_string_view_t* out_head,
                            kiln_string_view_t* out_tail);
// Parses a whole view as a decimal (or 0x-prefixed hex) integer; rejects
// empty text, trailing characters and values outside the type's range.
kiln_status_t kiln_string_view_parse_i64(kiln_string_view_t text,
                                         int64_t* out_value);
kiln_status_t kiln_string_view_parse_u64(kiln_string_view_t text,
                                         uint64_t* out_value);
kiln_status_t kiln_string_view_parse_f64(kiln_string_view_t text,
                                         double* out_value);

#ifdef __cplusplus
}
#endif

#endif  // KILN_BASE_VIEWS_H_
