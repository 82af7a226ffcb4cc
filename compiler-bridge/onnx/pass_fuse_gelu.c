// GELU recognition: the Erf form exporters write for nn.GELU(),
// 0.5 * x * (1 + erf(x / sqrt 2)) as Div (or Mul by 1/sqrt 2), Erf, Add 1,
// Mul x and Mul 0.5 in either order, becomes one Gelu node, which epilogue
// fusion then folds into the producing MatMul/Gemm/Conv. The last node of
// the pattern is rewritten in place (after x's producer, before every
// reader). The tanh form is left alone: the kernels' Gelu is the erf one.
#include <math.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "ops.h"

static int32_t kiln_gelu_reader(const kiln_graph_t* graph, int32_t value) {
  if (graph->values[value].is_output) return -1;
  int32_t reader = -1;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] != value) continue;
      if (reader >= 0) return -1;
      reader = (int32_t)n;
    }
  }
  return reader;
}

// A binary `op` node with one scalar f32 constant operand near `want`; the
// other operand in *other.
static bool kiln_gelu_scalar_op(const kiln_graph_t* graph, int32_t node_id, const char* op,
                                float want, bool constant_second, int32_t* other) {
  if (node_id < 0) return false;
  const kiln_graph_node_t* node = &graph->nodes[node_id];
  if (node->removed || strcmp(node->op_type, op) != 0 || node->input_count != 2) return false;
  for (int c = 0; c < 2; ++c) {
    if (constant_second && c != 1) continue;
    const kiln_graph_value_t* v = &graph->values[node->inputs[c]];
    size_t count = 0;
    if (!v->data || v->dtype != KILN_GRAPH_DTYPE_F32 ||
        !kiln_status_is_ok(kiln_graph_shape_element_count(&v->shape, &count)) || count != 1) {
      continue;
    }
    float value = *(const float*)v->data;
    if (fabsf(value - want) > 1e-6f * fabsf(want)) continue;
    *other = node->inputs[1 - c];
    return true;
  }
  return false;
}

static kiln_status_t kiln_fuse_gelu_at(kiln_graph_t* graph, int32_t erf) {
  int32_t t = graph->nodes[erf].inputs[0], x = -1, one_side = -1, y = -1;
  int32_t scaled = graph->values[t].producer;
  if (!kiln_gelu_scalar_op(graph, scaled, "Div", 1.41421356f, true, &x) &&
      !kiln_gelu_scalar_op(graph, scaled, "Mul", 0.70710678f, false, &x)) {
    return kiln_ok_status();
  }
  if (graph->values[x].dtype != KILN_GRAPH_DTYPE_F32 || kiln_gelu_reader(graph, t) != erf) {
    return kiln_ok_status();
  }
  int32_t e = graph->nodes[erf].outputs[0];
  int32_t add = kiln_gelu_reader(graph, e);
  if (!kiln_gelu_scalar_op(graph, add, "Add", 1.0f, false, &one_side) || one_side != e) {
    return kiln_ok_status();
  }
  int32_t a = graph->nodes[add].outputs[0];
  int32_t mul1 = kiln_gelu_reader(graph, a);
  if (mul1 < 0 || strcmp(graph->nodes[mul1].op_type, "Mul") != 0 ||
      graph->nodes[mul1].input_count != 2) {
    return kiln_ok_status();
  }
  int32_t partner = graph->nodes[mul1].inputs[0] == a ? graph->nodes[mul1].inputs[1]
                                                     : graph->nodes[mul1].inputs[0];
  int32_t last = -1, half = -1;
  if (partner == x) {
    // x * (1 + erf) then * 0.5.
    int32_t m = graph->nodes[mul1].outputs[0];
    int32_t mul2 = kiln_gelu_reader(graph, m);
    if (!kiln_gelu_scalar_op(graph, mul2, "Mul", 0.5f, false, &y) || y != m) {
      return kiln_ok_status();
    }
    last = mul2;
  } else {
    // (0.5 * x) * (1 + erf).
    half = graph->values[partner].producer;
    if (!kiln_gelu_scalar_op(graph, half, "Mul", 0.5f, false, &y) || y != x ||
        kiln_gelu_reader(graph, partner) != mul1) {
      return kiln_ok_status();
    }
    last = mul1;
  }
  int32_t out = graph->nodes[last].outputs[0];
  if (!kiln_graph_shape_equal(&graph->values[out].shape, &graph->values[x].shape)) {
    return kiln_ok_status();
  }
  kiln_graph_node_t* node = &graph->nodes[last];
  node->op_type = "Gelu";
  node->input_count = 0;
  node->attr_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, last, x));
  graph->nodes[scaled].removed = true;
  graph->nodes[erf].removed = true;
  graph->nodes[add].removed = true;
  if (last != mul1) graph->nodes[mul1].removed = true;
  if (half >= 0) graph->nodes[half].removed = true;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_fuse_gelu(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || strcmp(node->op_type, "Erf") != 0) continue;
    KILN_RETURN_IF_ERROR(kiln_fuse_gelu_at(graph, (int32_t)n));
  }
  return kiln_ok_status();
}
