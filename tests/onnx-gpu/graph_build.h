// Small hand-built graphs in the GPU tests: float32 inputs of given dims
// and node attributes (each failing the test non-fatally on an error),
// outputs, and tensors for the inputs.
// Nodes and outputs: kiln_gpu_graph_add_node / _add_output (onnx_gpu_util.h).
#ifndef KILN_TESTS_ONNX_GPU_GRAPH_BUILD_H_
#define KILN_TESTS_ONNX_GPU_GRAPH_BUILD_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_tensor.h"

// The shape dims[0..rank) (the rest zero).
kiln_graph_shape_t kiln_test_shape(int32_t rank, const int64_t* dims);
// A float32 graph input of dims[0..rank); returns its value id.
int32_t kiln_test_graph_input(kiln_graph_t* graph, const char* name, int32_t rank,
                              const int64_t* dims);

void kiln_test_attr_int(kiln_graph_t* graph, int32_t node, const char* name, int64_t value);
void kiln_test_attr_ints(kiln_graph_t* graph, int32_t node, const char* name,
                         const int64_t* values, size_t count);
void kiln_test_attr_float(kiln_graph_t* graph, int32_t node, const char* name, float value);

// Allocates every graph input (its dtype and inferred shape) into inputs[i];
// leaves the test (fatal assertion) if one cannot be. Contents are zero.
void kiln_test_graph_allocate_inputs(const kiln_graph_t* graph, kiln_graph_tensor_t* inputs);
// Marks `count` values as the graph's outputs, in order, then infers shapes
// (leaves the test on an error).
void kiln_test_graph_finish(kiln_graph_t* graph, const int32_t* outputs, size_t count);
void kiln_test_tensors_deinit(kiln_graph_tensor_t* tensors, size_t count);

#endif  // KILN_TESTS_ONNX_GPU_GRAPH_BUILD_H_
