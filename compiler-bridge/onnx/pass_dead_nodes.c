// Dead-node removal: a node is live when a graph output depends on it.
#include <string.h>

#include "kiln/compiler/graph_passes.h"

void kiln_graph_remove_dead_nodes(kiln_graph_t* graph) {
  // Walk backwards: a node is live when any output is read by a live node or
  // is a graph output. Node order is topological, so one sweep suffices.
  for (size_t n = graph->node_count; n-- > 0;) {
    kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    bool live = false;
    for (size_t o = 0; o < node->output_count && !live; ++o) {
      int32_t id = node->outputs[o];
      if (id >= 0 && kiln_graph_value_use_count(graph, id) > 0) live = true;
    }
    if (!live) node->removed = true;
  }
}
