// Function signatures as text: one character per value (`i` i32, `I` i64,
// `f` f32, `F` f64, `r` ref), `_` between arguments and results, `v` for an
// empty side ("v_i", "ii_v"). "ii_i" takes two i32 and returns one.
#ifndef KILN_FORMAT_SIGNATURE_H_
#define KILN_FORMAT_SIGNATURE_H_

#include <stdbool.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/base/views.h"
#include "kiln/format/module_format.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kiln_value_type_e {
  KILN_VALUE_TYPE_I32 = 'i',
  KILN_VALUE_TYPE_I64 = 'I',
  KILN_VALUE_TYPE_F32 = 'f',
  KILN_VALUE_TYPE_F64 = 'F',
  KILN_VALUE_TYPE_REF = 'r',
} kiln_value_type_t;

typedef struct kiln_format_signature_t {
  kiln_string_view_t text;  // as written (points into the source)
  uint8_t arg_count;
  uint8_t result_count;
  // arg types then result types (kiln_value_type_t characters).
  char types[2 * KILN_FORMAT_MAX_SIGNATURE_VALUES];
} kiln_format_signature_t;

// Parses and validates; errors quote the text and the bad position.
kiln_status_t kiln_format_signature_parse(kiln_string_view_t text,
                                          kiln_format_signature_t* out);

static inline bool kiln_value_type_is_64bit(char type) {
  return type == KILN_VALUE_TYPE_I64 || type == KILN_VALUE_TYPE_F64;
}

#ifdef __cplusplus
}
#endif

#endif  // KILN_FORMAT_SIGNATURE_H_
