// QDQ graphs (onnxruntime's quantize_static, QDQ format): every quantized
// activation is DequantizeLinear(QuantizeLinear(x)) with the same constant
// scale and zero point. Such a pair becomes one fp32 -> fp32
// kiln.QuantizeDequantize node, computed exactly as the pair defines it
// (round half to even, saturation, then (q - zp) * scale), so the integer
// tensor never needs a buffer. A QuantizeLinear still read elsewhere stays.
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "ops.h"
#include "quant.h"
#include "ref_node.h"

// ---------------------------------------------------------------------------
// WEIGHT DEQUANTIZATION: every DequantizeLinear on constant inputs (int8 /
// uint8 weight initializers, int32 biases) is folded here into an fp32
// constant (fold_constants skips DequantizeLinear so that this function
// alone decides). An int8 / uint8 weight read as input 1 of MatMul, Gemm or
// Conv with one scale per output channel (per tensor, or along that
// consumer's output-channel axis) also leaves that consumer the attribute
// kiln.int8_scale: a constant of one fp32 scale per output channel. The
// lowering (lower_qweight.c) then stores the weight in the int8 layout
// (quant.h) when every folded value is exactly code * scale with an int8
// code, which is (q - zero point) * scale as folded, and keeps the fp32
// constant otherwise (a later pass changed it, codes beyond int8, k not a
// multiple of 32).

// The output-channel axis of a MatMul / Gemm / Conv weight (input 1) of
// rank `rank`, or -1 when the consumer takes no int8 weight.
static int32_t kiln_qdq_weight_row_axis(const kiln_graph_node_t* node, int32_t rank) {
  if (strcmp(node->op_type, "Conv") == 0) return rank >= 3 ? 0 : -1;
  if (strcmp(node->op_type, "MatMul") == 0) return rank == 2 ? 1 : -1;
  if (strcmp(node->op_type, "Gemm") == 0 && rank == 2) {
    int64_t trans_b = 0;
    if (!kiln_status_is_ok(kiln_graph_node_attr_int(node, "transB", 0, &trans_b))) return -1;
    return trans_b ? 0 : 1;
  }
  return -1;
}

// Gives each MatMul / Gemm / Conv reading the folded weight `out` (input
// 1) of DequantizeLinear `dq` its per-output-channel scales.
static kiln_status_t kiln_qdq_mark_int8_consumers(kiln_graph_t* graph, int32_t dq,
                                                  int32_t out) {
  const kiln_graph_node_t* d = &graph->nodes[dq];
  const kiln_graph_value_t* x = &graph->values[d->inputs[0]];
  if ((x->dtype != KILN_GRAPH_DTYPE_I8 && x->dtype != KILN_GRAPH_DTYPE_U8) ||
      d->input_count < 2 || d->inputs[1] < 0 || !graph->values[d->inputs[1]].data) {
    return kiln_ok_status();
  }
  const kiln_graph_shape_t shape = x->shape;
  const kiln_graph_value_t* sv = &graph->values[d->inputs[1]];
  size_t scales = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&sv->shape, &scales));
  int64_t axis = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(d, "axis", 1, &axis));
  if (axis < 0) axis += shape.rank;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || node->input_count < 2 || node->inputs[1] != out) continue;
    const int32_t row_axis = kiln_qdq_weight_row_axis(node, shape.rank);
    if (row_axis < 0 || (scales != 1 && axis != row_axis)) continue;  // not per output channel
    const int64_t rows = shape.dims[row_axis];
    if (rows <= 0 || rows > (1 << 24) || (scales != 1 && (int64_t)scales != rows)) continue;
    float* row_scale = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(graph->allocator, (size_t)rows * sizeof(float),
                                               (void**)&row_scale));
    const float* s = (const float*)graph->values[d->inputs[1]].data;
    for (int64_t r = 0; r < rows; ++r) row_scale[r] = s[scales == 1 ? 0 : r];
    const kiln_graph_shape_t row_shape = {1, {rows}};
    int32_t id = -1;
    kiln_status_t status = kiln_graph_add_constant(graph, NULL, KILN_GRAPH_DTYPE_F32, &row_shape,
                                                   row_scale, &id);
    kiln_allocator_free(graph->allocator, row_scale);
    KILN_RETURN_IF_ERROR(status);
    kiln_graph_attr_t attr = {.name = "kiln.int8_scale", .type = KILN_GRAPH_ATTR_TENSOR,
                              .tensor = id};
    KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, (int32_t)n, &attr));
    d = &graph->nodes[dq];  // nodes and values may have moved
  }
  return kiln_ok_status();
}

kiln_status_t kiln_graph_qdq_fold_weight_dequantize(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || strcmp(node->op_type, "DequantizeLinear") != 0) continue;
    if (!kiln_ref_node_is_constant(graph, node)) continue;
    int32_t out = node->outputs[0];
    if (out >= 0 && !graph->values[out].data) {
      KILN_RETURN_IF_ERROR_ANNOTATE(kiln_ref_node_evaluate(graph, (int32_t)n),
                                    "folding weight dequantization '%s'",
                                    node->name);
    }
    if (out >= 0) KILN_RETURN_IF_ERROR(kiln_qdq_mark_int8_consumers(graph, (int32_t)n, out));
    node = &graph->nodes[n];
    node->removed = true;
    if (out >= 0) graph->values[out].producer = -1;
  }
  return kiln_ok_status();
}
// ---------------------------------------------------------------------------

// Two optional constant inputs with the same dtype, shape and bytes.
static bool kiln_qdq_same_constant(const kiln_graph_t* graph, int32_t a,
                                   int32_t b) {
  if (a < 0 || b < 0) return a == b;
  const kiln_graph_value_t* va = &graph->values[a];
  const kiln_graph_value_t* vb = &graph->values[b];
  size_t size_a = 0, size_b = 0;
  if (!va->data || !vb->data || va->dtype != vb->dtype ||
      !kiln_graph_shape_equal(&va->shape, &vb->shape) ||
      !kiln_status_is_ok(kiln_graph_value_byte_size(va, &size_a)) ||
      !kiln_status_is_ok(kiln_graph_value_byte_size(vb, &size_b))) {
    return false;
  }
  return a == b || memcmp(va->data, vb->data, size_a) == 0;
}

static int32_t kiln_qdq_input(const kiln_graph_node_t* node, size_t i) {
  return i < node->input_count ? node->inputs[i] : -1;
}

// Rewrites DequantizeLinear node `dq` when its input comes from a matching
// QuantizeLinear of an fp32 tensor.
static kiln_status_t kiln_qdq_fuse_one(kiln_graph_t* graph, int32_t dq) {
  const kiln_graph_node_t* d = &graph->nodes[dq];
  int32_t q_value = d->inputs[0];
  int32_t q = graph->values[q_value].producer;
  if (q < 0) return kiln_ok_status();
  const kiln_graph_node_t* qn = &graph->nodes[q];
  if (qn->removed || strcmp(qn->op_type, "QuantizeLinear") != 0) {
    return kiln_ok_status();
  }
  int32_t x = qn->inputs[0];
  kiln_graph_dtype_t qtype = graph->values[q_value].dtype;
  if (graph->values[x].dtype != KILN_GRAPH_DTYPE_F32 ||
      (qtype != KILN_GRAPH_DTYPE_I8 && qtype != KILN_GRAPH_DTYPE_U8) ||
      !kiln_qdq_same_constant(graph, kiln_qdq_input(qn, 1), kiln_qdq_input(d, 1)) ||
      !kiln_qdq_same_constant(graph, kiln_qdq_input(qn, 2), kiln_qdq_input(d, 2))) {
    return kiln_ok_status();
  }
  int64_t q_axis = 1, d_axis = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(qn, "axis", 1, &q_axis));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(d, "axis", 1, &d_axis));
  const kiln_graph_value_t* scale = &graph->values[qn->inputs[1]];
  int32_t rank = graph->values[x].shape.rank;
  if (q_axis < 0) q_axis += rank;
  if (d_axis < 0) d_axis += rank;
  if (scale->shape.rank == 1 && scale->shape.dims[0] != 1 && q_axis != d_axis) {
    return kiln_ok_status();
  }
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&scale->shape, &count));
  // The zero point as floats (exact: |zp| <= 255).
  int32_t zp = kiln_qdq_input(qn, 2);
  int32_t zp_float = -1;
  if (zp >= 0) {
    float values[4096];
    if (count > sizeof(values) / sizeof(values[0])) return kiln_ok_status();
    for (size_t i = 0; i < count; ++i) {
      values[i] = (float)kiln_quant_load(graph->values[zp].data, qtype, i);
    }
    kiln_graph_shape_t shape = graph->values[zp].shape;  // values may move
    KILN_RETURN_IF_ERROR(kiln_graph_add_constant(graph, NULL, KILN_GRAPH_DTYPE_F32,
                                                 &shape, values, &zp_float));
  }
  int32_t scale_id = qn->inputs[1];
  int32_t qmin = 0, qmax = 0;
  kiln_quant_range(qtype, &qmin, &qmax);
  kiln_graph_node_t* node = &graph->nodes[dq];
  node->op_type = "kiln.QuantizeDequantize";
  node->input_count = 0;
  node->attr_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, dq, x));
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, dq, scale_id));
  if (zp_float >= 0) {
    KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, dq, zp_float));
  }
  kiln_graph_attr_t attr = {.name = "axis", .type = KILN_GRAPH_ATTR_INT,
                            .i = q_axis};
  KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, dq, &attr));
  attr.name = "kiln.qmin";
  attr.i = qmin;
  KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, dq, &attr));
  attr.name = "kiln.qmax";
  attr.i = qmax;
  return kiln_graph_node_set_attr(graph, dq, &attr);
}

kiln_status_t kiln_graph_fuse_qdq(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed || strcmp(node->op_type, "DequantizeLinear") != 0) continue;
    KILN_RETURN_IF_ERROR(kiln_qdq_fuse_one(graph, (int32_t)n));
  }
  return kiln_ok_status();
}
