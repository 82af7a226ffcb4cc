// QOperator graphs (onnxruntime's QuantFormat.QOperator: QuantizeLinear ->
// QLinearConv / QLinearMatMul ... -> DequantizeLinear) for the fp32 GPU
// kernels, exactly. Every int8 / uint8 value is carried as an fp32 tensor of
// its integer values:
//   QuantizeLinear   -> kiln.Quantize (integer results as fp32)
//   DequantizeLinear -> kiln.Dequantize
//   QLinearConv      -> Sub(x, x_zp) -> Conv(., w - w_zp, float(B)) -> kiln.Requantize
//   QLinearMatMul    -> Sub(a, a_zp) -> MatMul(., b - b_zp)         -> kiln.Requantize
// The Conv / MatMul sums stay exact in fp32 because every partial sum is an
// integer below 2^24: per output channel (column), 255 * sum|w - w_zp| +
// |B| < 2^24 is checked here (|x - x_zp| <= 255), in any summation order.
// kiln.Requantize rounds sum * (x_scale * w_scale / y_scale) + y_zero_point
// as the numpy reference does (zero point added before rounding). The graph is rewritten only when every run-time int8 /
// uint8 value is produced and read by these four ops with constant
// parameters and weights (and is no graph input or output); otherwise it
// is left as it is (the reference executor runs it; the GPU refuses it).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "ops.h"
#include "pass_qoperator.h"
#include "quant.h"

#define KILN_QOP_EXACT_LIMIT 16777216.0  // 2^24

bool kiln_qop_is_integer(const kiln_graph_t* g, int32_t id) {
  if (id < 0) return false;
  const kiln_graph_value_t* v = &g->values[id];
  return (!v->data && (v->dtype == KILN_GRAPH_DTYPE_I8 || v->dtype == KILN_GRAPH_DTYPE_U8)) ||
         kiln_qint_is_sum(g, id);
}

bool kiln_qop_const(const kiln_graph_t* g, const kiln_graph_node_t* n, size_t i) {
  return i < n->input_count && n->inputs[i] >= 0 && g->values[n->inputs[i]].data;
}

size_t kiln_qop_count(const kiln_graph_value_t* v) {
  size_t count = 0;
  return kiln_status_is_ok(kiln_graph_shape_element_count(&v->shape, &count)) ? count : 0;
}

int32_t kiln_qop_int(const kiln_graph_t* g, const kiln_graph_node_t* n, size_t index,
                     size_t i) {
  if (index >= n->input_count || n->inputs[index] < 0) return 0;
  const kiln_graph_value_t* v = &g->values[n->inputs[index]];
  return kiln_quant_load(v->data, v->dtype, kiln_qop_count(v) == 1 ? 0 : i);
}

static float kiln_qop_float(const kiln_graph_t* g, const kiln_graph_node_t* n, size_t index,
                            size_t i) {
  const kiln_graph_value_t* v = &g->values[n->inputs[index]];
  return ((const float*)v->data)[kiln_qop_count(v) == 1 ? 0 : i];
}

// The weight operand's layout: `outputs` channels (conv: dim 0, per output
// channel `inner` values; matmul: columns, b is [K, N], stride N).
static bool kiln_qop_exact(const kiln_graph_t* g, const kiln_graph_node_t* n, bool conv) {
  const kiln_graph_value_t* w = &g->values[n->inputs[3]];
  size_t count = kiln_qop_count(w);
  if (w->shape.rank < 2 || count == 0) return false;
  size_t outputs = conv ? (size_t)w->shape.dims[0] : (size_t)w->shape.dims[w->shape.rank - 1];
  if (!conv && w->shape.rank != 2) return false;  // batched weights: not rewritten
  for (size_t c = 0; c < outputs; ++c) {
    double sum = 0.0;
    size_t inner = count / outputs;
    for (size_t k = 0; k < inner; ++k) {
      size_t i = conv ? c * inner + k : k * outputs + c;
      sum += abs(kiln_quant_load(w->data, w->dtype, i) - kiln_qop_int(g, n, 5, c));
    }
    double bias = conv && kiln_qop_const(g, n, 8) ? fabs((double)kiln_qop_int(g, n, 8, c)) : 0.0;
    if (255.0 * sum + bias >= KILN_QOP_EXACT_LIMIT) return false;
  }
  return true;
}

// Whether node `n` may be rewritten (and reads or writes int8 tensors).
static bool kiln_qop_eligible(const kiln_graph_t* g, const kiln_graph_node_t* n) {
  const char* op = n->op_type;
  if (strcmp(op, "QuantizeLinear") == 0 || strcmp(op, "DequantizeLinear") == 0) {
    return kiln_qop_const(g, n, 1) && !kiln_qint_is_sum(g, n->inputs[0]) &&
           (n->input_count < 3 || n->inputs[2] < 0 || kiln_qop_const(g, n, 2));
  }
  bool conv = strcmp(op, "QLinearConv") == 0;
  if (!conv && strcmp(op, "QLinearMatMul") != 0) return kiln_qint_eligible(g, n);
  static const size_t kParams[] = {1, 2, 3, 4, 5, 6, 7};
  for (size_t i = 0; i < sizeof(kParams) / sizeof(kParams[0]); ++i) {
    if (!kiln_qop_const(g, n, kParams[i])) return false;
  }
  if (conv && n->input_count > 8 && n->inputs[8] >= 0 && !kiln_qop_const(g, n, 8)) return false;
  if (kiln_qop_count(&g->values[n->inputs[2]]) != 1) return false;  // a_zp per tensor
  return kiln_qop_exact(g, n, conv);
}

static kiln_status_t kiln_qop_set_int(kiln_graph_t* g, int32_t node, const char* name,
                                      int64_t value) {
  kiln_graph_attr_t attr = {.name = name, .type = KILN_GRAPH_ATTR_INT, .i = value};
  return kiln_graph_node_set_attr(g, node, &attr);
}

kiln_status_t kiln_qop_constant(kiln_graph_t* g, const float* values, size_t count,
                                const kiln_graph_shape_t* shape, int32_t* out) {
  kiln_graph_shape_t s = {count == 1 ? 0 : 1, {(int64_t)count}};
  return kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_F32, shape ? shape : &s, values,
                                 out);
}

// Rewrites node `id` in place into kiln.<op>(x, scale, zero point as float).
static kiln_status_t kiln_qop_linear(kiln_graph_t* g, int32_t id, const char* op,
                                     kiln_graph_dtype_t qtype, int32_t x, int32_t scale,
                                     int32_t zp_float, int64_t axis) {
  int32_t qmin = 0, qmax = 0;
  kiln_quant_range(qtype, &qmin, &qmax);
  kiln_graph_node_t* node = &g->nodes[id];
  node->op_type = op;
  node->input_count = 0;
  node->attr_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(g, id, x));
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(g, id, scale));
  if (zp_float >= 0) KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(g, id, zp_float));
  KILN_RETURN_IF_ERROR(kiln_qop_set_int(g, id, "axis", axis));
  KILN_RETURN_IF_ERROR(kiln_qop_set_int(g, id, "kiln.qmin", qmin));
  return kiln_qop_set_int(g, id, "kiln.qmax", qmax);
}

// Zero point (input `index` of node `id`) as a float constant, or -1.
static kiln_status_t kiln_qop_zero_point(kiln_graph_t* g, int32_t id, size_t index,
                                         int32_t* out) {
  *out = -1;
  const kiln_graph_node_t* n = &g->nodes[id];
  if (index >= n->input_count || n->inputs[index] < 0) return kiln_ok_status();
  const kiln_graph_value_t* v = &g->values[n->inputs[index]];
  size_t count = kiln_qop_count(v);
  kiln_graph_shape_t shape = v->shape;
  float* values = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(g->allocator, (count ? count : 1) * sizeof(float),
                                             (void**)&values));
  for (size_t i = 0; i < count; ++i) values[i] = (float)kiln_qop_int(g, n, index, i);
  kiln_status_t status = kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_F32, &shape, values,
                                                 out);
  kiln_allocator_free(g->allocator, values);
  return status;
}

static kiln_status_t kiln_qop_rewrite_q_dq(kiln_graph_t* g, int32_t id) {
  bool quantize = strcmp(g->nodes[id].op_type, "QuantizeLinear") == 0;
  int64_t axis = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(&g->nodes[id], "axis", 1, &axis));
  int32_t zp = -1;
  KILN_RETURN_IF_ERROR(kiln_qop_zero_point(g, id, 2, &zp));
  const kiln_graph_node_t* n = &g->nodes[id];
  int32_t q = quantize ? n->outputs[0] : n->inputs[0];
  return kiln_qop_linear(g, id, quantize ? "kiln.Quantize" : "kiln.Dequantize",
                         g->values[q].dtype, n->inputs[0], n->inputs[1], zp, axis);
}

// QLinearConv / QLinearMatMul -> Sub, Conv / MatMul, kiln.Requantize.
static kiln_status_t kiln_qop_rewrite_linear(kiln_graph_t* g, int32_t id) {
  bool conv = strcmp(g->nodes[id].op_type, "QLinearConv") == 0;
  const kiln_graph_node_t* n = &g->nodes[id];
  const kiln_graph_value_t* w = &g->values[n->inputs[3]];
  size_t count = kiln_qop_count(w);
  size_t outputs = conv ? (size_t)w->shape.dims[0] : (size_t)w->shape.dims[w->shape.rank - 1];
  kiln_graph_shape_t w_shape = w->shape;
  kiln_graph_dtype_t qtype = g->values[n->outputs[0]].dtype;
  float* wf = NULL;
  float* per_out = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(g->allocator, count * sizeof(float), (void**)&wf));
  kiln_status_t status =
      kiln_allocator_malloc(g->allocator, outputs * sizeof(float), (void**)&per_out);
  size_t first_new = g->node_count;
  int32_t x = n->inputs[0], t = x, acc = -1, wid = -1, bid = -1, mult = -1, zy = -1;
  char name[512];
  if (kiln_status_is_ok(status)) {
    size_t inner = count / outputs;
    for (size_t i = 0; i < count; ++i) {
      size_t c = conv ? i / inner : i % outputs;
      wf[i] = (float)(kiln_quant_load(w->data, w->dtype, i) - kiln_qop_int(g, n, 5, c));
    }
    status = kiln_qop_constant(g, wf, count, &w_shape, &wid);
  }
  n = &g->nodes[id];
  if (kiln_status_is_ok(status) && conv && n->input_count > 8 && n->inputs[8] >= 0) {
    for (size_t c = 0; c < outputs; ++c) per_out[c] = (float)kiln_qop_int(g, n, 8, c);
    kiln_graph_shape_t b_shape = {1, {(int64_t)outputs}};
    status = kiln_qop_constant(g, per_out, outputs, &b_shape, &bid);
  }
  n = &g->nodes[id];
  if (kiln_status_is_ok(status)) {
    size_t scales = kiln_qop_count(&g->values[n->inputs[4]]);
    for (size_t c = 0; c < scales; ++c) {
      float ab = kiln_qop_float(g, n, 1, 0) * kiln_qop_float(g, n, 4, c);
      per_out[c] = ab / kiln_qop_float(g, n, 6, 0);
    }
    status = kiln_qop_constant(g, per_out, scales, NULL, &mult);
    // y_zero_point, repeated to the multiplier's shape (kiln ops pair them).
    n = &g->nodes[id];
    for (size_t c = 0; c < scales; ++c) per_out[c] = (float)kiln_qop_int(g, n, 7, 0);
    if (kiln_status_is_ok(status)) status = kiln_qop_constant(g, per_out, scales, NULL, &zy);
  }
  n = &g->nodes[id];
  int32_t zx = kiln_qop_int(g, n, 2, 0);
  if (kiln_status_is_ok(status) && zx != 0) {
    float zf = (float)zx;
    int32_t zid = -1, sub = -1;
    status = kiln_qop_constant(g, &zf, 1, NULL, &zid);
    if (kiln_status_is_ok(status)) status = kiln_graph_add_value(g, NULL, KILN_GRAPH_DTYPE_F32, &t);
    snprintf(name, sizeof(name), "%s/sub_zero_point", g->nodes[id].name);
    int32_t sub_in[2] = {x, zid};
    if (kiln_status_is_ok(status)) status = kiln_graph_add_node(g, "Sub", name, sub_in, 2, &t, 1, &sub);
  }
  if (kiln_status_is_ok(status)) status = kiln_graph_add_value(g, NULL, KILN_GRAPH_DTYPE_F32, &acc);
  if (kiln_status_is_ok(status)) {
    int32_t lin = -1;
    int32_t in[3] = {t, wid, bid};
    snprintf(name, sizeof(name), "%s/%s", g->nodes[id].name, conv ? "conv" : "matmul");
    status = kiln_graph_add_node(g, conv ? "Conv" : "MatMul", name, in, bid >= 0 ? 3 : 2, &acc,
                                 1, &lin);
    static const char* const kConvAttrs[] = {"auto_pad", "dilations", "group",
                                             "kernel_shape", "pads", "strides"};
    for (size_t a = 0; conv && kiln_status_is_ok(status) && a < 6; ++a) {
      const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(&g->nodes[id], kConvAttrs[a]);
      if (attr) {
        kiln_graph_attr_t copy = *attr;
        status = kiln_graph_node_set_attr(g, lin, &copy);
      }
    }
  }
  if (kiln_status_is_ok(status)) {
    int32_t rank = g->values[g->nodes[id].outputs[0]].shape.rank;
    status = kiln_qop_linear(g, id, "kiln.Requantize", qtype, acc, mult, zy,
                             conv ? 1 : rank - 1);
  }
  if (kiln_status_is_ok(status) && id > 0) {
    status = kiln_graph_place_nodes_after(g, (size_t)id - 1, first_new);
  }
  kiln_allocator_free(g->allocator, wf);
  kiln_allocator_free(g->allocator, per_out);
  return status;
}

kiln_status_t kiln_graph_lower_qoperator(kiln_graph_t* graph) {
  bool any = false;
  for (size_t i = 0; i < graph->input_count + graph->output_count; ++i) {
    int32_t id = i < graph->input_count ? graph->inputs[i] : graph->outputs[i - graph->input_count];
    if (kiln_qop_is_integer(graph, id)) return kiln_ok_status();
  }
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    bool quant = false;
    for (size_t i = 0; i < node->input_count; ++i) quant |= kiln_qop_is_integer(graph, node->inputs[i]);
    for (size_t o = 0; o < node->output_count; ++o) quant |= kiln_qop_is_integer(graph, node->outputs[o]);
    if (!quant) continue;
    if (!kiln_qop_eligible(graph, node)) return kiln_ok_status();
    any = true;
  }
  if (!any) return kiln_ok_status();
  // Rewrite back to front: an expansion moves only the nodes after it.
  for (size_t n = graph->node_count; n-- > 0;) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    const char* op = node->op_type;
    bool linear = strcmp(op, "QLinearConv") == 0 || strcmp(op, "QLinearMatMul") == 0;
    bool qdq = strcmp(op, "QuantizeLinear") == 0 ||
               (strcmp(op, "DequantizeLinear") == 0 && kiln_qop_is_integer(graph, node->inputs[0]));
    if (qdq && strcmp(op, "QuantizeLinear") == 0 && !kiln_qop_is_integer(graph, node->outputs[0])) {
      qdq = false;
    }
    if (linear) KILN_RETURN_IF_ERROR(kiln_qop_rewrite_linear(graph, (int32_t)n));
    if (qdq) KILN_RETURN_IF_ERROR(kiln_qop_rewrite_q_dq(graph, (int32_t)n));
    bool rewritten = false;
    if (!linear && !qdq) KILN_RETURN_IF_ERROR(kiln_qint_rewrite(graph, (int32_t)n, &rewritten));
  }
  // The new values' dtypes and shapes, before the fusions read them.
  return kiln_graph_infer_shapes(graph);
}
