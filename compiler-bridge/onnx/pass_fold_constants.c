// Constant folding: every node whose inputs are all constants is evaluated
// by the reference op and its outputs become constants; nodes whose outputs
// are all constants (some were computed during inference) are removed.
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "ref_node.h"

kiln_status_t kiln_graph_fold_constants(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    // Weight dequantization is decided by one pass (pass_fuse_qdq.c).
    if (strcmp(node->op_type, "DequantizeLinear") == 0) continue;
    bool outputs_constant = true;
    for (size_t o = 0; o < node->output_count; ++o) {
      int32_t id = node->outputs[o];
      if (id >= 0 && !graph->values[id].data) outputs_constant = false;
    }
    if (!outputs_constant) {
      if (!kiln_ref_node_is_constant(graph, node)) continue;
      KILN_RETURN_IF_ERROR_ANNOTATE(kiln_ref_node_evaluate(graph, (int32_t)n),
                                    "folding node '%s'", node->name);
      node = &graph->nodes[n];
    }
    node->removed = true;
    for (size_t o = 0; o < node->output_count; ++o) {
      if (node->outputs[o] >= 0) graph->values[node->outputs[o]].producer = -1;
    }
  }
  return kiln_ok_status();
}
