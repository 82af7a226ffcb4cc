// Squeeze-and-excitation's squeeze as one dispatch: GlobalAveragePool(x)
// -> Conv 1x1 (act1) -> Conv 1x1 (act2) over 1x1 images, each value read
// only by the next node, lowers to one squeeze_excite dispatch at the
// second conv (the pool and the first conv record nothing). Three
// dispatches of a few microseconds' work each took 12-13 us of GPU time
// per block in EfficientNet-B0 f16 on the H200 (reduce 4.4, gemv 4 + 4).
// The dispatch reads x at the second conv's place, so x must still be
// live there: some node after it reads x (squeeze-excite's Mul), or x is
// a graph input or constant, whose memory no value reuses.
// Only blocks of at most KILN_SE_MAX_PRODUCT hidden units x channels: the
// two products run in the one workgroup that finishes last, a chain of
// loads one SM keeps few of in flight. On the H200 (f16) a fused block
// took 8-11 us up to 2400 (three dispatches: 12-13), 10-13 at 9600, 17
// at 18816 and 26 at 55296 (EfficientNet-B0's 1152-channel blocks);
// MobileNetV3-Large's 960 x 240 took 77. With this rule EfficientNet-B0
// ran 0.832 -> 0.806 ms, MobileNetV3-Large 0.993x, EfficientNet-V2-S
// 0.996x; with every block fused 1.03x, 1.36x and 1.23x.
#include <string.h>

#include "lower_util.h"

typedef struct kiln_se_chain_t {
  const kiln_graph_node_t* pool;
  const kiln_graph_node_t* fc1;
  const kiln_graph_node_t* fc2;
} kiln_se_chain_t;

static size_t kiln_se_index(const kiln_graph_t* graph, const kiln_graph_node_t* node) {
  return (size_t)(node - graph->nodes);
}

// The one node reading value `v` (not a graph output), else NULL.
static const kiln_graph_node_t* kiln_se_sole_reader(const kiln_graph_t* graph, int32_t v) {
  if (v < 0 || graph->values[v].is_output) return NULL;
  const kiln_graph_node_t* reader = NULL;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] != v) continue;
      if (reader) return NULL;
      reader = node;
    }
  }
  return reader;
}

static const kiln_graph_node_t* kiln_se_producer(const kiln_graph_t* graph, int32_t v) {
  if (v < 0) return NULL;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (!node->removed && node->output_count >= 1 && node->outputs[0] == v) return node;
  }
  return NULL;
}

// Value `v` is read by a node after node index `after`, or lives apart
// from the transient buffer (a graph input or a constant).
static bool kiln_se_live_after(const kiln_graph_t* graph, int32_t v, size_t after) {
  const kiln_graph_value_t* value = &graph->values[v];
  if (value->is_input || value->data) return true;
  for (size_t n = after + 1; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] == v) return true;
    }
  }
  return false;
}

// A 1x1 conv over 1x1 images of group 1: input [N, in, 1, 1], weight
// [out, in, 1, 1], output [N, out, 1, 1], with no fused residual.
static bool kiln_se_pointwise(const kiln_graph_t* graph, const kiln_graph_node_t* conv,
                              int64_t images, int64_t in, int64_t* out_channels) {
  if (strcmp(conv->op_type, "Conv") != 0 || conv->input_count < 2 || conv->output_count != 1 ||
      conv->outputs[0] < 0 || conv->inputs[1] < 0) {
    return false;
  }
  int64_t group = 1, residual = -1, bias = -1;
  kiln_status_t status = kiln_graph_node_attr_int(conv, "group", 1, &group);
  if (kiln_status_is_ok(status)) status = kiln_graph_node_attr_int(conv, "kiln.residual", -1, &residual);
  if (kiln_status_is_ok(status)) status = kiln_graph_node_attr_int(conv, "kiln.bias", -1, &bias);
  const bool attrs = kiln_status_is_ok(status);
  kiln_status_ignore(status);
  if (!attrs || group != 1 || residual >= 0 || bias >= 0 || conv->input_count > 3) return false;
  const kiln_graph_shape_t* w = &graph->values[conv->inputs[1]].shape;
  const kiln_graph_shape_t* y = &graph->values[conv->outputs[0]].shape;
  if (w->rank != 4 || y->rank != 4 || w->dims[1] != in || w->dims[2] != 1 || w->dims[3] != 1 ||
      y->dims[0] != images || y->dims[1] != w->dims[0] || y->dims[2] != 1 || y->dims[3] != 1) {
    return false;
  }
  *out_channels = w->dims[0];
  return true;
}

// The chain through `node` (any of its three nodes) where every condition
// of the fused dispatch holds.
static bool kiln_se_find(const kiln_lower_t* l, kiln_se_chain_t* chain) {
  const kiln_graph_t* graph = l->graph;
  const kiln_graph_node_t* pool = l->node;
  for (int hops = 0; hops < 2 && pool && strcmp(pool->op_type, "GlobalAveragePool") != 0; ++hops) {
    pool = pool->input_count ? kiln_se_producer(graph, pool->inputs[0]) : NULL;
  }
  if (!pool || strcmp(pool->op_type, "GlobalAveragePool") != 0 || pool->input_count != 1 ||
      pool->output_count != 1 || pool->inputs[0] < 0 || pool->outputs[0] < 0) {
    return false;
  }
  const kiln_graph_node_t* fc1 = kiln_se_sole_reader(graph, pool->outputs[0]);
  const kiln_graph_node_t* fc2 =
      fc1 && fc1->output_count >= 1 ? kiln_se_sole_reader(graph, fc1->outputs[0]) : NULL;
  if (!fc1 || !fc2 || fc1->inputs[0] != pool->outputs[0] || fc2->inputs[0] != fc1->outputs[0]) {
    return false;
  }
  const kiln_graph_value_t* x = &graph->values[pool->inputs[0]];
  if (x->shape.rank != 4 || x->data) return false;
  const int64_t images = x->shape.dims[0], channels = x->shape.dims[1];
  const uint64_t pixels = (uint64_t)x->shape.dims[2] * (uint64_t)x->shape.dims[3];
  int64_t hidden = 0, back = 0;
  if (images <= 0 || channels <= 0 || pixels == 0 ||
      !kiln_se_pointwise(graph, fc1, images, channels, &hidden) ||
      !kiln_se_pointwise(graph, fc2, images, hidden, &back) || back != channels) {
    return false;
  }
  // Every value of the chain in the program's float type (no cast between).
  const kiln_graph_dtype_t dtype = x->dtype;
  const int32_t values[] = {pool->outputs[0], fc1->inputs[1], fc1->outputs[0], fc2->inputs[1],
                            fc2->outputs[0], fc1->input_count > 2 ? fc1->inputs[2] : -1,
                            fc2->input_count > 2 ? fc2->inputs[2] : -1};
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); ++i) {
    if (values[i] >= 0 && !graph->values[values[i]].data && graph->values[values[i]].dtype != dtype) {
      return false;
    }
  }
  // The kernel's bounds: staged channels and hidden units, parts of
  // KILN_SE_PART_PIXELS, one workgroup per (image, group, part).
  const uint64_t parts = (pixels + KILN_SE_PART_PIXELS - 1) / KILN_SE_PART_PIXELS;
  const uint64_t groups = ((uint64_t)channels + KILN_SE_GROUP_CHANNELS - 1) / KILN_SE_GROUP_CHANNELS;
  if (channels > KILN_SE_MAX_CHANNELS || hidden > KILN_SE_MAX_HIDDEN ||
      parts > KILN_SE_MAX_PARTS || (uint64_t)images * groups * parts > KILN_KERNEL_MAX_GRID_X ||
      (uint64_t)images * channels * pixels > UINT32_MAX) {
    return false;
  }
  if ((uint64_t)hidden * (uint64_t)channels > KILN_SE_MAX_PRODUCT) return false;
  if (!kiln_se_live_after(graph, pool->inputs[0], kiln_se_index(graph, fc2))) return false;
  chain->pool = pool;
  chain->fc1 = fc1;
  chain->fc2 = fc2;
  return true;
}

// A conv's fused activation as a KILN_ACT_* code and its parameters.
static kiln_status_t kiln_se_activation(const kiln_lower_t* conv, uint32_t* code, float* alpha,
                                        float* beta) {
  const char* name = NULL;
  float a = 0.0f, b = 0.0f;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(conv->node, "kiln.activation", NULL, &name));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(conv->node, "kiln.activation_alpha", 0.0f, &a));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(conv->node, "kiln.activation_beta", 0.0f, &b));
  *code = KILN_ACT_NONE;
  *alpha = a;
  *beta = b;
  if (!name) return kiln_ok_status();
  return kiln_lower_activation(conv, name, a, b, code, alpha, beta);
}

kiln_status_t kiln_lower_squeeze_excite(const kiln_lower_t* l, bool* out_done) {
  *out_done = false;
  kiln_se_chain_t chain;
  // Only the chain's own three nodes (the walk from another could only
  // reach them, but none other may be left unrecorded).
  if (!kiln_se_find(l, &chain) ||
      (l->node != chain.pool && l->node != chain.fc1 && l->node != chain.fc2)) {
    return kiln_ok_status();
  }
  *out_done = true;
  if (l->node != chain.fc2) return kiln_ok_status();  // the pool and fc1 record nothing
  const kiln_lower_t pool = {l->program, l->graph, chain.pool};
  const kiln_lower_t fc1 = {l->program, l->graph, chain.fc1};
  const kiln_graph_shape_t* x = &kiln_lower_in(&pool, 0)->shape;
  const uint64_t images = (uint64_t)x->dims[0], channels = (uint64_t)x->dims[1];
  const uint64_t pixels = (uint64_t)x->dims[2] * (uint64_t)x->dims[3];
  const uint64_t hidden = (uint64_t)kiln_lower_in(&fc1, 1)->shape.dims[0];
  const uint64_t parts = (pixels + KILN_SE_PART_PIXELS - 1) / KILN_SE_PART_PIXELS;
  const uint64_t groups = (channels + KILN_SE_GROUP_CHANNELS - 1) / KILN_SE_GROUP_CHANNELS;
  kiln_kernel_squeeze_excite_params_t p = {
      .images = (uint32_t)images, .channels = (uint32_t)channels, .pixels = (uint32_t)pixels,
      .hidden = (uint32_t)hidden, .chunk = KILN_SE_PART_PIXELS, .parts = (uint32_t)parts};
  uint32_t act1 = 0, act2 = 0;
  KILN_RETURN_IF_ERROR(kiln_se_activation(&fc1, &act1, &p.alpha1, &p.beta1));
  KILN_RETURN_IF_ERROR(kiln_se_activation(l, &act2, &p.alpha2, &p.beta2));
  const bool bias1 = kiln_lower_in(&fc1, 2) != NULL, bias2 = kiln_lower_in(l, 2) != NULL;
  const kiln_kernel_spec_value_t ops[4] = {
      {KILN_SPEC_SE_ACTIVATION_1, act1}, {KILN_SPEC_SE_ACTIVATION_2, act2},
      {KILN_SPEC_SE_HAS_BIAS_1, bias1}, {KILN_SPEC_SE_HAS_BIAS_2, bias2}};
  kiln_emit_dispatch_desc_t desc = {
      .kernel = KILN_KERNEL_SQUEEZE_EXCITE, .push = &p, .ops = ops, .op_count = 4,
      .binding_count = 8, .written_mask = (1u << 5) | (1u << 6) | (1u << 7),
      .grid = KILN_EMIT_GRID_ROWS, .grid_count = images * groups * parts};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(&pool, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(&fc1, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[1];  // an absent bias: any read-only binding
  if (bias1) KILN_RETURN_IF_ERROR(kiln_lower_in_range(&fc1, 2, &desc.bindings[2]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[3]));
  desc.bindings[4] = desc.bindings[3];
  if (bias2) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[4]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[5]));
  KILN_RETURN_IF_ERROR(
      kiln_emit_scratch(l->program, images * parts * channels * sizeof(float), &desc.bindings[6]));
  KILN_RETURN_IF_ERROR(kiln_emit_counters(l->program, images * sizeof(uint32_t), &desc.bindings[7]));
  return kiln_emit_add_dispatch(l->program, &desc);
}
