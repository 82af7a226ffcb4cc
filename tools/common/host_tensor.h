// A dense row-major tensor in host memory: what the tools parse from
// --input, read from .npy files, print, and compare. The HAL-module bridge
// turns it into a device buffer view and back.
#ifndef KILN_TOOLS_COMMON_HOST_TENSOR_H_
#define KILN_TOOLS_COMMON_HOST_TENSOR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/base/half.h"  // kiln_f32_to_f16 etc.
#include "kiln/base/status.h"
#include "kiln/base/views.h"

#define KILN_HOST_TENSOR_MAX_RANK 8

typedef enum kiln_element_type_e {
  KILN_ELEMENT_NONE = 0,
  KILN_ELEMENT_F16,
  KILN_ELEMENT_BF16,
  KILN_ELEMENT_F32,
  KILN_ELEMENT_F64,
  KILN_ELEMENT_I8,
  KILN_ELEMENT_I16,
  KILN_ELEMENT_I32,
  KILN_ELEMENT_I64,
  KILN_ELEMENT_U8,
  KILN_ELEMENT_U16,
  KILN_ELEMENT_U32,
  KILN_ELEMENT_U64,
  KILN_ELEMENT_BOOL,  // one byte per element, 0 or 1
  KILN_ELEMENT_TYPE_COUNT,
} kiln_element_type_t;

// "f32", "i64", "bool", ...; NULL for an unknown type.
const char* kiln_element_type_name(kiln_element_type_t type);
size_t kiln_element_type_size(kiln_element_type_t type);
bool kiln_element_type_is_float(kiln_element_type_t type);
// Parses a type token; unknown tokens fail with the list of known ones.
kiln_status_t kiln_element_type_parse(kiln_string_view_t text,
                                      kiln_element_type_t* out_type);

typedef struct kiln_host_tensor_t {
  kiln_allocator_t allocator;
  kiln_element_type_t element_type;
  size_t rank;
  int64_t dims[KILN_HOST_TENSOR_MAX_RANK];
  size_t element_count;
  size_t byte_size;
  uint8_t* data;  // owned; NULL only when byte_size == 0
} kiln_host_tensor_t;

// Element count and byte size of a shape: overflow, negative dimensions and
// sizes over the host tensor limit are refused, so callers can check a
// shape against a file's length before allocating anything.
kiln_status_t kiln_host_tensor_byte_size(kiln_element_type_t element_type,
                                         size_t rank, const int64_t* dims,
                                         size_t* out_count,
                                         size_t* out_byte_size);
// The largest host tensor the tools allocate (kiln-run-module sets it from
// --memory_budget_mb); the default is half the session's default budget.
#define KILN_HOST_TENSOR_DEFAULT_LIMIT ((size_t)4 << 30)
void kiln_host_tensor_set_limit(size_t max_bytes);
size_t kiln_host_tensor_limit(void);
// Input files (.npy, raw) larger than this are refused before reading: the
// limit plus room for .npy headers.
#define KILN_HOST_TENSOR_FILE_SLACK ((size_t)1 << 20)

// Allocates a zero-filled tensor; checks the element count and byte size
// for overflow and the limit, and refuses negative dimensions.
kiln_status_t kiln_host_tensor_allocate(kiln_allocator_t allocator,
                                        kiln_element_type_t element_type,
                                        size_t rank, const int64_t* dims,
                                        kiln_host_tensor_t* out_tensor);
void kiln_host_tensor_deinit(kiln_host_tensor_t* tensor);

// Element i as a double (for printing and comparing any type).
double kiln_host_tensor_get_f64(const kiln_host_tensor_t* tensor,
                                size_t index);
// Stores a double into element i, converting to the element type.
void kiln_host_tensor_set_f64(kiln_host_tensor_t* tensor, size_t index,
                              double value);
// Stores an integer exactly (i64/u64 values beyond 2^53 stay exact).
void kiln_host_tensor_set_i64(kiln_host_tensor_t* tensor, size_t index,
                              int64_t value);

// "2x3xf32" (no trailing "x" for rank 0: "f32").
void kiln_host_tensor_format_shape(const kiln_host_tensor_t* tensor,
                                   char* buffer, size_t buffer_size);

#endif  // KILN_TOOLS_COMMON_HOST_TENSOR_H_
