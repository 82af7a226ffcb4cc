// The text forms of tensors shared with iree-run-module, so users' habits
// carry over:
//   --input=2x2xi32=1 2 3 4     --input=2x2xi32=[1 2][3 4]   (separators:
//   whitespace, commas and brackets)   --input=1x3xf32=0.5 (one value splats)
//   --input=4xf32 (zeros)   --input=f32=1.5 (rank 0)   --input=7 (a scalar
//   argument)   --input=@x.npy / +x.npy (first / next array of a .npy file)
//   --input=2x2xf32=@x.bin (raw bytes; a .npy file must match the type)   --input=(null)
// and the printed form "2x2xi32=[1 2][3 4]".
#ifndef KILN_TOOLS_COMMON_TENSOR_TEXT_H_
#define KILN_TOOLS_COMMON_TENSOR_TEXT_H_

#include <stdio.h>

#include "host_tensor.h"

typedef enum kiln_input_kind_e {
  KILN_INPUT_TENSOR = 0,
  KILN_INPUT_SCALAR,  // a plain number; its type comes from the signature
  KILN_INPUT_NULL,    // "(null)"
} kiln_input_kind_t;

typedef struct kiln_input_value_t {
  kiln_input_kind_t kind;
  kiln_host_tensor_t tensor;  // KILN_INPUT_TENSOR
  bool scalar_is_integer;     // KILN_INPUT_SCALAR
  int64_t scalar_i64;
  double scalar_f64;
} kiln_input_value_t;

// Remembers how far each .npy file has been read, for "+file.npy".
#define KILN_INPUT_PARSER_MAX_FILES 32
typedef struct kiln_input_parser_t {
  kiln_allocator_t allocator;
  // Largest tensor one --input may make (default 4 GiB): a typo such as
  // 222222x2222xf32 is an error, not an allocation of gigabytes.
  uint64_t max_tensor_bytes;
  size_t file_count;
  char* file_paths[KILN_INPUT_PARSER_MAX_FILES];
  size_t file_offsets[KILN_INPUT_PARSER_MAX_FILES];
} kiln_input_parser_t;

void kiln_input_parser_init(kiln_input_parser_t* parser,
                            kiln_allocator_t allocator);
void kiln_input_parser_deinit(kiln_input_parser_t* parser);
// Parses one --input value. Errors quote the text and say what was expected.
kiln_status_t kiln_input_parser_parse(kiln_input_parser_t* parser,
                                      const char* text,
                                      kiln_input_value_t* out_value);
void kiln_input_value_deinit(kiln_input_value_t* value);

// Parses "2x3xf32" into rank, dims and element type.
kiln_status_t kiln_tensor_type_parse(kiln_string_view_t text, size_t* out_rank,
                                     int64_t* dims,
                                     kiln_element_type_t* out_type);

// Prints "2x2xf32=[1 2][3 4]" followed by a newline; prints at most
// `max_elements` values and then "...".
void kiln_tensor_print(FILE* stream, const kiln_host_tensor_t* tensor,
                       size_t max_elements);

// Compares shape, type and values; float elements match when
// |actual - expected| <= threshold (NaN matches NaN). On a mismatch the
// status names the first differing index with both values.
kiln_status_t kiln_tensor_compare(const kiln_host_tensor_t* actual,
                                  const kiln_host_tensor_t* expected,
                                  double threshold);

#endif  // KILN_TOOLS_COMMON_TENSOR_TEXT_H_
