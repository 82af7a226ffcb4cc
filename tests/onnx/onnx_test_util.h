// Helpers shared by the ONNX tests: tensor comparison with tolerances and
// running a model directory's test data sets.
#ifndef KILN_TESTS_ONNX_ONNX_TEST_UTIL_H_
#define KILN_TESTS_ONNX_ONNX_TEST_UTIL_H_

#include <stdbool.h>
#include <stddef.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_tensor.h"

// Compares `actual` to `expected`: same dtype and shape; floats within
// atol + rtol * |expected| (NaN matches NaN), others exactly. On mismatch
// writes a description into `message` and returns false.
bool kiln_onnx_test_compare(const kiln_graph_tensor_t* actual,
                            const kiln_graph_tensor_t* expected, double rtol,
                            double atol, char* message, size_t message_size);

typedef enum kiln_node_test_result_e {
  KILN_NODE_TEST_PASSED = 0,
  KILN_NODE_TEST_UNSUPPORTED,  // refused at import (UNIMPLEMENTED)
  KILN_NODE_TEST_REFUSED,      // refused at import for another reason
  KILN_NODE_TEST_FAILED,       // accepted but wrong (or crashed in a pass)
  KILN_NODE_TEST_SKIPPED,      // over the size limit
} kiln_node_test_result_t;

// Imports `dir`/model.onnx, runs it raw and after the default passes with a
// memory plan, on every test_data_set_*, comparing with the stored outputs.
kiln_node_test_result_t kiln_onnx_run_node_test(const char* dir, double rtol,
                                                double atol, char* message,
                                                size_t message_size);

#endif  // KILN_TESTS_ONNX_ONNX_TEST_UTIL_H_
