// Element types of buffer views: sizes and names.
#include <string.h>

#include "kiln/hal/types.h"

static const struct {
  const char* name;
  size_t size;
} kElementTypes[KILN_HAL_ELEMENT_TYPE_COUNT] = {
    [KILN_HAL_ELEMENT_F16] = {"f16", 2},  [KILN_HAL_ELEMENT_BF16] = {"bf16", 2},
    [KILN_HAL_ELEMENT_F32] = {"f32", 4},  [KILN_HAL_ELEMENT_F64] = {"f64", 8},
    [KILN_HAL_ELEMENT_I8] = {"i8", 1},    [KILN_HAL_ELEMENT_I16] = {"i16", 2},
    [KILN_HAL_ELEMENT_I32] = {"i32", 4},  [KILN_HAL_ELEMENT_I64] = {"i64", 8},
    [KILN_HAL_ELEMENT_U8] = {"u8", 1},    [KILN_HAL_ELEMENT_U16] = {"u16", 2},
    [KILN_HAL_ELEMENT_U32] = {"u32", 4},  [KILN_HAL_ELEMENT_U64] = {"u64", 8},
    [KILN_HAL_ELEMENT_BOOL] = {"bool", 1},
};

size_t kiln_hal_element_type_size(kiln_hal_element_type_t type) {
  if ((unsigned)type >= KILN_HAL_ELEMENT_TYPE_COUNT) return 0;
  return kElementTypes[type].size;
}

const char* kiln_hal_element_type_name(kiln_hal_element_type_t type) {
  if ((unsigned)type >= KILN_HAL_ELEMENT_TYPE_COUNT) return "invalid";
  return kElementTypes[type].name;
}

kiln_status_t kiln_hal_element_type_parse(kiln_string_view_t name,
                                          kiln_hal_element_type_t* out_type) {
  *out_type = KILN_HAL_ELEMENT_F32;
  for (int i = 0; i < KILN_HAL_ELEMENT_TYPE_COUNT; ++i) {
    if (kiln_string_view_equal_cstring(name, kElementTypes[i].name)) {
      *out_type = (kiln_hal_element_type_t)i;
      return kiln_ok_status();
    }
  }
  return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                          "unknown element type '%.*s' (known: f16, bf16, "
                          "f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, "
                          "bool)",
                          KILN_SV_ARG(name));
}
