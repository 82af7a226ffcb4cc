// Comparing a device result with its reference, and the pseudo-random
// inputs the reference checks feed both, shared by the GPU tests.
#ifndef KILN_TESTS_ONNX_GPU_TENSOR_COMPARE_H_
#define KILN_TESTS_ONNX_GPU_TENSOR_COMPARE_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_tensor.h"

typedef struct kiln_tensor_error_t {
  double max_err;  // max|actual - expected|; INFINITY once a difference is NaN
  double max_ref;  // max|expected|
  size_t worst;    // the element of max_err (the first NaN's, if any)
} kiln_tensor_error_t;

// Over expected's elements (float32 or float16; actual either too, of the
// same element count: callers check the shapes first).
kiln_tensor_error_t kiln_tensor_max_error(const kiln_graph_tensor_t* actual,
                                          const kiln_graph_tensor_t* expected);

// Allocates graph input i (float32, its inferred shape) into inputs[i] for
// every input, filled with values in [-1, 1) from an LCG started at
// `seed`; leaves the test (fatal assertion) if one cannot be allocated.
void kiln_tensor_random_inputs(const kiln_graph_t* graph, uint32_t seed,
                               kiln_graph_tensor_t* inputs);

// A K-term float32 sum's rounding grows like sqrt(K), while a cut-short or
// misplaced loop is off by a sizeable fraction of max|ref|: checks
// max_err <= 1e-6 * sqrt(k) * max|ref| (and max|ref| > 0), printing both to
// stderr after `label`.
void kiln_tensor_expect_sum_error(const kiln_graph_tensor_t* actual,
                                  const kiln_graph_tensor_t* expected, double k,
                                  const char* label);

#endif  // KILN_TESTS_ONNX_GPU_TENSOR_COMPARE_H_
