// Attention fusion: MatMul(Q, K^T) [* or / scalar] [+ mask | Where(const
// condition, fill)] -> Softmax(last axis) -> MatMul(., V) becomes one
// kiln.Attention node (attention.h) in the second MatMul's place. Q, K^T
// and V are traced back through the view ops exporters put around heads
// (Transpose, Reshape/Squeeze/Unsqueeze/Flatten, Slice or Split of a fused
// QKV projection) and scalar Mul/Div on Q or K (the dynamo exporter scales
// both by sqrt(scale)); the result is traced forward through the head
// merge (Transpose, Reshape) to the value the node then writes directly.
// A constant mask that is exactly causal becomes the kernel's causal flag.
// Graphs where any step does not match exactly are left as they are.
#include <math.h>
#include <string.h>

#include "attention.h"
#include "attention_views.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/kernels_codes.h"
#include "ops.h"

// Batch atoms of the views (dims before the last two), refined to a common
// factorization and merged where every view allows it; at most 2 remain.
typedef struct kiln_batch_t {
  int32_t count;
  int64_t sizes[2];
  int64_t strides[6][2];  // per view
} kiln_batch_t;

static bool kiln_view_batch_atoms(const kiln_view_t* v, kiln_view_atom_t* atoms,
                                  int32_t* count) {
  int32_t n = kiln_view_first_atom(v, v->rank - 2);
  if (n > KILN_VIEW_MAX_ATOMS) return false;
  memcpy(atoms, v->atoms, (size_t)n * sizeof(*atoms));
  *count = n;
  return true;
}

static bool kiln_refine_batch(kiln_view_atom_t lists[][KILN_VIEW_MAX_ATOMS * 2],
                              int32_t* counts, int views, kiln_batch_t* out) {
  // Split every list at the union of all prefix-product boundaries.
  for (int round = 0; round < 4 * KILN_VIEW_MAX_ATOMS; ++round) {
    bool changed = false;
    for (int a = 0; a < views && !changed; ++a) {
      int64_t prefix = 1;
      for (int32_t i = 0; i < counts[a] && !changed; ++i) {
        int64_t lo = prefix, hi = prefix * lists[a][i].size;
        for (int b = 0; b < views && !changed; ++b) {
          int64_t p = 1;
          for (int32_t j = 0; j < counts[b]; ++j) {
            p *= lists[b][j].size;
            if (p <= lo || p >= hi) continue;
            if (p % lo || lists[a][i].size % (p / lo)) return false;
            if (counts[a] >= KILN_VIEW_MAX_ATOMS * 2) return false;
            int64_t outer = p / lo, inner = lists[a][i].size / outer;
            memmove(&lists[a][i + 1], &lists[a][i], (size_t)(counts[a] - i) * sizeof(lists[a][0]));
            lists[a][i].size = outer;
            lists[a][i].stride = lists[a][i + 1].stride * inner;
            lists[a][i + 1].size = inner;
            counts[a]++;
            changed = true;
            break;
          }
        }
        prefix = hi;
      }
    }
    if (!changed) break;
  }
  for (int a = 1; a < views; ++a) {
    if (counts[a] != counts[0]) return false;
    for (int32_t i = 0; i < counts[0]; ++i) {
      if (lists[a][i].size != lists[0][i].size) return false;
    }
  }
  // Merge neighbours that are one stride run in every view.
  for (int32_t i = 0; i + 1 < counts[0];) {
    bool merge = true;
    for (int a = 0; a < views; ++a) {
      if (lists[a][i].stride != lists[a][i + 1].stride * lists[a][i + 1].size) merge = false;
    }
    if (!merge) {
      ++i;
      continue;
    }
    for (int a = 0; a < views; ++a) {
      lists[a][i].size *= lists[a][i + 1].size;
      lists[a][i].stride = lists[a][i + 1].stride;
      memmove(&lists[a][i + 1], &lists[a][i + 2],
              (size_t)(counts[a] - i - 2) * sizeof(lists[a][0]));
      counts[a]--;
    }
  }
  if (counts[0] > 2) return false;
  memset(out, 0, sizeof(*out));
  out->count = counts[0];
  out->sizes[0] = out->sizes[1] = 1;
  for (int32_t i = 0; i < counts[0]; ++i) {
    int32_t slot = counts[0] == 2 ? i : 1;  // one atom: the head
    out->sizes[slot] = lists[0][i].size;
    for (int a = 0; a < views; ++a) out->strides[a][slot] = lists[a][i].stride;
  }
  return true;
}

// The mask as a view over the scores' logical shape (broadcast dims get
// stride 0).
static bool kiln_mask_view(const kiln_graph_t* graph, int32_t mask,
                           const kiln_graph_shape_t* scores, kiln_view_t* out) {
  const kiln_graph_shape_t* m = &graph->values[mask].shape;
  if (m->rank > scores->rank) return false;
  memset(out, 0, sizeof(*out));
  out->root = mask;
  out->rank = scores->rank;
  int64_t stride = 1;
  int64_t strides[KILN_GRAPH_MAX_RANK] = {0};
  for (int32_t d = m->rank; d-- > 0;) {
    strides[scores->rank - m->rank + d] = m->dims[d] == 1 ? 0 : stride;
    stride *= m->dims[d];
  }
  for (int32_t d = 0; d < scores->rank; ++d) {
    int32_t md = d - (scores->rank - m->rank);
    if (md >= 0 && m->dims[md] != 1 && m->dims[md] != scores->dims[d]) return false;
    out->dims[d] = scores->dims[d];
    if (scores->dims[d] == 1) continue;
    out->atoms[out->atom_count].size = scores->dims[d];
    out->atoms[out->atom_count++].stride = strides[d];
    out->dim_atoms[d] = 1;
  }
  return true;
}

// True when constant `mask` ([.., sq, sk] broadcast over the rest) masks
// exactly the keys j > i: -inf there (KILN_SELECT_KEEP_BITS or 0 elsewhere).
static bool kiln_mask_is_causal(const kiln_graph_t* graph, int32_t mask, int64_t kind,
                                int64_t sq, int64_t sk) {
  const kiln_graph_value_t* m = &graph->values[mask];
  if (!m->data || sq != sk || m->shape.rank < 2) return false;
  if (m->shape.dims[m->shape.rank - 2] != sq || m->shape.dims[m->shape.rank - 1] != sk) {
    return false;
  }
  size_t count = 0;
  if (!kiln_status_is_ok(kiln_graph_shape_element_count(&m->shape, &count))) return false;
  const float* values = (const float*)m->data;
  for (size_t e = 0; e < count; ++e) {
    int64_t j = (int64_t)(e % (size_t)sk), i = (int64_t)(e / (size_t)sk % (size_t)sq);
    uint32_t bits;
    memcpy(&bits, &values[e], sizeof(bits));
    bool keep = kind == KILN_ATTN_MASK_ADD ? values[e] == 0.0f : bits == KILN_SELECT_KEEP_BITS;
    bool masked = isinf(values[e]) && values[e] < 0;
    if (j > i ? !masked : !keep) return false;
  }
  return true;
}

// Where(cond, x, y) with a constant condition and a constant other branch
// as a select mask: KILN_SELECT_KEEP_BITS where the scores pass, the fill
// elsewhere. Adds the constant; -1 when the shapes do not allow it.
static int32_t kiln_select_mask(kiln_graph_t* graph, const kiln_graph_node_t* where,
                                int32_t scores) {
  if (where->input_count != 3) return -1;
  int32_t cond = where->inputs[0];
  bool scores_first = where->inputs[1] == scores;
  int32_t fill = scores_first ? where->inputs[2] : where->inputs[1];
  const kiln_graph_value_t* c = &graph->values[cond];
  const kiln_graph_value_t* f = &graph->values[fill];
  if (!c->data || !f->data || c->dtype != KILN_GRAPH_DTYPE_BOOL ||
      f->dtype != KILN_GRAPH_DTYPE_F32 || fill == scores) {
    return -1;
  }
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = c->shape.rank > f->shape.rank ? c->shape.rank : f->shape.rank;
  for (int32_t d = 0; d < shape.rank; ++d) {
    int32_t cd = d - (shape.rank - c->shape.rank), fd = d - (shape.rank - f->shape.rank);
    int64_t a = cd >= 0 ? c->shape.dims[cd] : 1, b = fd >= 0 ? f->shape.dims[fd] : 1;
    if (a != b && a != 1 && b != 1) return -1;
    shape.dims[d] = a > b ? a : b;
  }
  size_t count = 0;
  if (!kiln_status_is_ok(kiln_graph_shape_element_count(&shape, &count)) ||
      count > ((size_t)1 << 24)) {
    return -1;
  }
  float* values = NULL;
  if (!kiln_status_is_ok(kiln_arena_allocate_array(&graph->arena, count ? count : 1,
                                                   sizeof(float), (void**)&values))) {
    return -1;
  }
  kiln_ref_tensor_t out = {KILN_GRAPH_DTYPE_F32, shape, values, count};
  int64_t cs[KILN_GRAPH_MAX_RANK], fs[KILN_GRAPH_MAX_RANK];
  kiln_ref_broadcast_strides(&c->shape, &out.shape, cs);
  kiln_ref_broadcast_strides(&f->shape, &out.shape, fs);
  const uint32_t keep_bits = KILN_SELECT_KEEP_BITS;
  for (size_t e = 0; e < count; ++e) {
    int64_t ci = 0, fi = 0;
    size_t rest = e;
    for (int32_t d = shape.rank; d-- > 0;) {
      int64_t coord = (int64_t)(rest % (size_t)shape.dims[d]);
      rest /= (size_t)shape.dims[d];
      ci += coord * cs[d];
      fi += coord * fs[d];
    }
    bool condition = ((const uint8_t*)c->data)[ci] != 0;
    if (condition == scores_first) {
      memcpy(&values[e], &keep_bits, sizeof(float));
    } else {
      values[e] = ((const float*)f->data)[fi];
    }
  }
  int32_t id = -1;
  if (!kiln_status_is_ok(kiln_graph_add_constant(graph, NULL, KILN_GRAPH_DTYPE_F32, &shape,
                                                 values, &id))) {
    return -1;
  }
  return id;
}

static kiln_status_t kiln_set_ints(kiln_graph_t* graph, int32_t node, const char* name,
                                   const int64_t* values, size_t count) {
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.name = name;
  attr.type = KILN_GRAPH_ATTR_INTS;
  attr.ints = values;
  attr.count = count;
  return kiln_graph_node_set_attr(graph, node, &attr);
}

static bool kiln_is_op(const kiln_graph_t* graph, int32_t node, const char* op) {
  return node >= 0 && !graph->nodes[node].removed && strcmp(graph->nodes[node].op_type, op) == 0;
}

// One attention around Softmax node `s`; *fused when the graph changed.
static kiln_status_t kiln_fuse_one(kiln_graph_t* graph, int32_t s, bool* fused) {
  *fused = false;
  const kiln_graph_node_t* softmax = &graph->nodes[s];
  int32_t probs = softmax->outputs[0], x = softmax->inputs[0];
  const kiln_graph_value_t* xv = &graph->values[x];
  if (xv->dtype != KILN_GRAPH_DTYPE_F32 || xv->shape.rank < 2 || probs < 0) {
    return kiln_ok_status();
  }
  kiln_graph_shape_t scores = xv->shape;
  int64_t axis = graph->opset >= 13 ? -1 : 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(softmax, "axis", axis, &axis));
  if (axis != -1 && axis != scores.rank - 1) return kiln_ok_status();
  int32_t p2 = kiln_view_only_reader(graph, probs);
  if (!kiln_is_op(graph, p2, "MatMul") || graph->nodes[p2].inputs[0] != probs) {
    return kiln_ok_status();
  }
  // Back from the softmax: [mask], [scale], MatMul.
  int32_t removed[8], removed_count = 0, mask = -1;
  int64_t mask_kind = KILN_ATTN_MASK_NONE;
  float scale = 1.0f;
  int32_t at = x;
  int32_t producer = graph->values[at].producer;
  if (kiln_view_only_reader(graph, at) != s) return kiln_ok_status();
  if (kiln_is_op(graph, producer, "Add") || kiln_is_op(graph, producer, "Where")) {
    const kiln_graph_node_t* node = &graph->nodes[producer];
    int32_t inner = -1;
    if (strcmp(node->op_type, "Add") == 0) {
      inner = node->inputs[0];
      mask = node->inputs[1];
      const kiln_graph_value_t* a = &graph->values[inner];
      // The scores are the operand produced by the matmul chain (full shape).
      if (!kiln_graph_shape_equal(&a->shape, &scores) || a->data) {
        int32_t t = inner;
        inner = mask;
        mask = t;
      }
      mask_kind = KILN_ATTN_MASK_ADD;
    } else {
      inner = node->inputs[1];
      if (!kiln_graph_shape_equal(&graph->values[inner].shape, &scores)) inner = node->inputs[2];
      mask_kind = KILN_ATTN_MASK_SELECT;
    }
    const kiln_graph_value_t* iv = &graph->values[inner];
    if (!kiln_graph_shape_equal(&iv->shape, &scores) || iv->data ||
        kiln_view_only_reader(graph, inner) != producer) {
      return kiln_ok_status();
    }
    if (mask_kind == KILN_ATTN_MASK_SELECT) {
      mask = kiln_select_mask(graph, &graph->nodes[producer], inner);
      if (mask < 0) return kiln_ok_status();
    } else if (graph->values[mask].dtype != KILN_GRAPH_DTYPE_F32) {
      return kiln_ok_status();
    }
    removed[removed_count++] = producer;
    at = inner;
    producer = graph->values[at].producer;
  }
  if (kiln_is_op(graph, producer, "Mul") || kiln_is_op(graph, producer, "Div")) {
    const kiln_graph_node_t* node = &graph->nodes[producer];
    int c = kiln_view_scalar_input(graph, node);
    if (c < 0 || (strcmp(node->op_type, "Div") == 0 && c != 1)) return kiln_ok_status();
    float value = *(const float*)graph->values[node->inputs[c]].data;
    scale = strcmp(node->op_type, "Mul") == 0 ? value : 1.0f / value;
    at = node->inputs[1 - c];
    if (kiln_view_only_reader(graph, at) != producer) return kiln_ok_status();
    removed[removed_count++] = producer;
    producer = graph->values[at].producer;
  }
  if (!kiln_is_op(graph, producer, "MatMul") ||
      graph->nodes[producer].output_count != 1 ||
      !kiln_graph_shape_equal(&graph->values[at].shape, &scores)) {
    return kiln_ok_status();
  }
  int32_t p1 = producer;
  removed[removed_count++] = p1;
  removed[removed_count++] = s;
  int32_t rank = scores.rank;
  kiln_view_t views[6];  // Q, K, V, O, mask
  if (!kiln_view_trace_input(graph, graph->nodes[p1].inputs[0], &scale, &views[0]) ||
      !kiln_view_trace_input(graph, graph->nodes[p1].inputs[1], &scale, &views[1]) ||
      !kiln_view_trace_input(graph, graph->nodes[p2].inputs[1], NULL, &views[2])) {
    return kiln_ok_status();
  }
  int32_t out_chain[KILN_VIEW_MAX_CHAIN], out_length = 0;
  int32_t out_value = graph->nodes[p2].outputs[0];
  if (!kiln_view_trace_output(graph, out_value, out_chain, &out_length, &views[3])) {
    return kiln_ok_status();
  }
  int views_used = 4;
  if (mask >= 0) {
    if (!kiln_mask_view(graph, mask, &scores, &views[4])) return kiln_ok_status();
    views_used = 5;
  }
  // K^T -> K: swap the last two dims.
  int64_t swap[KILN_GRAPH_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) swap[d] = d;
  swap[rank - 2] = rank - 1;
  swap[rank - 1] = rank - 2;
  for (int i = 0; i < 4; ++i) {
    if (views[i].rank != rank) return kiln_ok_status();  // broadcast batch dims
  }
  if (!kiln_view_permute(&views[1], swap, (size_t)rank)) return kiln_ok_status();
  kiln_view_atom_t lists[6][KILN_VIEW_MAX_ATOMS * 2];
  int32_t counts[6];
  for (int i = 0; i < views_used; ++i) {
    for (int32_t d = 0; d < rank - 2; ++d) {
      if (views[i].dims[d] != scores.dims[d]) return kiln_ok_status();
    }
    if (!kiln_view_batch_atoms(&views[i], lists[i], &counts[i])) return kiln_ok_status();
  }
  kiln_batch_t batch;
  if (!kiln_refine_batch(lists, counts, views_used, &batch)) return kiln_ok_status();
  int64_t sq = scores.dims[rank - 2], sk = scores.dims[rank - 1];
  int64_t d = views[0].dims[rank - 1], dv = views[2].dims[rank - 1];
  int64_t rows[6], cols[6];
  for (int i = 0; i < views_used; ++i) {
    if (!kiln_view_dim_stride(&views[i], rank - 2, &rows[i]) ||
        !kiln_view_dim_stride(&views[i], rank - 1, &cols[i])) {
      return kiln_ok_status();
    }
    if (i < 4 && views[i].dims[rank - 1] > 1 && cols[i] != 1) return kiln_ok_status();
  }
  if (views[1].dims[rank - 1] != d || views[1].dims[rank - 2] != sk ||
      views[2].dims[rank - 2] != sk || views[3].dims[rank - 1] != dv ||
      views[3].offset != 0) {
    return kiln_ok_status();
  }
  if (mask >= 0 && kiln_mask_is_causal(graph, mask, mask_kind, sq, sk)) {
    bool broadcast_batch = true;
    for (int32_t i = 0; i < batch.count; ++i) {
      if (batch.strides[4][i] != 0) broadcast_batch = false;
    }
    if (broadcast_batch) mask = -1;
  }
  // Rewrite the second MatMul in place (its position keeps the order).
  int64_t dims[6] = {batch.sizes[0], batch.sizes[1], sq, sk, d, dv};
  int64_t q[4] = {views[0].offset, batch.strides[0][0], batch.strides[0][1], rows[0]};
  int64_t k[4] = {views[1].offset, batch.strides[1][0], batch.strides[1][1], rows[1]};
  int64_t v[4] = {views[2].offset, batch.strides[2][0], batch.strides[2][1], rows[2]};
  int64_t o[4] = {0, batch.strides[3][0], batch.strides[3][1], rows[3]};
  int64_t m[4] = {batch.strides[4][0], batch.strides[4][1], rows[4], cols[4]};
  int32_t final_value = out_length ? graph->nodes[out_chain[out_length - 1]].outputs[0]
                                   : out_value;
  kiln_graph_shape_t out_shape = graph->values[final_value].shape;
  kiln_graph_node_t* node = &graph->nodes[p2];
  node->op_type = KILN_ATTENTION_OP;
  node->input_count = 0;
  node->attr_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, p2, views[0].root));
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, p2, views[1].root));
  KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, p2, views[2].root));
  if (mask >= 0) KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(graph, p2, mask));
  KILN_RETURN_IF_ERROR(kiln_set_ints(graph, p2, "kiln.dims", dims, 6));
  KILN_RETURN_IF_ERROR(kiln_set_ints(graph, p2, "kiln.q_view", q, 4));
  KILN_RETURN_IF_ERROR(kiln_set_ints(graph, p2, "kiln.k_view", k, 4));
  KILN_RETURN_IF_ERROR(kiln_set_ints(graph, p2, "kiln.v_view", v, 4));
  KILN_RETURN_IF_ERROR(kiln_set_ints(graph, p2, "kiln.out_view", o, 4));
  KILN_RETURN_IF_ERROR(kiln_set_ints(graph, p2, "kiln.out_shape", out_shape.dims,
                                     (size_t)out_shape.rank));
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  attr.type = KILN_GRAPH_ATTR_INT;
  if (mask >= 0) {
    KILN_RETURN_IF_ERROR(kiln_set_ints(graph, p2, "kiln.mask_view", m, 4));
    attr.name = "kiln.mask";
    attr.i = mask_kind;
    KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, p2, &attr));
  } else if (mask_kind != KILN_ATTN_MASK_NONE) {
    attr.name = "kiln.causal";
    attr.i = 1;
    KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, p2, &attr));
  }
  attr.name = "kiln.scale";
  attr.type = KILN_GRAPH_ATTR_FLOAT;
  attr.f = scale;
  KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(graph, p2, &attr));
  node = &graph->nodes[p2];
  if (out_length) {
    node->outputs[0] = final_value;
    graph->values[final_value].producer = p2;
    graph->values[out_value].producer = -1;
    for (int32_t c = 0; c < out_length; ++c) graph->nodes[out_chain[c]].removed = true;
  }
  for (int32_t r = 0; r < removed_count; ++r) graph->nodes[removed[r]].removed = true;
  *fused = true;
  return kiln_ok_status();
}

kiln_status_t kiln_graph_fuse_attention(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    if (graph->nodes[n].removed || strcmp(graph->nodes[n].op_type, "Softmax") != 0) continue;
    bool fused = false;
    KILN_RETURN_IF_ERROR(kiln_fuse_one(graph, (int32_t)n, &fused));
  }
  return kiln_ok_status();
}
