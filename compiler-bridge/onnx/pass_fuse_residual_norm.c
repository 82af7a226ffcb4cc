// Residual Add -> LayerNormalization: when the sum feeds only the norm, the
// norm reads both addends (input 3 and kiln.residual=3, see ops_norm.c) and
// the Add disappears: post-norm transformers' Add + LayerNorm become one
// row kernel (norm_residual). Runs after epilogue fusion, so an Add a GEMM
// already absorbed as its residual stays there.
#include <string.h>

#include "kiln/compiler/graph_passes.h"

kiln_status_t kiln_graph_fuse_residual_norm(kiln_graph_t* graph) {
  if (graph->opset < 17) return kiln_ok_status();
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* norm = &graph->nodes[n];
    if (norm->removed || strcmp(norm->op_type, "LayerNormalization") != 0 ||
        norm->input_count < 2 || norm->input_count > 3 || norm->inputs[0] < 0 ||
        kiln_graph_node_find_attr(norm, "kiln.residual")) {
      continue;
    }
    int32_t x = norm->inputs[0];
    int32_t add = graph->values[x].producer;
    if (add < 0 || graph->nodes[add].removed || strcmp(graph->nodes[add].op_type, "Add") != 0 ||
        graph->nodes[add].input_count != 2 || kiln_graph_value_use_count(graph, x) != 1) {
      continue;
    }
    int32_t a = graph->nodes[add].inputs[0], b = graph->nodes[add].inputs[1];
    const kiln_graph_value_t* av = &graph->values[a];
    const kiln_graph_value_t* bv = &graph->values[b];
    if (av->dtype != KILN_GRAPH_DTYPE_F32 || bv->dtype != KILN_GRAPH_DTYPE_F32 ||
        !kiln_graph_shape_equal(&av->shape, &graph->values[x].shape) ||
        !kiln_graph_shape_equal(&bv->shape, &graph->values[x].shape)) {
      continue;
    }
    int32_t node_id = (int32_t)n;
    if (graph->nodes[node_id].input_count == 2) {
      KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, node_id, -1));
    }
    KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, node_id, b));
    graph->nodes[node_id].inputs[0] = a;
    kiln_graph_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.name = "kiln.residual";
    attr.type = KILN_GRAPH_ATTR_INT;
    attr.i = 3;
    KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, node_id, &attr));
    graph->nodes[add].removed = true;
    graph->values[x].producer = -1;
  }
  return kiln_ok_status();
}
