// SiLU recognition: exporters write nn.SiLU() as Mul(x, Sigmoid(x)) (no
// ONNX op at these opsets), two dispatches and two memory passes. When the
// Sigmoid's only reader is that Mul, the Mul becomes one kiln.Silu node
// (KILN_ACT_SILU, exactly the pair's float arithmetic), which epilogue
// fusion then folds into the producing Conv/Gemm/MatMul. Squeeze-excite's
// Mul(x, Sigmoid(s)) with another s is a different product and stays.
#include <string.h>

#include "attention_views.h"
#include "kiln/compiler/graph_passes.h"
#include "ops.h"

static kiln_status_t kiln_fuse_silu_at(kiln_graph_t* graph, int32_t sigmoid) {
  const kiln_graph_node_t* s = &graph->nodes[sigmoid];
  if (s->input_count != 1 || s->output_count != 1 || s->inputs[0] < 0 || s->outputs[0] < 0) {
    return kiln_ok_status();
  }
  int32_t x = s->inputs[0], sx = s->outputs[0];
  int32_t mul = kiln_view_only_reader(graph, sx);
  if (mul < 0) return kiln_ok_status();
  kiln_graph_node_t* node = &graph->nodes[mul];
  if (strcmp(node->op_type, "Mul") != 0 || node->input_count != 2 || node->output_count != 1 ||
      node->outputs[0] < 0) {
    return kiln_ok_status();
  }
  int32_t other = node->inputs[0] == sx ? node->inputs[1] : node->inputs[0];
  if (other != x || graph->values[x].dtype != KILN_GRAPH_DTYPE_F32 ||
      !kiln_graph_shape_equal(&graph->values[node->outputs[0]].shape, &graph->values[x].shape)) {
    return kiln_ok_status();
  }
  // The Mul comes after the Sigmoid, so after x's producer: rewritten in
  // place it stays before every reader of its output.
  node->op_type = "kiln.Silu";
  node->input_count = 0;
  node->attr_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, mul, x));
  graph->nodes[sigmoid].removed = true;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_fuse_silu(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || strcmp(node->op_type, "Sigmoid") != 0) continue;
    KILN_RETURN_IF_ERROR(kiln_fuse_silu_at(graph, (int32_t)n));
  }
  return kiln_ok_status();
}
