// Dynamic quantization (onnxruntime's quantize_dynamic: DynamicQuantizeLinear
// -> MatMulInteger / ConvInteger -> Cast -> Mul by the scales) for the fp32
// GPU kernels, exactly, in the QOperator pass's carrier (pass_qoperator.c:
// integer values as fp32 tensors of their values):
//   DynamicQuantizeLinear(x) -> ReduceMin(x), ReduceMax(x) ->
//       kiln.DynamicQuantizeParams -> scale, zero point; kiln.Quantize(x, ...)
//   MatMulInteger(a, B, a_zp, B_zp) -> Sub(a, a_zp) -> MatMul(., B - B_zp)
//   ConvInteger(x, W, x_zp, W_zp)   -> Sub(x, x_zp) -> Conv(., W - W_zp)
//   Cast(sum, to=FLOAT)             -> Identity
//   Transpose / Reshape / ... of an integer value: unchanged (exact).
//   Gather(int8 table, indices)     -> Gather(fp32 table of the integers, indices)
// A sum is exact when every partial sum stays an integer below 2^24: per
// output column (channel), 255 * sum|b - b_zp| < 2^24 (|a - a_zp| <= 255),
// in any order. Where that fails, B - B_zp = 16 hi + lo (lo in [0, 16)) and
// the two sums, each exact, give 16 * S_hi + S_lo in one fp32 rounding: the
// correctly rounded exact sum, which is what Cast(int32 -> float) gives.
// Where even the halves may pass 2^24, the node is not eligible (the graph
// is left alone and the device compile refuses it naming the node).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "pass_qoperator.h"
#include "quant.h"

#define KILN_QINT_EXACT_LIMIT 16777216.0  // 2^24
#define KILN_QINT_RADIX 16

static bool kiln_qint_is(const kiln_graph_node_t* n, const char* op) {
  return strcmp(n->op_type, op) == 0;
}

bool kiln_qint_is_sum(const kiln_graph_t* g, int32_t id) {
  if (id < 0 || g->values[id].data || g->values[id].dtype != KILN_GRAPH_DTYPE_I32) return false;
  int32_t p = g->values[id].producer;
  return p >= 0 && (kiln_qint_is(&g->nodes[p], "MatMulInteger") ||
                    kiln_qint_is(&g->nodes[p], "ConvInteger"));
}

// Ops that move integer values without arithmetic (input 0 the data).
static bool kiln_qint_is_movement(const kiln_graph_node_t* n) {
  static const char* const kOps[] = {"Transpose", "Reshape", "Flatten", "Squeeze",
                                     "Unsqueeze", "Identity"};
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (kiln_qint_is(n, kOps[i])) return true;
  }
  return false;
}

// The weight's layout: MatMul B [K, N] (output column c: stride N), Conv W
// [M, ...] (output channel c: `inner` contiguous values).
typedef struct kiln_qint_weight_t {
  int32_t id;  // the value (an id: adding values moves the array)
  size_t count, outputs, inner;
  bool conv;
} kiln_qint_weight_t;

static bool kiln_qint_weight(const kiln_graph_t* g, const kiln_graph_node_t* n,
                             kiln_qint_weight_t* out) {
  out->conv = kiln_qint_is(n, "ConvInteger");
  if (!kiln_qop_const(g, n, 1)) return false;
  out->id = n->inputs[1];
  const kiln_graph_value_t* w = &g->values[out->id];
  out->count = kiln_qop_count(w);
  if (out->count == 0 || w->shape.rank < 2) return false;
  if (!out->conv && w->shape.rank != 2) return false;  // batched weights
  out->outputs = (size_t)w->shape.dims[out->conv ? 0 : 1];
  out->inner = out->count / out->outputs;
  return true;
}

static int32_t kiln_qint_centered(const kiln_graph_t* g, const kiln_graph_node_t* n,
                                  const kiln_qint_weight_t* w, size_t i) {
  size_t c = w->conv ? i / w->inner : i % w->outputs;
  const kiln_graph_value_t* v = &g->values[w->id];
  return kiln_quant_load(v->data, v->dtype, i) - kiln_qop_int(g, n, 3, c);
}

// The radix digits of a centered weight (floor division: lo in [0, 16)).
static int32_t kiln_qint_hi(int32_t v) {
  return v >= 0 ? v / KILN_QINT_RADIX : -((-v + KILN_QINT_RADIX - 1) / KILN_QINT_RADIX);
}

// 0: one exact sum; 1: exact as two radix sums; -1: neither.
static int kiln_qint_split(const kiln_graph_t* g, const kiln_graph_node_t* n,
                           const kiln_qint_weight_t* w) {
  int result = 0;
  for (size_t c = 0; c < w->outputs; ++c) {
    double whole = 0.0, hi = 0.0, lo = 0.0;
    for (size_t k = 0; k < w->inner; ++k) {
      size_t i = w->conv ? c * w->inner + k : k * w->outputs + c;
      int32_t v = kiln_qint_centered(g, n, w, i);
      int32_t h = kiln_qint_hi(v);
      whole += abs(v);
      hi += abs(h);
      lo += v - KILN_QINT_RADIX * h;
    }
    if (255.0 * whole < KILN_QINT_EXACT_LIMIT) continue;
    if (255.0 * hi >= KILN_QINT_EXACT_LIMIT || 255.0 * lo >= KILN_QINT_EXACT_LIMIT) return -1;
    result = 1;
  }
  return result;
}

// A Gather from a constant int8 / uint8 table (quantize_dynamic's embedding
// tables) with run-time indices.
static bool kiln_qint_is_table_gather(const kiln_graph_t* g, const kiln_graph_node_t* n) {
  if (!kiln_qint_is(n, "Gather") || !kiln_qop_const(g, n, 0)) return false;
  kiln_graph_dtype_t d = g->values[n->inputs[0]].dtype;
  return d == KILN_GRAPH_DTYPE_I8 || d == KILN_GRAPH_DTYPE_U8;
}

bool kiln_qint_eligible(const kiln_graph_t* g, const kiln_graph_node_t* n) {
  if (kiln_qint_is(n, "DynamicQuantizeLinear") || kiln_qint_is_movement(n) ||
      kiln_qint_is_table_gather(g, n)) {
    return true;
  }
  if (kiln_qint_is(n, "Cast")) {
    int64_t to = 0;
    return kiln_status_is_ok(kiln_graph_node_attr_int(n, "to", 0, &to)) &&
           to == KILN_GRAPH_DTYPE_F32;
  }
  if (!kiln_qint_is(n, "MatMulInteger") && !kiln_qint_is(n, "ConvInteger")) return false;
  kiln_qint_weight_t w;
  if (!kiln_qint_weight(g, n, &w)) return false;
  if (n->input_count > 3 && n->inputs[3] >= 0 && !kiln_qop_const(g, n, 3)) return false;
  // a_zp (x_zp): per tensor, constant or run-time (a DynamicQuantizeLinear's).
  if (n->input_count > 2 && n->inputs[2] >= 0 && kiln_qop_count(&g->values[n->inputs[2]]) != 1) {
    return false;
  }
  return kiln_qint_split(g, n, &w) >= 0;
}

// Adds node `op`(inputs) -> output with the integer attribute list given.
static kiln_status_t kiln_qint_node(kiln_graph_t* g, const char* op, const char* base,
                                    const char* suffix, const int32_t* inputs, size_t count,
                                    int32_t output, int32_t* out_node) {
  char name[512];
  snprintf(name, sizeof(name), "%s/%s", base, suffix);
  return kiln_graph_add_node(g, op, name, inputs, count, &output, 1, out_node);
}

static kiln_status_t kiln_qint_set_int(kiln_graph_t* g, int32_t node, const char* name,
                                       int64_t value) {
  kiln_graph_attr_t attr = {.name = name, .type = KILN_GRAPH_ATTR_INT, .i = value};
  return kiln_graph_node_set_attr(g, node, &attr);
}

static kiln_status_t kiln_qint_value(kiln_graph_t* g, int32_t* id) {
  if (*id >= 0) return kiln_ok_status();
  return kiln_graph_add_value(g, NULL, KILN_GRAPH_DTYPE_F32, id);
}

// DynamicQuantizeLinear -> ReduceMin, ReduceMax, kiln.DynamicQuantizeParams,
// kiln.Quantize (uint8 range).
static kiln_status_t kiln_qint_rewrite_dynamic(kiln_graph_t* g, int32_t id, const char* base) {
  const kiln_graph_node_t* n = &g->nodes[id];
  int32_t x = n->inputs[0];
  int32_t outs[3] = {-1, -1, -1};
  for (size_t o = 0; o < n->output_count && o < 3; ++o) outs[o] = n->outputs[o];
  int32_t lo = -1, hi = -1, node = -1;
  for (size_t o = 0; o < 3; ++o) KILN_RETURN_IF_ERROR(kiln_qint_value(g, &outs[o]));
  KILN_RETURN_IF_ERROR(kiln_qint_value(g, &lo));
  KILN_RETURN_IF_ERROR(kiln_qint_value(g, &hi));
  KILN_RETURN_IF_ERROR(kiln_qint_node(g, "ReduceMin", base, "min", &x, 1, lo, &node));
  KILN_RETURN_IF_ERROR(kiln_qint_set_int(g, node, "keepdims", 0));
  KILN_RETURN_IF_ERROR(kiln_qint_node(g, "ReduceMax", base, "max", &x, 1, hi, &node));
  KILN_RETURN_IF_ERROR(kiln_qint_set_int(g, node, "keepdims", 0));
  int32_t range[2] = {lo, hi};
  KILN_RETURN_IF_ERROR(
      kiln_graph_add_node(g, "kiln.DynamicQuantizeParams", base, range, 2, outs + 1, 2, &node));
  int32_t q_in[3] = {x, outs[1], outs[2]};
  KILN_RETURN_IF_ERROR(kiln_qint_node(g, "kiln.Quantize", base, "quantize", q_in, 3, outs[0],
                                      &node));
  KILN_RETURN_IF_ERROR(kiln_qint_set_int(g, node, "axis", 1));
  KILN_RETURN_IF_ERROR(kiln_qint_set_int(g, node, "kiln.qmin", 0));
  return kiln_qint_set_int(g, node, "kiln.qmax", 255);
}

// One radix digit (or the whole, `digit` < 0) of the centered weight, as an
// fp32 constant of the weight's shape.
static kiln_status_t kiln_qint_weight_constant(kiln_graph_t* g, int32_t id,
                                               const kiln_qint_weight_t* w, int digit,
                                               int32_t* out) {
  float* values = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_malloc(g->allocator, w->count * sizeof(float), (void**)&values));
  for (size_t i = 0; i < w->count; ++i) {
    int32_t v = kiln_qint_centered(g, &g->nodes[id], w, i);
    int32_t h = kiln_qint_hi(v);
    values[i] = (float)(digit < 0 ? v : digit == 1 ? h : v - KILN_QINT_RADIX * h);
  }
  kiln_graph_shape_t shape = g->values[w->id].shape;
  kiln_status_t status = kiln_graph_add_constant(g, NULL, KILN_GRAPH_DTYPE_F32, &shape, values,
                                                 out);
  kiln_allocator_free(g->allocator, values);
  return status;
}

// The linear op on (x - x_zp) and the centered weight `weight` -> out.
static kiln_status_t kiln_qint_linear(kiln_graph_t* g, int32_t id, const char* base,
                                      const char* suffix, int32_t x, int32_t weight,
                                      int32_t out) {
  bool conv = kiln_qint_is(&g->nodes[id], "ConvInteger");
  int32_t in[2] = {x, weight}, node = -1;
  KILN_RETURN_IF_ERROR(
      kiln_qint_node(g, conv ? "Conv" : "MatMul", base, suffix, in, 2, out, &node));
  static const char* const kConvAttrs[] = {"auto_pad", "dilations", "group",
                                           "kernel_shape", "pads", "strides"};
  for (size_t a = 0; conv && a < sizeof(kConvAttrs) / sizeof(kConvAttrs[0]); ++a) {
    const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(&g->nodes[id], kConvAttrs[a]);
    if (attr) {
      kiln_graph_attr_t copy = *attr;
      KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(g, node, &copy));
    }
  }
  return kiln_ok_status();
}

// MatMulInteger / ConvInteger -> [Sub] -> MatMul / Conv (or the two radix
// sums, 16 * hi + lo).
static kiln_status_t kiln_qint_rewrite_linear(kiln_graph_t* g, int32_t id, const char* base) {
  kiln_qint_weight_t w;
  if (!kiln_qint_weight(g, &g->nodes[id], &w)) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "node '%s': weight not constant", base);
  }
  int split = kiln_qint_split(g, &g->nodes[id], &w);
  int32_t out = g->nodes[id].outputs[0], x = g->nodes[id].inputs[0], node = -1;
  int32_t zp = g->nodes[id].input_count > 2 ? g->nodes[id].inputs[2] : -1;
  if (zp >= 0 && (!g->values[zp].data || kiln_qop_int(g, &g->nodes[id], 2, 0) != 0)) {
    int32_t zf = zp, centered = -1;
    if (g->values[zp].data) {
      float v = (float)kiln_qop_int(g, &g->nodes[id], 2, 0);
      KILN_RETURN_IF_ERROR(kiln_qop_constant(g, &v, 1, NULL, &zf));
    }
    KILN_RETURN_IF_ERROR(kiln_qint_value(g, &centered));
    int32_t sub[2] = {x, zf};
    KILN_RETURN_IF_ERROR(kiln_qint_node(g, "Sub", base, "sub_zero_point", sub, 2, centered,
                                        &node));
    x = centered;
  }
  if (split == 0) {
    int32_t weight = -1;
    KILN_RETURN_IF_ERROR(kiln_qint_weight_constant(g, id, &w, -1, &weight));
    return kiln_qint_linear(g, id, base, "sum", x, weight, out);
  }
  int32_t weights[2] = {-1, -1}, sums[2] = {-1, -1}, scaled = -1, radix = -1;
  const float kRadix = (float)KILN_QINT_RADIX;
  for (int d = 0; d < 2; ++d) {
    KILN_RETURN_IF_ERROR(kiln_qint_weight_constant(g, id, &w, 1 - d, &weights[d]));
    KILN_RETURN_IF_ERROR(kiln_qint_value(g, &sums[d]));
    KILN_RETURN_IF_ERROR(
        kiln_qint_linear(g, id, base, d == 0 ? "sum_hi" : "sum_lo", x, weights[d], sums[d]));
  }
  KILN_RETURN_IF_ERROR(kiln_qop_constant(g, &kRadix, 1, NULL, &radix));
  KILN_RETURN_IF_ERROR(kiln_qint_value(g, &scaled));
  int32_t mul[2] = {sums[0], radix};
  KILN_RETURN_IF_ERROR(kiln_qint_node(g, "Mul", base, "hi_scaled", mul, 2, scaled, &node));
  // 16 * S_hi is exact; the add is the one rounding of the exact sum.
  int32_t add[2] = {scaled, sums[1]};
  return kiln_qint_node(g, "Add", base, "sum", add, 2, out, &node);
}

kiln_status_t kiln_qint_rewrite(kiln_graph_t* g, int32_t id, bool* out_rewritten) {
  *out_rewritten = false;
  kiln_graph_node_t* n = &g->nodes[id];
  if (kiln_qint_is(n, "Cast") && kiln_qop_is_integer(g, n->inputs[0])) {
    n->op_type = "Identity";
    n->attr_count = 0;
    *out_rewritten = true;
    return kiln_ok_status();
  }
  if (kiln_qint_is_table_gather(g, n)) {
    // The table as fp32 values of its integers (4 bytes per entry).
    const kiln_graph_value_t* t = &g->values[n->inputs[0]];
    size_t count = kiln_qop_count(t);
    kiln_graph_shape_t shape = t->shape;
    float* values = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(g->allocator, (count ? count : 1) * sizeof(float),
                                               (void**)&values));
    for (size_t i = 0; i < count; ++i) values[i] = (float)kiln_quant_load(t->data, t->dtype, i);
    int32_t table = -1;
    kiln_status_t status = kiln_qop_constant(g, values, count, &shape, &table);
    kiln_allocator_free(g->allocator, values);
    KILN_RETURN_IF_ERROR(status);
    g->nodes[id].inputs[0] = table;
    *out_rewritten = true;
    return kiln_ok_status();
  }
  bool dynamic = kiln_qint_is(n, "DynamicQuantizeLinear");
  if (!dynamic && !kiln_qint_is(n, "MatMulInteger") && !kiln_qint_is(n, "ConvInteger")) {
    return kiln_ok_status();
  }
  const char* base = n->name;
  size_t first_new = g->node_count;
  KILN_RETURN_IF_ERROR(dynamic ? kiln_qint_rewrite_dynamic(g, id, base)
                               : kiln_qint_rewrite_linear(g, id, base));
  // The replacement nodes take the node's place (it stays, removed).
  n = &g->nodes[id];
  n->removed = true;
  n->output_count = 0;
  *out_rewritten = true;
  return kiln_graph_place_nodes_after(g, (size_t)id, first_new);
}
