// A Conv with bias (+ Add of a residual input, + Relu) as exporters write
// ResNet's, for the tests of the conv lowerings (columns on tensor cores or
// the SIMT gemm, implicit GEMM).
#ifndef KILN_TESTS_ONNX_GPU_CONV_GRAPH_H_
#define KILN_TESTS_ONNX_GPU_CONV_GRAPH_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/onnx_compile.h"
#include "onnx_gpu_util.h"

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

// Batch-1 and batch-2 convs of ResNet's shapes and the edges around them
// (pads on every side, strides, dilation, 5x5, K 4608, the 1x1s with rows
// off the multiple of 8, a 7x7 stem over 3 channels with a constant
// weight): the lowering tests' common cases.
extern const kiln_conv_case_t kiln_conv_cases[];
extern const size_t kiln_conv_case_count;

// Compiles (only) case `c` for `target` at `precision`, with or without
// cooperative matrix, and returns its disassembly in `assembly` (release it
// with kiln_gpu_capture_release).
void kiln_conv_case_compile(const kiln_conv_case_t* c, const char* target,
                            kiln_onnx_precision_t precision, bool cooperative_matrix,
                            kiln_gpu_capture_t* assembly);

// The case's reduction length: input channels times the window.
double kiln_conv_case_k(const kiln_conv_case_t* c);

// Compiles case `c` for `target` alone at `precision` (SIMT kernels: no
// cooperative matrix), runs it on the test device posing as that triple
// with inputs from `seed`, and checks it against the C reference executor:
// fp32 within 1e-6 * sqrt(K) of max|ref| (kiln_tensor_expect_sum_error),
// fp16 storage within 1e-2. Failures are reported under `label`.
void kiln_conv_case_check_posed(const kiln_conv_case_t* c, const char* target,
                                kiln_onnx_precision_t precision, uint32_t seed,
                                const char* label);

// The disassembly of case `c` compiled with `options` (dispatch count
// only, nothing run); release it with kiln_gpu_capture_release.
void kiln_conv_case_compile_with(const kiln_conv_case_t* c,
                                 kiln_onnx_compile_options_t* options,
                                 kiln_gpu_capture_t* assembly);

#endif  // KILN_TESTS_ONNX_GPU_CONV_GRAPH_H_
