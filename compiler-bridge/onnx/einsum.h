// Einsum equations ("bhid,bhjd->bhij"): parsed once, shared by the op's
// checker, the reference executor and the GPU lowering.
#ifndef KILN_COMPILER_BRIDGE_ONNX_EINSUM_H_
#define KILN_COMPILER_BRIDGE_ONNX_EINSUM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"

#define KILN_EINSUM_MAX_INPUTS 2
#define KILN_EINSUM_MAX_LABELS 52  // a-z, A-Z

typedef struct kiln_einsum_t {
  size_t input_count;
  // Per operand (inputs, then the output at index input_count): its labels
  // as indices into 0..label_count-1, one per dim.
  int32_t rank[KILN_EINSUM_MAX_INPUTS + 1];
  int32_t labels[KILN_EINSUM_MAX_INPUTS + 1][KILN_GRAPH_MAX_RANK];
  int32_t label_count;
  char names[KILN_EINSUM_MAX_LABELS];  // label index -> letter
} kiln_einsum_t;

// Parses `equation` for `input_count` operands. Spaces are ignored; an
// implicit output (no "->") is the labels used once, in alphabetical order.
// Fails with a message in `error` (ellipses are not supported).
bool kiln_einsum_parse(const char* equation, size_t input_count, kiln_einsum_t* out,
                       char* error, size_t error_size);

#endif  // KILN_COMPILER_BRIDGE_ONNX_EINSUM_H_
