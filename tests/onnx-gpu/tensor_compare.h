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
// misplaced loop is off by a sizeable fraction of max|ref|:
// kiln_tensor_expect_relative_error with the bound 1e-6 * sqrt(k).
void kiln_tensor_expect_sum_error(const kiln_graph_tensor_t* actual,
                                  const kiln_graph_tensor_t* expected, double k,
                                  const char* label);

// Checks that the two have the same byte size, then max_err <= bound *
// max|ref| (and max|ref| > 0), printing both to stderr after `label`.
void kiln_tensor_expect_relative_error(const kiln_graph_tensor_t* actual,
                                       const kiln_graph_tensor_t* expected, double bound,
                                       const char* label);

#define KILN_REFERENCE_MAX_INPUTS 4

// A hand-built graph checked against the C reference executor
// (graph_reference.h): its inputs, the reference's output for them, and
// the device's, which the caller computes into `actual`.
typedef struct kiln_reference_check_t {
  size_t input_count;
  kiln_graph_tensor_t inputs[KILN_REFERENCE_MAX_INPUTS];
  kiln_graph_tensor_t expected;
  kiln_graph_tensor_t actual;
} kiln_reference_check_t;

// Zeroes *out_check for `graph`'s inputs (leaves the test past
// KILN_REFERENCE_MAX_INPUTS); the caller fills `inputs`, then runs the
// reference on them (before a compile rewrites the graph) into `expected`.
void kiln_reference_check_init(const kiln_graph_t* graph, kiln_reference_check_t* out_check);
void kiln_reference_check_run_reference(const kiln_graph_t* graph,
                                        kiln_reference_check_t* check);
// Infers `graph`'s shapes, then all of the above with inputs from `seed`
// (kiln_tensor_random_inputs). Fails the test on an error.
void kiln_reference_check_prepare(kiln_graph_t* graph, uint32_t seed,
                                  kiln_reference_check_t* out_check);
void kiln_reference_check_release(kiln_reference_check_t* check);

#endif  // KILN_TESTS_ONNX_GPU_TENSOR_COMPARE_H_
