// A Conv with bias (+ Add of a residual input, + Relu) as exporters write
// ResNet's, for the tests of the conv lowerings (columns on tensor cores or
// the SIMT gemm, implicit GEMM).
#ifndef KILN_TESTS_ONNX_GPU_CONV_GRAPH_H_
#define KILN_TESTS_ONNX_GPU_CONV_GRAPH_H_

#include <stdbool.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"

typedef struct kiln_conv_case_t {
  int64_t x[4], w[4];
  int64_t pads[4];  // top, left, bottom, right
  int64_t stride, dilation;
  bool residual, relu;
  bool constant_weight;  // w a seeded constant (else a graph input)
} kiln_conv_case_t;

// The graph of case `c` (opset 13), output y; the caller deinitializes it.
// Fails the test (non-fatally) on error.
void kiln_conv_case_graph(const kiln_conv_case_t* c, kiln_graph_t* g);

// The case's reduction length: input channels times the window.
double kiln_conv_case_k(const kiln_conv_case_t* c);

#endif  // KILN_TESTS_ONNX_GPU_CONV_GRAPH_H_
