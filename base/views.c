#include "kiln/base/views.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

kiln_string_view_t kiln_make_cstring_view(const char* text) {
  return kiln_make_string_view(text ? text : "", text ? strlen(text) : 0);
}

bool kiln_string_view_equal(kiln_string_view_t a, kiln_string_view_t b) {
  return a.size == b.size && (a.size == 0 || memcmp(a.data, b.data, a.size) == 0);
}

bool kiln_string_view_equal_cstring(kiln_string_view_t a, const char* b) {
  return kiln_string_view_equal(a, kiln_make_cstring_view(b));
}

bool kiln_string_view_starts_with(kiln_string_view_t text,
                                  kiln_string_view_t prefix) {
  return text.size >= prefix.size &&
         (prefix.size == 0 || memcmp(text.data, prefix.data, prefix.size) == 0);
}

bool kiln_string_view_ends_with(kiln_string_view_t text,
                                kiln_string_view_t suffix) {
  return text.size >= suffix.size &&
         (suffix.size == 0 ||
          memcmp(text.data + text.size - suffix.size, suffix.data,
                 suffix.size) == 0);
}

size_t kiln_string_view_find_char(kiln_string_view_t text, char c) {
  for (size_t i = 0; i < text.size; ++i) {
    if (text.data[i] == c) return i;
  }
  return SIZE_MAX;
}

size_t kiln_string_view_find_last_char(kiln_string_view_t text, char c) {
  for (size_t i = text.size; i > 0; --i) {
    if (text.data[i - 1] == c) return i - 1;
  }
  return SIZE_MAX;
}

kiln_string_view_t kiln_string_view_substring(kiln_string_view_t text,
                                              size_t position, size_t length) {
  if (position > text.size) position = text.size;
  if (length > text.size - position) length = text.size - position;
  return kiln_make_string_view(text.data + position, length);
}

kiln_string_view_t kiln_string_view_trim(kiln_string_view_t text) {
  size_t begin = 0, end = text.size;
  while (begin < end && isspace((unsigned char)text.data[begin])) ++begin;
  while (end > begin && isspace((unsigned char)text.data[end - 1])) --end;
  return kiln_make_string_view(text.data + begin, end - begin);
}

bool kiln_string_view_split(kiln_string_view_t text, char separator,
                            kiln_string_view_t* out_head,
                            kiln_string_view_t* out_tail) {
  size_t index = kiln_string_view_find_char(text, separator);
  if (index == SIZE_MAX) {
    if (out_head) *out_head = text;
    if (out_tail) *out_tail = kiln_make_string_view(text.data + text.size, 0);
    return false;
  }
  if (out_head) *out_head = kiln_make_string_view(text.data, index);
  if (out_tail) {
    *out_tail =
        kiln_make_string_view(text.data + index + 1, text.size - index - 1);
  }
  return true;
}

// strto* need NUL termination; numbers are short, so copy onto the stack.
static kiln_status_t kiln_copy_number_text(kiln_string_view_t text,
                                           char* buffer, size_t buffer_size) {
  if (text.size == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "expected a number, got empty text");
  }
  if (text.size >= buffer_size) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "number text '%.*s' is too long (%zu characters)",
                            (int)(text.size > 32 ? 32 : text.size), text.data,
                            text.size);
  }
  memcpy(buffer, text.data, text.size);
  buffer[text.size] = 0;
  if (isspace((unsigned char)buffer[0])) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "number '%s' starts with whitespace", buffer);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_string_view_parse_i64(kiln_string_view_t text,
                                         int64_t* out_value) {
  char buffer[72];
  KILN_RETURN_IF_ERROR(kiln_copy_number_text(text, buffer, sizeof(buffer)));
  char* end = NULL;
  errno = 0;
  long long value = strtoll(buffer, &end, 0);
  if (end == buffer || *end != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "'%s' is not an integer", buffer);
  }
  if (errno == ERANGE) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "integer '%s' does not fit in 64 bits", buffer);
  }
  *out_value = (int64_t)value;
  return kiln_ok_status();
}

kiln_status_t kiln_string_view_parse_u64(kiln_string_view_t text,
                                         uint64_t* out_value) {
  char buffer[72];
  KILN_RETURN_IF_ERROR(kiln_copy_number_text(text, buffer, sizeof(buffer)));
  if (buffer[0] == '-') {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "'%s' is negative; expected an unsigned integer",
                            buffer);
  }
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(buffer, &end, 0);
  if (end == buffer || *end != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "'%s' is not an unsigned integer", buffer);
  }
  if (errno == ERANGE) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "integer '%s' does not fit in 64 bits", buffer);
  }
  *out_value = (uint64_t)value;
  return kiln_ok_status();
}

kiln_status_t kiln_string_view_parse_f64(kiln_string_view_t text,
                                         double* out_value) {
  char buffer[128];
  KILN_RETURN_IF_ERROR(kiln_copy_number_text(text, buffer, sizeof(buffer)));
  char* end = NULL;
  errno = 0;
  double value = strtod(buffer, &end);
  if (end == buffer || *end != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "'%s' is not a number", buffer);
  }
  if (errno == ERANGE && isinf(value)) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "number '%s' overflows a double", buffer);
  }
  *out_value = value;
  return kiln_ok_status();
}
