// View nodes: nodes whose output holds exactly its input's bytes in the
// same order, so the memory plan can give both one place and the lowering
// can drop the copy. Reshape, Flatten, Squeeze and Unsqueeze always are;
// a Transpose is when it moves only dims of size 1 (the encoders' [1, s, d]
// <-> [s, 1, d] around attention).
#include <string.h>

#include "kiln/compiler/graph.h"

bool kiln_graph_transpose_perm(const kiln_graph_node_t* node, int32_t rank, int64_t* perm) {
  const int64_t* values = NULL;
  size_t count = 0;
  kiln_status_t status = kiln_graph_node_attr_ints(node, "perm", &values, &count);
  if (!kiln_status_is_ok(status)) {
    kiln_status_ignore(status);
    return false;
  }
  if (rank < 0 || rank > KILN_GRAPH_MAX_RANK) return false;
  if (count == 0) {
    for (int32_t d = 0; d < rank; ++d) perm[d] = rank - 1 - d;
    return true;
  }
  if ((int32_t)count != rank) return false;
  memcpy(perm, values, count * sizeof(*perm));
  return true;
}

bool kiln_graph_transpose_is_view(const kiln_graph_t* graph, const kiln_graph_node_t* node) {
  const kiln_graph_value_t* x = kiln_graph_node_input(graph, node, 0);
  if (!x || !x->has_shape || strcmp(node->op_type, "Transpose") != 0) return false;
  int64_t perm[KILN_GRAPH_MAX_RANK];
  const int32_t rank = x->shape.rank;
  if (!kiln_graph_transpose_perm(node, rank, perm)) return false;
  // The dims of size > 1 must keep their order.
  int64_t last = -1;
  for (int32_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || perm[d] >= rank) return false;
    if (x->shape.dims[perm[d]] == 1) continue;
    if (perm[d] < last) return false;
    last = perm[d];
  }
  return true;
}

int32_t kiln_graph_view_source(const kiln_graph_t* graph, const kiln_graph_node_t* node) {
  if (node->removed || node->input_count < 1 || node->output_count != 1 ||
      node->inputs[0] < 0 || node->outputs[0] < 0) {
    return -1;
  }
  const char* op = node->op_type;
  const bool reshape = strcmp(op, "Reshape") == 0 || strcmp(op, "Flatten") == 0 ||
                       strcmp(op, "Squeeze") == 0 || strcmp(op, "Unsqueeze") == 0;
  if (!reshape && !kiln_graph_transpose_is_view(graph, node)) return -1;
  const kiln_graph_value_t* x = &graph->values[node->inputs[0]];
  const kiln_graph_value_t* y = &graph->values[node->outputs[0]];
  // Floats only: integer and bool values may live on the host.
  const bool is_float = x->dtype == KILN_GRAPH_DTYPE_F32 || x->dtype == KILN_GRAPH_DTYPE_F16;
  size_t x_bytes = 0, y_bytes = 0;
  if (!is_float || x->dtype != y->dtype || !x->has_shape || !y->has_shape) return -1;
  kiln_status_t status = kiln_graph_value_byte_size(x, &x_bytes);
  if (kiln_status_is_ok(status)) status = kiln_graph_value_byte_size(y, &y_bytes);
  if (!kiln_status_is_ok(status)) {
    kiln_status_ignore(status);
    return -1;
  }
  return x_bytes == y_bytes ? node->inputs[0] : -1;
}
