// Epilogue fusion: a Conv/Gemm/MatMul whose output feeds exactly one node
// absorbs that node when it is a constant (bias) Add, a residual Add, or an
// activation, and a residual Add behind view nodes; repeated until nothing
// more fuses. The recorded attributes are
// described in graph_passes.h.
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "ops.h"

static bool kiln_is_producer_op(const kiln_graph_node_t* node) {
  return strcmp(node->op_type, "Conv") == 0 ||
         strcmp(node->op_type, "Gemm") == 0 ||
         strcmp(node->op_type, "MatMul") == 0;
}

// Appends an epilogue addend to node `p`. Conv's B and Gemm's C are input 2:
// when absent (dynamo exports drop a zero bias) the slot is kept absent
// first, or the addend would be read as the bias.
static kiln_status_t kiln_append_addend(kiln_graph_t* graph, int32_t p,
                                        int32_t value) {
  if (graph->nodes[p].input_count == 2 &&
      strcmp(graph->nodes[p].op_type, "MatMul") != 0) {
    KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, p, -1));
  }
  return kiln_graph_node_append_input(graph, p, value);
}

static int32_t kiln_sole_reader(const kiln_graph_t* graph, int32_t id) {
  if (graph->values[id].is_output) return -1;
  int32_t reader = -1;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] != id) continue;
      if (reader >= 0) return -1;
      reader = (int32_t)n;
    }
  }
  return reader;
}

static kiln_status_t kiln_set_int(kiln_graph_t* graph, int32_t node_id,
                                  const char* name, int64_t value) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = name;
  attr.type = KILN_GRAPH_ATTR_INT;
  attr.i = value;
  return kiln_graph_node_set_attr(graph, node_id, &attr);
}

static kiln_status_t kiln_set_float(kiln_graph_t* graph, int32_t node_id,
                                    const char* name, float value) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = name;
  attr.type = KILN_GRAPH_ATTR_FLOAT;
  attr.f = value;
  return kiln_graph_node_set_attr(graph, node_id, &attr);
}

// Activation parameters as kiln_ref_activation takes them; false when the
// node cannot be fused (e.g. Clip bounds that are not constants).
static bool kiln_activation_params(const kiln_graph_t* graph,
                                   const kiln_graph_node_t* node, float* alpha,
                                   float* beta) {
  kiln_activation_t code = kiln_activation_from_name(node->op_type);
  *alpha = 0.0f;
  *beta = 0.0f;
  if (!kiln_activation_fusable(code)) return false;
  if (code == KILN_ACT_CLIP) {
    *alpha = -3.402823466e+38f;
    *beta = 3.402823466e+38f;
    for (size_t i = 1; i < node->input_count && i < 3; ++i) {
      if (node->inputs[i] < 0) continue;
      const kiln_graph_value_t* v = &graph->values[node->inputs[i]];
      if (!v->data) return false;
      *(i == 1 ? alpha : beta) = *(const float*)v->data;
    }
    return true;
  }
  kiln_status_t status = kiln_activation_attrs(node, code, alpha, beta);
  bool ok = kiln_status_is_ok(status);
  kiln_status_ignore(status);
  return ok;
}

// A bias the matrix kernels broadcast: every dim before the last two is 1
// once right-aligned against the output.
static bool kiln_is_matrix_bias(const kiln_graph_shape_t* bias,
                                const kiln_graph_shape_t* out) {
  if (bias->rank > out->rank) return false;
  for (int32_t d = 0; d < bias->rank - 2; ++d) {
    if (bias->dims[d] != 1) return false;
  }
  return true;
}

// A residual Add reached from node `p`'s output through view nodes
// (view_nodes.c: Reshape, Flatten, Squeeze, Unsqueeze, size-1 Transposes),
// each the sole reader of the value before it: the Add joins p's epilogue
// with kiln.residual_flat (the residual read in p's output order), the
// views then carry the sum, and the Add's readers read the last view.
// Sets *out_fused when the graph changed.
static kiln_status_t kiln_fuse_residual_through_views(kiln_graph_t* graph, int32_t p,
                                                      int32_t c, bool* out_fused) {
  int32_t last = -1;  // the last view's output
  int32_t value = graph->nodes[p].outputs[0];
  // Each view must read the value before it as its data (input 0).
  while (c >= 0 && kiln_graph_view_source(graph, &graph->nodes[c]) == value) {
    last = value = graph->nodes[c].outputs[0];
    c = kiln_sole_reader(graph, last);
  }
  if (last < 0 || c < 0) return kiln_ok_status();
  const kiln_graph_node_t* add = &graph->nodes[c];
  if (strcmp(add->op_type, "Add") != 0 || add->input_count != 2 || add->output_count != 1 ||
      add->outputs[0] < 0) {
    return kiln_ok_status();
  }
  const int32_t z = add->outputs[0];
  const int32_t other = add->inputs[0] == last ? add->inputs[1] : add->inputs[0];
  if (other < 0 || other == last || graph->values[z].is_output) return kiln_ok_status();
  const kiln_graph_value_t* ov = &graph->values[other];
  const kiln_graph_value_t* lv = &graph->values[last];
  // A full-shape residual that exists when p runs (no broadcast, no constant).
  if (ov->data || ov->dtype != KILN_GRAPH_DTYPE_F32 || lv->dtype != KILN_GRAPH_DTYPE_F32 ||
      !kiln_graph_shape_equal(&ov->shape, &lv->shape) ||
      !kiln_graph_shape_equal(&graph->values[z].shape, &lv->shape) ||
      (ov->producer >= p && !ov->is_input)) {
    return kiln_ok_status();
  }
  KILN_RETURN_IF_ERROR(kiln_append_addend(graph, p, other));
  KILN_RETURN_IF_ERROR(kiln_set_int(graph, p, "kiln.residual",
                                    (int64_t)graph->nodes[p].input_count - 1));
  KILN_RETURN_IF_ERROR(kiln_set_int(graph, p, "kiln.residual_first", 1));
  KILN_RETURN_IF_ERROR(kiln_set_int(graph, p, "kiln.residual_flat", 1));
  graph->nodes[c].removed = true;
  graph->values[z].producer = -1;
  kiln_graph_replace_uses(graph, z, last);
  *out_fused = true;
  return kiln_ok_status();
}

// Tries one fusion into node `p`; sets *out_fused when the graph changed.
static kiln_status_t kiln_fuse_step(kiln_graph_t* graph, int32_t p,
                                    bool* out_fused) {
  *out_fused = false;
  kiln_graph_node_t* node = &graph->nodes[p];
  int32_t y = node->outputs[0];
  if (y < 0) return kiln_ok_status();
  int32_t c = kiln_sole_reader(graph, y);
  if (c < 0) return kiln_ok_status();
  const kiln_graph_node_t* consumer = &graph->nodes[c];
  if (consumer->output_count != 1 || consumer->outputs[0] < 0) {
    return kiln_ok_status();
  }
  if (kiln_graph_view_source(graph, consumer) == y) {
    if (kiln_graph_node_find_attr(node, "kiln.activation") ||
        kiln_graph_node_find_attr(node, "kiln.residual") ||
        graph->values[y].dtype != KILN_GRAPH_DTYPE_F32) {
      return kiln_ok_status();
    }
    return kiln_fuse_residual_through_views(graph, p, c, out_fused);
  }
  int32_t z = consumer->outputs[0];
  if (!kiln_graph_shape_equal(&graph->values[z].shape, &graph->values[y].shape) ||
      graph->values[z].dtype != KILN_GRAPH_DTYPE_F32) {
    return kiln_ok_status();
  }
  bool has_activation = kiln_graph_node_find_attr(node, "kiln.activation");
  bool has_residual = kiln_graph_node_find_attr(node, "kiln.residual");
  bool has_bias = kiln_graph_node_find_attr(node, "kiln.bias");
  if (strcmp(consumer->op_type, "Add") == 0) {
    int32_t other = consumer->inputs[0] == y ? consumer->inputs[1]
                                             : consumer->inputs[0];
    if (other == y) return kiln_ok_status();
    const kiln_graph_value_t* ov = &graph->values[other];
    // Only what the GPU kernels compute: a MatMul bias that broadcasts over
    // rows/columns of every matrix, or a full-shape residual added before
    // any activation. Anything else stays a separate Add.
    if (has_activation || has_residual) return kiln_ok_status();
    if (ov->data && !has_bias && strcmp(node->op_type, "MatMul") == 0 &&
        kiln_is_matrix_bias(&ov->shape, &graph->values[y].shape)) {
      KILN_RETURN_IF_ERROR(kiln_append_addend(graph, p, other));
      KILN_RETURN_IF_ERROR(kiln_set_int(graph, p, "kiln.bias",
                                        (int64_t)graph->nodes[p].input_count - 1));
    } else {
      // The residual must already exist when the fused node runs.
      if (!kiln_graph_shape_equal(&ov->shape, &graph->values[y].shape) ||
          (!ov->data && ov->producer >= p && !ov->is_input)) {
        return kiln_ok_status();
      }
      KILN_RETURN_IF_ERROR(kiln_append_addend(graph, p, other));
      KILN_RETURN_IF_ERROR(kiln_set_int(graph, p, "kiln.residual",
                                        (int64_t)graph->nodes[p].input_count - 1));
      KILN_RETURN_IF_ERROR(kiln_set_int(graph, p, "kiln.residual_first", 1));
    }
  } else {
    float alpha, beta;
    if (has_activation || !kiln_activation_params(graph, consumer, &alpha, &beta)) {
      return kiln_ok_status();
    }
    // A residual added after an activation cannot take another activation.
    const kiln_graph_attr_t* first = kiln_graph_node_find_attr(node, "kiln.residual_first");
    if (has_residual && first && first->i == 0) return kiln_ok_status();
    kiln_graph_attr_t attr;
    memset(&attr, 0, sizeof(attr));
    attr.name = "kiln.activation";
    attr.type = KILN_GRAPH_ATTR_STRING;
    attr.s = consumer->op_type;
    KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, p, &attr));
    KILN_RETURN_IF_ERROR(kiln_set_float(graph, p, "kiln.activation_alpha", alpha));
    KILN_RETURN_IF_ERROR(kiln_set_float(graph, p, "kiln.activation_beta", beta));
  }
  node = &graph->nodes[p];
  node->outputs[0] = z;
  graph->values[z].producer = p;
  graph->values[y].producer = -1;
  graph->nodes[c].removed = true;
  *out_fused = true;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_fuse_epilogues(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    if (graph->nodes[n].removed || !kiln_is_producer_op(&graph->nodes[n])) {
      continue;
    }
    bool fused = true;
    while (fused) {
      KILN_RETURN_IF_ERROR(kiln_fuse_step(graph, (int32_t)n, &fused));
    }
  }
  return kiln_ok_status();
}
