// Batch-norm folding: Conv -> BatchNormalization (constant statistics, the
// Conv's output read only by the BN) becomes one Conv with
//   W' = W * s,  B' = (B - mean) * s + beta,  s = scale / sqrt(var + eps)
// per output channel. New constants are made, so shared weights stay intact.
#include <math.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"

static bool kiln_is_constant(const kiln_graph_t* graph, int32_t id) {
  return id >= 0 && graph->values[id].data != NULL;
}

static kiln_status_t kiln_fold_one(kiln_graph_t* graph, int32_t conv_id,
                                   int32_t bn_id) {
  kiln_graph_node_t* conv = &graph->nodes[conv_id];
  const kiln_graph_node_t* bn = &graph->nodes[bn_id];
  float epsilon = 1e-5f;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(bn, "epsilon", 1e-5f, &epsilon));
  const kiln_graph_value_t* w = &graph->values[conv->inputs[1]];
  int64_t m = w->shape.dims[0];
  size_t per_channel = 1;
  for (int32_t d = 1; d < w->shape.rank; ++d) per_channel *= (size_t)w->shape.dims[d];
  const float* scale = (const float*)graph->values[bn->inputs[1]].data;
  const float* beta = (const float*)graph->values[bn->inputs[2]].data;
  const float* mean = (const float*)graph->values[bn->inputs[3]].data;
  const float* var = (const float*)graph->values[bn->inputs[4]].data;
  const float* bias = conv->input_count > 2 && conv->inputs[2] >= 0
                          ? (const float*)graph->values[conv->inputs[2]].data
                          : NULL;
  size_t w_count = (size_t)m * per_channel;
  float* new_w = NULL;
  float* new_b = NULL;
  kiln_status_t status = kiln_allocator_malloc(
      graph->allocator, (w_count ? w_count : 1) * sizeof(float), (void**)&new_w);
  if (kiln_status_is_ok(status)) {
    status = kiln_allocator_malloc(graph->allocator,
                                   (size_t)(m ? m : 1) * sizeof(float),
                                   (void**)&new_b);
  }
  if (kiln_status_is_ok(status)) {
    const float* old_w = (const float*)w->data;
    for (int64_t c = 0; c < m; ++c) {
      double s = scale[c] / sqrt((double)var[c] + epsilon);
      for (size_t i = 0; i < per_channel; ++i) {
        new_w[c * (int64_t)per_channel + (int64_t)i] =
            (float)(old_w[c * (int64_t)per_channel + (int64_t)i] * s);
      }
      new_b[c] = (float)(((bias ? bias[c] : 0.0) - mean[c]) * s + beta[c]);
    }
  }
  int32_t w_id = -1, b_id = -1;
  kiln_graph_shape_t w_shape = w->shape;
  kiln_graph_shape_t b_shape = {1, {m}};
  if (kiln_status_is_ok(status)) {
    status = kiln_graph_add_constant(graph, NULL, KILN_GRAPH_DTYPE_F32,
                                     &w_shape, new_w, &w_id);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_graph_add_constant(graph, NULL, KILN_GRAPH_DTYPE_F32,
                                     &b_shape, new_b, &b_id);
  }
  kiln_allocator_free(graph->allocator, new_w);
  kiln_allocator_free(graph->allocator, new_b);
  KILN_RETURN_IF_ERROR(status);
  conv = &graph->nodes[conv_id];
  bn = &graph->nodes[bn_id];
  conv->inputs[1] = w_id;
  if (conv->input_count > 2) {
    conv->inputs[2] = b_id;
  } else {
    KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, conv_id, b_id));
    conv = &graph->nodes[conv_id];
  }
  int32_t old_out = conv->outputs[0];
  int32_t new_out = bn->outputs[0];
  conv->outputs[0] = new_out;
  graph->values[new_out].producer = conv_id;
  graph->values[old_out].producer = -1;
  graph->nodes[bn_id].removed = true;
  return kiln_ok_status();
}

// The single live node reading value `id` (and only once), or -1.
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

kiln_status_t kiln_graph_fold_batch_norm(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* conv = &graph->nodes[n];
    if (conv->removed || strcmp(conv->op_type, "Conv") != 0 ||
        kiln_graph_node_find_attr(conv, "kiln.activation")) {
      continue;
    }
    if (!kiln_is_constant(graph, conv->inputs[1]) ||
        (conv->input_count > 2 && conv->inputs[2] >= 0 &&
         !kiln_is_constant(graph, conv->inputs[2])) ||
        conv->input_count > 3 || conv->outputs[0] < 0) {
      continue;
    }
    int32_t reader = kiln_sole_reader(graph, conv->outputs[0]);
    if (reader < 0) continue;
    const kiln_graph_node_t* bn = &graph->nodes[reader];
    if (strcmp(bn->op_type, "BatchNormalization") != 0 ||
        bn->inputs[0] != conv->outputs[0] || bn->output_count != 1) {
      continue;
    }
    // Training mode normalizes by the batch's statistics, not the inputs'.
    int64_t training = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(bn, "training_mode", 0, &training));
    bool constant = !training;
    for (size_t i = 1; i < 5; ++i) constant &= kiln_is_constant(graph, bn->inputs[i]);
    if (!constant) continue;
    KILN_RETURN_IF_ERROR(kiln_fold_one(graph, (int32_t)n, reader));
  }
  return kiln_ok_status();
}
