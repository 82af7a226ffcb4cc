// .npy files of the committed model tests (tests/data) as graph tensors.
#ifndef KILN_TESTS_ONNX_GPU_NPY_UTIL_H_
#define KILN_TESTS_ONNX_GPU_NPY_UTIL_H_

#include "kiln/compiler/graph_tensor.h"

// A float32 .npy file as a graph tensor (the caller deinits it).
kiln_status_t kiln_test_read_npy_f32(const char* path, kiln_graph_tensor_t* out);

#endif  // KILN_TESTS_ONNX_GPU_NPY_UTIL_H_
