// Unrolls LSTM, GRU and RNN nodes whose hidden size is past what the
// time-loop kernel holds in shared memory (KILN_RNN_MAX_HIDDEN; smaller ones
// are lowered whole by onnx-emit/lower_rnn.c) and that need no clip,
// input_forget or short sequence_lens (constant W, R, B; static sequence
// length) into MatMul, Gather, Slice, activation and elementwise nodes the
// GPU lowers, one group per time step (about 15 dispatches a step). The input projection of every step is
// one MatMul up front; each step adds the recurrent MatMul. The expansion is
// placed right after the original node so the node order stays
// topological. Nodes that do not qualify stay as they are (the GPU lowering
// then refuses them by name).
#include <stdio.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/kernels_codes.h"
#include "ops.h"
#include "rnn.h"

// Steps above this are not unrolled (each step is about 15 dispatches).
#define KILN_UNROLL_MAX_STEPS 512

typedef struct kiln_unroll_t {
  kiln_graph_t* graph;
  const char* base;  // the RNN node's name
  size_t counter;
  kiln_status_t status;  // first failure; later calls do nothing
} kiln_unroll_t;

static int32_t kiln_u_node(kiln_unroll_t* u, const char* op, const int32_t* inputs,
                           size_t count, const kiln_graph_attr_t* attr) {
  if (u->status) return -1;
  int32_t out = -1, node = -1;
  char name[256];
  snprintf(name, sizeof(name), "%s/unroll/%s_%zu", u->base, op, u->counter++);
  u->status = kiln_graph_add_value(u->graph, NULL, KILN_GRAPH_DTYPE_F32, &out);
  if (!u->status) {
    u->status = kiln_graph_add_node(u->graph, op, name, inputs, count, &out, 1, &node);
  }
  if (!u->status && attr) u->status = kiln_graph_node_set_attr(u->graph, node, attr);
  return u->status ? -1 : out;
}

static int32_t kiln_u_binary(kiln_unroll_t* u, const char* op, int32_t a, int32_t b) {
  int32_t in[] = {a, b};
  return kiln_u_node(u, op, in, 2, NULL);
}

static int32_t kiln_u_unary(kiln_unroll_t* u, const char* op, int32_t x) {
  return kiln_u_node(u, op, &x, 1, NULL);
}

static int32_t kiln_u_const(kiln_unroll_t* u, kiln_graph_dtype_t dtype, int32_t rank,
                            const int64_t* dims, const void* data) {
  if (u->status) return -1;
  kiln_graph_shape_t shape = {rank, {0}};
  for (int32_t d = 0; d < rank; ++d) shape.dims[d] = dims[d];
  int32_t id = -1;
  u->status = kiln_graph_add_constant(u->graph, NULL, dtype, &shape, data, &id);
  return u->status ? -1 : id;
}

static int32_t kiln_u_ints(kiln_unroll_t* u, int32_t count, const int64_t* values) {
  int64_t dims[] = {count};
  return kiln_u_const(u, KILN_GRAPH_DTYPE_I64, 1, dims, values);
}

static kiln_graph_attr_t kiln_u_int_attr(const char* name, int64_t value) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = name;
  attr.type = KILN_GRAPH_ATTR_INT;
  attr.i = value;
  return attr;
}

static int32_t kiln_u_transpose(kiln_unroll_t* u, int32_t x, int32_t rank, const int64_t* perm) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = "perm";
  attr.type = KILN_GRAPH_ATTR_INTS;
  attr.ints = perm;
  attr.count = (size_t)rank;
  return kiln_u_node(u, "Transpose", &x, 1, &attr);
}

// Entries [begin, end) of the last axis of a rank-`rank` value.
static int32_t kiln_u_slice_last(kiln_unroll_t* u, int32_t x, int64_t rank, int64_t begin,
                                 int64_t end) {
  int64_t axis = rank - 1;
  int32_t in[] = {x, kiln_u_ints(u, 1, &begin), kiln_u_ints(u, 1, &end),
                  kiln_u_ints(u, 1, &axis)};
  return kiln_u_node(u, "Slice", in, 4, NULL);
}

// Columns [begin, end) of a [rows, cols] value.
static int32_t kiln_u_columns(kiln_unroll_t* u, int32_t x, int64_t begin, int64_t end) {
  return kiln_u_slice_last(u, x, 2, begin, end);
}

static int32_t kiln_u_reshape(kiln_unroll_t* u, int32_t x, int32_t rank, const int64_t* dims) {
  int32_t in[] = {x, kiln_u_ints(u, rank, dims)};
  return kiln_u_node(u, "Reshape", in, 2, NULL);
}

// Concat of any number of values (the op takes at most 64 at once).
static int32_t kiln_u_concat(kiln_unroll_t* u, const int32_t* values, size_t count,
                             int64_t axis) {
  if (count == 1) return values[0];
  kiln_graph_attr_t attr = kiln_u_int_attr("axis", axis);
  if (count <= 64) return kiln_u_node(u, "Concat", values, count, &attr);
  int32_t parts[64];
  size_t part_count = 0, chunk = (count + 63) / 64;
  for (size_t i = 0; i < count; i += chunk) {
    size_t n = count - i < chunk ? count - i : chunk;
    parts[part_count++] = kiln_u_concat(u, values + i, n, axis);
  }
  return kiln_u_node(u, "Concat", parts, part_count, &attr);
}

// rows [g0, g1) of direction d of a [D, G*H, cols] constant, transposed to
// [cols, g1 - g0].
static int32_t kiln_u_weight_t(kiln_unroll_t* u, const kiln_graph_value_t* w, int64_t d,
                               int64_t g0, int64_t g1) {
  if (u->status) return -1;
  int64_t rows = w->shape.dims[1], cols = w->shape.dims[2], n = g1 - g0;
  float* data = NULL;
  u->status = kiln_allocator_malloc(u->graph->allocator,
                                    (size_t)(cols * n > 0 ? cols * n : 1) * sizeof(float),
                                    (void**)&data);
  if (u->status) return -1;
  const float* src = (const float*)w->data + d * rows * cols;
  for (int64_t g = 0; g < n; ++g) {
    for (int64_t c = 0; c < cols; ++c) data[c * n + g] = src[(g0 + g) * cols + c];
  }
  int64_t dims[] = {cols, n};
  int32_t id = kiln_u_const(u, KILN_GRAPH_DTYPE_F32, 2, dims, data);
  kiln_allocator_free(u->graph->allocator, data);
  return id;
}

// A bias vector: sum of the chosen halves of B (direction d), zero where
// masked out; `w_rows` / `r_rows` say which of the G*H entries take Wb / Rb.
static int32_t kiln_u_bias(kiln_unroll_t* u, const kiln_graph_value_t* b, int64_t d,
                           int64_t gh, int64_t w_begin, int64_t w_end, int64_t r_begin,
                           int64_t r_end) {
  if (u->status) return -1;
  float* data = NULL;
  u->status = kiln_allocator_malloc(u->graph->allocator, (size_t)gh * sizeof(float),
                                    (void**)&data);
  if (u->status) return -1;
  const float* wb = b ? (const float*)b->data + d * 2 * gh : NULL;
  for (int64_t g = 0; g < gh; ++g) {
    float v = 0.0f;
    if (wb && g >= w_begin && g < w_end) v += wb[g];
    if (wb && g >= r_begin && g < r_end) v += wb[gh + g];
    data[g] = v;
  }
  int64_t dims[] = {gh};
  int32_t id = kiln_u_const(u, KILN_GRAPH_DTYPE_F32, 1, dims, data);
  kiln_allocator_free(u->graph->allocator, data);
  return id;
}

// Initial state `index` (5: h, 6: c) of direction d as [batch, hidden].
static int32_t kiln_u_initial(kiln_unroll_t* u, const kiln_graph_node_t* node, size_t index,
                              const kiln_rnn_info_t* info, int64_t d) {
  int64_t dims[] = {info->batch, info->hidden};
  if (index >= node->input_count || node->inputs[index] < 0) {
    if (u->status) return -1;
    size_t count = (size_t)(info->batch * info->hidden);
    float* zeros = NULL;
    u->status = kiln_allocator_calloc_array(u->graph->allocator, count, sizeof(float),
                                            (void**)&zeros);
    if (u->status) return -1;
    int32_t id = kiln_u_const(u, KILN_GRAPH_DTYPE_F32, 2, dims, zeros);
    kiln_allocator_free(u->graph->allocator, zeros);
    return id;
  }
  kiln_graph_attr_t axis = kiln_u_int_attr("axis", info->batch_first ? 1 : 0);
  int32_t in[] = {node->inputs[index], kiln_u_const(u, KILN_GRAPH_DTYPE_I64, 0, NULL, &d)};
  return kiln_u_node(u, "Gather", in, 2, &axis);
}

// Emits the expansion of node `n`; on success the node is removed and its
// outputs are produced by the new nodes.
static void kiln_u_expand(kiln_unroll_t* u, int32_t n, const kiln_rnn_info_t* info,
                          int32_t* hs /* [D][S] */) {
  kiln_graph_t* g = u->graph;
  kiln_graph_node_t node = g->nodes[n];  // a copy: the array may move
  const kiln_graph_value_t* w = &g->values[node.inputs[1]];
  const kiln_graph_value_t* r = &g->values[node.inputs[2]];
  const kiln_graph_value_t* b =
      node.input_count > 3 && node.inputs[3] >= 0 ? &g->values[node.inputs[3]] : NULL;
  const int64_t H = info->hidden, GH = info->gates * info->hidden, S = info->seq;
  int32_t x = node.inputs[0];
  if (info->batch_first) {
    static const int64_t kSwap[] = {1, 0, 2};
    x = kiln_u_transpose(u, x, 3, kSwap);
  }
  int32_t last_h[2] = {-1, -1}, last_c[2] = {-1, -1};
  bool gru = info->kind == KILN_RNN_GRU, lstm = info->kind == KILN_RNN_LSTM;
  for (int64_t d = 0; d < info->directions; ++d) {
    // Pointers into g->values move as values are added: refetch.
    w = &g->values[node.inputs[1]];
    int32_t wt = kiln_u_weight_t(u, w, d, 0, GH);
    b = node.input_count > 3 && node.inputs[3] >= 0 ? &g->values[node.inputs[3]] : NULL;
    // GRU keeps R_h's bias with the recurrent product (inside r * (...)).
    int32_t x_bias = kiln_u_bias(u, b, d, GH, 0, GH, 0, gru ? 2 * H : GH);
    int32_t xw = kiln_u_binary(u, "Add", kiln_u_binary(u, "MatMul", x, wt), x_bias);
    r = &g->values[node.inputs[2]];
    int32_t rt = kiln_u_weight_t(u, r, d, 0, gru && !info->linear_before_reset ? 2 * H : GH);
    int32_t rht = -1, h_bias = -1;
    if (gru) {
      r = &g->values[node.inputs[2]];
      if (!info->linear_before_reset) rht = kiln_u_weight_t(u, r, d, 2 * H, GH);
      b = node.input_count > 3 && node.inputs[3] >= 0 ? &g->values[node.inputs[3]] : NULL;
      h_bias = kiln_u_bias(u, b, d, GH, 0, 0, 2 * H, GH);  // R_h's bias only
      if (!info->linear_before_reset) h_bias = kiln_u_slice_last(u, h_bias, 1, 2 * H, GH);
    }
    int32_t h = kiln_u_initial(u, &node, 5, info, d);
    int32_t c = lstm ? kiln_u_initial(u, &node, 6, info, d) : -1;
    bool backwards = d == 1 || info->reverse;
    for (int64_t step = 0; step < S && !u->status; ++step) {
      int64_t t = backwards ? S - 1 - step : step;
      int32_t gather_in[] = {xw, kiln_u_const(u, KILN_GRAPH_DTYPE_I64, 0, NULL, &t)};
      int32_t xt = kiln_u_node(u, "Gather", gather_in, 2, NULL);  // [batch, G*H]
      if (lstm) {
        int32_t gates = kiln_u_binary(u, "Add", kiln_u_binary(u, "MatMul", h, rt), xt);
        int32_t i = kiln_u_unary(u, "Sigmoid", kiln_u_columns(u, gates, 0, H));
        int32_t o = kiln_u_unary(u, "Sigmoid", kiln_u_columns(u, gates, H, 2 * H));
        int32_t f = kiln_u_unary(u, "Sigmoid", kiln_u_columns(u, gates, 2 * H, 3 * H));
        int32_t cc = kiln_u_unary(u, "Tanh", kiln_u_columns(u, gates, 3 * H, 4 * H));
        c = kiln_u_binary(u, "Add", kiln_u_binary(u, "Mul", f, c), kiln_u_binary(u, "Mul", i, cc));
        h = kiln_u_binary(u, "Mul", o, kiln_u_unary(u, "Tanh", c));
      } else if (gru) {
        int32_t hr = kiln_u_binary(u, "MatMul", h, rt);
        if (info->linear_before_reset) hr = kiln_u_binary(u, "Add", hr, h_bias);
        int32_t z = kiln_u_unary(u, "Sigmoid", kiln_u_binary(u, "Add", kiln_u_columns(u, xt, 0, H),
                                                               kiln_u_columns(u, hr, 0, H)));
        int32_t rr = kiln_u_unary(
            u, "Sigmoid",
            kiln_u_binary(u, "Add", kiln_u_columns(u, xt, H, 2 * H), kiln_u_columns(u, hr, H, 2 * H)));
        int32_t hh;
        if (info->linear_before_reset) {
          hh = kiln_u_binary(u, "Mul", rr, kiln_u_columns(u, hr, 2 * H, 3 * H));
        } else {
          hh = kiln_u_binary(u, "Add",
                             kiln_u_binary(u, "MatMul", kiln_u_binary(u, "Mul", rr, h), rht),
                             h_bias);
        }
        int32_t nn = kiln_u_unary(u, "Tanh",
                                  kiln_u_binary(u, "Add", kiln_u_columns(u, xt, 2 * H, 3 * H), hh));
        // (1 - z) * n + z * h, as n + z * (h - n).
        h = kiln_u_binary(u, "Add", nn, kiln_u_binary(u, "Mul", z, kiln_u_binary(u, "Sub", h, nn)));
      } else {
        h = kiln_u_unary(u, "Tanh", kiln_u_binary(u, "Add", kiln_u_binary(u, "MatMul", h, rt), xt));
      }
      hs[d * S + t] = h;
    }
    last_h[d] = h;
    last_c[d] = c;
  }
  if (u->status) return;
  const int64_t B = info->batch, D = info->directions;
  int32_t outputs[3] = {-1, -1, -1};
  for (size_t o = 0; o < node.output_count && o < 3; ++o) outputs[o] = node.outputs[o];
  int32_t results[3] = {-1, -1, -1};
  if (outputs[0] >= 0) {
    int32_t per_time[KILN_UNROLL_MAX_STEPS];
    for (int64_t t = 0; t < S; ++t) {
      int32_t dirs[2];
      int64_t dims[] = {1, 1, B, H};
      for (int64_t d = 0; d < D; ++d) dirs[d] = kiln_u_reshape(u, hs[d * S + t], 4, dims);
      per_time[t] = kiln_u_concat(u, dirs, (size_t)D, 1);
    }
    results[0] = kiln_u_concat(u, per_time, (size_t)S, 0);  // [S, D, B, H]
    if (info->batch_first) {
      static const int64_t kPerm[] = {2, 0, 1, 3};
      results[0] = kiln_u_transpose(u, results[0], 4, kPerm);
    }
  }
  for (int32_t o = 1; o < 3; ++o) {
    if (outputs[o] < 0) continue;
    int32_t dirs[2];
    int64_t dims[] = {1, B, H};
    for (int64_t d = 0; d < D; ++d) dirs[d] = kiln_u_reshape(u, o == 1 ? last_h[d] : last_c[d], 3, dims);
    results[o] = kiln_u_concat(u, dirs, (size_t)D, 0);  // [D, B, H]
    if (info->batch_first) {
      static const int64_t kPerm[] = {1, 0, 2};
      results[o] = kiln_u_transpose(u, results[o], 3, kPerm);
    }
  }
  g->nodes[n].removed = true;
  for (int32_t o = 0; o < 3 && !u->status; ++o) {
    if (outputs[o] < 0) continue;
    int32_t id = -1;
    char name[256];
    snprintf(name, sizeof(name), "%s/unroll/output_%d", u->base, o);
    u->status = kiln_graph_add_node(g, "Identity", name, &results[o], 1, &outputs[o], 1, &id);
  }
}

static bool kiln_u_constant(const kiln_graph_t* g, const kiln_graph_node_t* node, size_t i) {
  return i < node->input_count && node->inputs[i] >= 0 && g->values[node->inputs[i]].data;
}

kiln_status_t kiln_graph_unroll_rnns(kiln_graph_t* graph) {
  // The expansion uses Slice with starts/ends inputs (opset 10+).
  if (graph->opset < 10) return kiln_ok_status();
  bool changed = false;
  for (size_t n = 0; n < graph->node_count; ++n) {
    kiln_graph_node_t* node = &graph->nodes[n];
    const char* op = node->op_type;
    if (node->removed ||
        (strcmp(op, "LSTM") != 0 && strcmp(op, "GRU") != 0 && strcmp(op, "RNN") != 0)) {
      continue;
    }
    kiln_rnn_info_t info;
    kiln_op_infer_args_t args = {graph, node};
    KILN_RETURN_IF_ERROR(kiln_rnn_info(&args, &info));
    bool has_bias = node->input_count > 3 && node->inputs[3] >= 0;
    if (info.hidden <= KILN_RNN_MAX_HIDDEN || !kiln_rnn_is_plain(&info) ||
        !kiln_u_constant(graph, node, 1) || !kiln_u_constant(graph, node, 2) ||
        (has_bias && !kiln_u_constant(graph, node, 3)) || info.seq > KILN_UNROLL_MAX_STEPS) {
      continue;
    }
    int32_t hs[2 * KILN_UNROLL_MAX_STEPS];
    size_t first_new = graph->node_count;
    kiln_unroll_t u = {graph, node->name, 0, kiln_ok_status()};
    kiln_u_expand(&u, (int32_t)n, &info, hs);
    KILN_RETURN_IF_ERROR(u.status);
    size_t added = graph->node_count - first_new;
    KILN_RETURN_IF_ERROR(kiln_graph_place_nodes_after(graph, n, first_new));
    n += added;
    changed = true;
  }
  return changed ? kiln_graph_infer_shapes(graph) : kiln_ok_status();
}
