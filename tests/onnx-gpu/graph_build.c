// See graph_build.h.
#include "graph_build.h"

#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln_test.h"
#include "onnx_gpu_util.h"

kiln_graph_shape_t kiln_test_shape(int32_t rank, const int64_t* dims) {
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = rank;
  for (int32_t d = 0; d < rank; ++d) shape.dims[d] = dims[d];
  return shape;
}

int32_t kiln_test_graph_input(kiln_graph_t* graph, const char* name, int32_t rank,
                              const int64_t* dims) {
  kiln_graph_shape_t shape = kiln_test_shape(rank, dims);
  int32_t id = -1;
  KILN_EXPECT_OK(kiln_gpu_graph_add_input(graph, name, &shape, &id));
  return id;
}

// An attribute `name` of `type` (the value set by the caller).
static kiln_graph_attr_t kiln_test_attr(const char* name, kiln_graph_attr_type_t type) {
  kiln_graph_attr_t a;
  memset(&a, 0, sizeof(a));
  a.name = name;
  a.type = type;
  return a;
}

void kiln_test_attr_int(kiln_graph_t* graph, int32_t node, const char* name, int64_t value) {
  kiln_graph_attr_t a = kiln_test_attr(name, KILN_GRAPH_ATTR_INT);
  a.i = value;
  KILN_EXPECT_OK(kiln_graph_node_set_attr(graph, node, &a));
}

void kiln_test_attr_ints(kiln_graph_t* graph, int32_t node, const char* name,
                         const int64_t* values, size_t count) {
  kiln_graph_attr_t a = kiln_test_attr(name, KILN_GRAPH_ATTR_INTS);
  a.ints = values;
  a.count = count;
  KILN_EXPECT_OK(kiln_graph_node_set_attr(graph, node, &a));
}

void kiln_test_attr_float(kiln_graph_t* graph, int32_t node, const char* name, float value) {
  kiln_graph_attr_t a = kiln_test_attr(name, KILN_GRAPH_ATTR_FLOAT);
  a.f = value;
  KILN_EXPECT_OK(kiln_graph_node_set_attr(graph, node, &a));
}

void kiln_test_graph_allocate_inputs(const kiln_graph_t* graph, kiln_graph_tensor_t* inputs) {
  for (size_t i = 0; i < graph->input_count; ++i) {
    const kiln_graph_value_t* value = &graph->values[graph->inputs[i]];
    KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), value->dtype,
                                              &value->shape, &inputs[i]));
  }
}

void kiln_test_graph_finish(kiln_graph_t* graph, const int32_t* outputs, size_t count) {
  for (size_t o = 0; o < count; ++o) KILN_ASSERT_OK(kiln_gpu_graph_add_output(graph, outputs[o]));
  KILN_ASSERT_OK(kiln_graph_infer_shapes(graph));
}

void kiln_test_tensors_deinit(kiln_graph_tensor_t* tensors, size_t count) {
  for (size_t i = 0; i < count; ++i) kiln_graph_tensor_deinit(&tensors[i]);
}
