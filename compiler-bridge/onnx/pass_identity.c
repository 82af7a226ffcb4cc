// Removes Identity and inference-mode Dropout: readers of the output read
// the input instead. When the output is a graph output, the producer of the
// input is renamed to produce it directly (if nothing else reads it).
#include <string.h>

#include "kiln/compiler/graph_passes.h"

static bool kiln_is_passthrough(const kiln_graph_node_t* node) {
  if (strcmp(node->op_type, "Identity") == 0) return true;
  if (strcmp(node->op_type, "Dropout") != 0) return false;
  // Only when the mask output is unused (checked by inference: mode is off).
  return node->output_count < 2 || node->outputs[1] < 0;
}

kiln_status_t kiln_graph_remove_identities(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || !kiln_is_passthrough(node) || node->outputs[0] < 0) {
      continue;
    }
    int32_t in = node->inputs[0];
    int32_t out = node->outputs[0];
    kiln_graph_value_t* out_value = &graph->values[out];
    if (!out_value->is_output) {
      node->removed = true;
      kiln_graph_replace_uses(graph, out, in);
      continue;
    }
    // A graph output: let the input's producer write it directly.
    kiln_graph_value_t* in_value = &graph->values[in];
    if (in_value->producer < 0 || in_value->is_output || in_value->data ||
        kiln_graph_value_use_count(graph, in) != 1) {
      continue;  // keep the copy
    }
    kiln_graph_node_t* producer = &graph->nodes[in_value->producer];
    for (size_t o = 0; o < producer->output_count; ++o) {
      if (producer->outputs[o] == in) producer->outputs[o] = out;
    }
    out_value->producer = in_value->producer;
    in_value->producer = -1;
    node->removed = true;
  }
  return kiln_ok_status();
}
