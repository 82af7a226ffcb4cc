// Strided views through view ops (attention_views.h).
#include <string.h>

#include "attention_views.h"

// False for values without a known, non-empty shape.
bool kiln_view_identity(const kiln_graph_t* graph, int32_t value, kiln_view_t* v) {
  const kiln_graph_shape_t* shape = &graph->values[value].shape;
  memset(v, 0, sizeof(*v));
  if (!graph->values[value].has_shape) return false;
  for (int32_t d = 0; d < shape->rank; ++d) {
    if (shape->dims[d] < 1) return false;
  }
  v->root = value;
  v->rank = shape->rank;
  int64_t stride = 1;
  for (int32_t d = shape->rank; d-- > 0;) {
    v->dims[d] = shape->dims[d];
    stride *= shape->dims[d];
  }
  for (int32_t d = 0; d < shape->rank; ++d) {
    stride /= shape->dims[d];
    if (shape->dims[d] == 1) continue;
    v->atoms[v->atom_count].size = shape->dims[d];
    v->atoms[v->atom_count].stride = stride;
    v->atom_count++;
    v->dim_atoms[d] = 1;
  }
  return true;
}

// Regroups the atoms into `shape`'s dims, splitting an atom where a dim
// boundary falls inside it; false when the sizes do not factor.
bool kiln_view_reshape(kiln_view_t* v, const kiln_graph_shape_t* shape) {
  kiln_view_atom_t atoms[KILN_VIEW_MAX_ATOMS];
  int32_t count = 0, next = 0;
  kiln_view_atom_t front = {1, 0};
  bool have_front = false;
  kiln_view_t out = *v;
  out.rank = shape->rank;
  for (int32_t d = 0; d < shape->rank; ++d) {
    int64_t need = shape->dims[d];
    out.dims[d] = need;
    out.dim_atoms[d] = 0;
    while (need > 1) {
      if (!have_front) {
        if (next >= v->atom_count) return false;
        front = v->atoms[next++];
        have_front = true;
      }
      if (count >= KILN_VIEW_MAX_ATOMS) return false;
      if (front.size <= need) {
        if (need % front.size) return false;
        atoms[count++] = front;
        need /= front.size;
        have_front = false;
      } else {
        if (front.size % need) return false;
        int64_t inner = front.size / need;
        atoms[count].size = need;
        atoms[count++].stride = front.stride * inner;
        front.size = inner;
        need = 1;
      }
      out.dim_atoms[d]++;
    }
  }
  if (have_front || next != v->atom_count) return false;
  memcpy(out.atoms, atoms, sizeof(atoms));
  out.atom_count = count;
  *v = out;
  return true;
}

// New dim d is old dim perm[d].
bool kiln_view_permute(kiln_view_t* v, const int64_t* perm, size_t count) {
  if ((int32_t)count != v->rank) return false;
  kiln_view_t out = *v;
  out.atom_count = 0;
  int32_t first[KILN_GRAPH_MAX_RANK];
  int32_t at = 0;
  for (int32_t d = 0; d < v->rank; ++d) {
    first[d] = at;
    at += v->dim_atoms[d];
  }
  for (int32_t d = 0; d < v->rank; ++d) {
    int64_t p = perm[d];
    if (p < 0 || p >= v->rank) return false;
    out.dims[d] = v->dims[p];
    out.dim_atoms[d] = v->dim_atoms[p];
    for (int32_t a = 0; a < v->dim_atoms[p]; ++a) {
      out.atoms[out.atom_count++] = v->atoms[first[p] + a];
    }
  }
  *v = out;
  return true;
}

// The first atom index of dim `d`.
int32_t kiln_view_first_atom(const kiln_view_t* v, int32_t d) {
  int32_t at = 0;
  for (int32_t i = 0; i < d; ++i) at += v->dim_atoms[i];
  return at;
}

// One (stride) per dim, or false when a dim is not a single atom.
bool kiln_view_dim_stride(const kiln_view_t* v, int32_t d, int64_t* out) {
  if (v->dim_atoms[d] == 0) {
    *out = 0;
    return true;
  }
  if (v->dim_atoms[d] != 1) return false;
  *out = v->atoms[kiln_view_first_atom(v, d)].stride;
  return true;
}

static bool kiln_const_ints(const kiln_graph_t* graph, const kiln_graph_node_t* node,
                            size_t index, int64_t* out, size_t capacity, size_t* count) {
  if (index >= node->input_count || node->inputs[index] < 0) return false;
  const kiln_graph_value_t* v = &graph->values[node->inputs[index]];
  if (!v->data || v->shape.rank > 1) return false;
  size_t n = v->shape.rank ? (size_t)v->shape.dims[0] : 1;
  if (n > capacity) return false;
  for (size_t i = 0; i < n; ++i) {
    if (v->dtype == KILN_GRAPH_DTYPE_I64) {
      out[i] = ((const int64_t*)v->data)[i];
    } else if (v->dtype == KILN_GRAPH_DTYPE_I32) {
      out[i] = ((const int32_t*)v->data)[i];
    } else {
      return false;
    }
  }
  *count = n;
  return true;
}

// Elements [start, start + length) of dim `axis`, which must be one atom
// (or size 1).
static bool kiln_view_slice_axis(kiln_view_t* v, int32_t axis, int64_t start, int64_t length) {
  if (axis < 0 || axis >= v->rank || start < 0 || start + length > v->dims[axis]) return false;
  int64_t stride = 0;
  if (!kiln_view_dim_stride(v, axis, &stride)) return false;
  v->offset += start * stride;
  v->dims[axis] = length;
  int32_t at = kiln_view_first_atom(v, axis);
  if (v->dim_atoms[axis] == 1) {
    if (length > 1) {
      v->atoms[at].size = length;
    } else {
      memmove(&v->atoms[at], &v->atoms[at + 1],
              (size_t)(v->atom_count - at - 1) * sizeof(v->atoms[0]));
      v->atom_count--;
      v->dim_atoms[axis] = 0;
    }
  } else if (length != 1) {
    return false;
  }
  return true;
}

// Split output `value`: the slice of the input along the split axis.
static bool kiln_view_split(const kiln_graph_t* graph, const kiln_graph_node_t* node,
                            int32_t value, kiln_view_t* v) {
  int64_t axis = 0;
  kiln_status_t status = kiln_graph_node_attr_int(node, "axis", 0, &axis);
  if (!kiln_status_is_ok(status)) {
    kiln_status_ignore(status);
    return false;
  }
  if (axis < 0) axis += v->rank;
  int64_t start = 0;
  for (size_t o = 0; o < node->output_count; ++o) {
    if (node->outputs[o] < 0) return false;
    const kiln_graph_shape_t* shape = &graph->values[node->outputs[o]].shape;
    if (axis < 0 || axis >= shape->rank) return false;
    if (node->outputs[o] == value) {
      return kiln_view_slice_axis(v, (int32_t)axis, start, shape->dims[axis]);
    }
    start += shape->dims[axis];
  }
  return false;
}

// Slice (opset 10+ inputs) on dims that are one atom (or size 1).
static bool kiln_view_slice(const kiln_graph_t* graph, const kiln_graph_node_t* node,
                            kiln_view_t* v) {
  int64_t starts[KILN_GRAPH_MAX_RANK], ends[KILN_GRAPH_MAX_RANK];
  int64_t axes[KILN_GRAPH_MAX_RANK], steps[KILN_GRAPH_MAX_RANK];
  size_t n = 0, m = 0;
  if (node->input_count < 3 || !kiln_const_ints(graph, node, 1, starts, 8, &n) ||
      !kiln_const_ints(graph, node, 2, ends, 8, &m) || m != n) {
    return false;
  }
  for (size_t i = 0; i < n; ++i) axes[i] = (int64_t)i, steps[i] = 1;
  if (node->input_count > 3 && node->inputs[3] >= 0 &&
      (!kiln_const_ints(graph, node, 3, axes, 8, &m) || m != n)) {
    return false;
  }
  if (node->input_count > 4 && node->inputs[4] >= 0 &&
      (!kiln_const_ints(graph, node, 4, steps, 8, &m) || m != n)) {
    return false;
  }
  const kiln_graph_shape_t* out_shape = &graph->values[node->outputs[0]].shape;
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + v->rank : axes[i];
    if (axis < 0 || axis >= v->rank || steps[i] != 1) return false;
    int64_t size = v->dims[axis], start = starts[i];
    if (start < 0) start += size;
    if (start < 0) start = 0;
    if (start > size) start = size;
    if (!kiln_view_slice_axis(v, (int32_t)axis, start, out_shape->dims[axis])) return false;
  }
  return true;
}

// Gather with one constant index (a scalar, or a [1] tensor) along an axis
// that is one atom: a slice of length 1, its dim then dropped or kept as the
// output's shape says.
static bool kiln_view_gather(const kiln_graph_t* graph, const kiln_graph_node_t* node,
                             int32_t value, kiln_view_t* v) {
  int64_t index = 0, axis = 0;
  size_t count = 0;
  if (node->input_count != 2 || !kiln_const_ints(graph, node, 1, &index, 1, &count) ||
      count != 1) {
    return false;
  }
  kiln_status_t status = kiln_graph_node_attr_int(node, "axis", 0, &axis);
  if (!kiln_status_is_ok(status)) {
    kiln_status_ignore(status);
    return false;
  }
  if (axis < 0) axis += v->rank;
  if (axis < 0 || axis >= v->rank) return false;
  if (index < 0) index += v->dims[axis];
  return index >= 0 && index < v->dims[axis] &&
         kiln_view_slice_axis(v, (int32_t)axis, index, 1) &&
         kiln_view_reshape(v, &graph->values[value].shape);
}

static bool kiln_is_reshape_op(const char* op) {
  return strcmp(op, "Reshape") == 0 || strcmp(op, "Squeeze") == 0 ||
         strcmp(op, "Unsqueeze") == 0 || strcmp(op, "Flatten") == 0 ||
         strcmp(op, "Identity") == 0;
}

// The scalar f32 constant among a binary node's inputs: its index, or -1.
int kiln_view_scalar_input(const kiln_graph_t* graph, const kiln_graph_node_t* node) {
  if (node->input_count != 2) return -1;
  for (int i = 0; i < 2; ++i) {
    const kiln_graph_value_t* v = &graph->values[node->inputs[i]];
    size_t count = 0;
    if (v->data && v->dtype == KILN_GRAPH_DTYPE_F32 &&
        kiln_status_is_ok(kiln_graph_shape_element_count(&v->shape, &count)) && count == 1) {
      return i;
    }
  }
  return -1;
}

// Traces `value` back through view ops (and, with `scale`, scalar Mul/Div)
// to the value the kernel reads; tries shorter chains when a step does not
// map onto strides.
bool kiln_view_trace_input(const kiln_graph_t* graph, int32_t value, float* scale,
                             kiln_view_t* out) {
  int32_t chain[KILN_VIEW_MAX_CHAIN], outputs[KILN_VIEW_MAX_CHAIN];
  int32_t length = 0, v = value;
  while (length < KILN_VIEW_MAX_CHAIN) {
    const kiln_graph_value_t* val = &graph->values[v];
    if (val->data || val->producer < 0) break;
    const kiln_graph_node_t* p = &graph->nodes[val->producer];
    if (p->removed || p->input_count < 1 || p->inputs[0] < 0) break;
    const char* op = p->op_type;
    int32_t next = -1;
    if (kiln_is_reshape_op(op) || strcmp(op, "Transpose") == 0 || strcmp(op, "Slice") == 0 ||
        strcmp(op, "Split") == 0 || strcmp(op, "Gather") == 0) {
      next = p->inputs[0];
    } else if (scale && (strcmp(op, "Mul") == 0 || strcmp(op, "Div") == 0)) {
      int s = kiln_view_scalar_input(graph, p);
      if (s < 0 || (strcmp(op, "Div") == 0 && s != 1)) break;
      next = p->inputs[1 - s];
    }
    if (next < 0 || graph->values[next].dtype != KILN_GRAPH_DTYPE_F32) break;
    outputs[length] = v;
    chain[length++] = val->producer;
    v = next;
  }
  for (int32_t start = length; start >= 0; --start) {
    int32_t root = start == length ? v : outputs[start];
    float factor = 1.0f;
    bool ok = kiln_view_identity(graph, root, out);
    for (int32_t c = start - 1; c >= 0 && ok; --c) {
      const kiln_graph_node_t* p = &graph->nodes[chain[c]];
      const kiln_graph_shape_t* shape = &graph->values[outputs[c]].shape;
      if (kiln_is_reshape_op(p->op_type)) {
        ok = kiln_view_reshape(out, shape);
      } else if (strcmp(p->op_type, "Transpose") == 0) {
        int64_t perm[KILN_GRAPH_MAX_RANK];
        ok = kiln_graph_transpose_perm(p, out->rank, perm) &&
             kiln_view_permute(out, perm, (size_t)out->rank);
      } else if (strcmp(p->op_type, "Slice") == 0) {
        ok = kiln_view_slice(graph, p, out);
      } else if (strcmp(p->op_type, "Split") == 0) {
        ok = kiln_view_split(graph, p, outputs[c], out);
      } else if (strcmp(p->op_type, "Gather") == 0) {
        ok = kiln_view_gather(graph, p, outputs[c], out);
      } else {
        // A scalar Mul/Div: the scale, and the broadcast output's shape
        // (a [1, 1] scalar can add leading dims).
        int s = kiln_view_scalar_input(graph, p);
        float c0 = *(const float*)graph->values[p->inputs[s]].data;
        factor = strcmp(p->op_type, "Mul") == 0 ? factor * c0 : factor / c0;
        ok = kiln_view_reshape(out, shape);
      }
    }
    if (ok) {
      if (scale) *scale *= factor;
      return true;
    }
  }
  return false;
}

// The node reading `value` when it is exactly one node and no graph
// output; -1 otherwise.
int32_t kiln_view_only_reader(const kiln_graph_t* graph, int32_t value) {
  if (graph->values[value].is_output) return -1;
  int32_t reader = -1;
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] != value) continue;
      if (reader >= 0) return -1;
      reader = (int32_t)n;
    }
  }
  return reader;
}

// Follows the attention output forward through head-merge view ops; the
// view of the output (rank of `value`) inside the final value.
bool kiln_view_trace_output(kiln_graph_t* graph, int32_t value, int32_t* chain,
                              int32_t* out_length, kiln_view_t* out) {
  int32_t length = 0, v = value;
  while (length < KILN_VIEW_MAX_CHAIN) {
    int32_t r = kiln_view_only_reader(graph, v);
    if (r < 0) break;
    const kiln_graph_node_t* node = &graph->nodes[r];
    if ((!kiln_is_reshape_op(node->op_type) && strcmp(node->op_type, "Transpose") != 0) ||
        node->inputs[0] != v || node->output_count != 1 || node->outputs[0] < 0) {
      break;
    }
    chain[length++] = r;
    v = node->outputs[0];
  }
  for (; length >= 0; --length) {
    int32_t last = length ? graph->nodes[chain[length - 1]].outputs[0] : value;
    bool ok = kiln_view_identity(graph, last, out);
    for (int32_t c = length - 1; c >= 0 && ok; --c) {
      const kiln_graph_node_t* node = &graph->nodes[chain[c]];
      const kiln_graph_shape_t* in_shape = &graph->values[node->inputs[0]].shape;
      if (strcmp(node->op_type, "Transpose") == 0) {
        int64_t perm[KILN_GRAPH_MAX_RANK], inverse[KILN_GRAPH_MAX_RANK];
        ok = kiln_graph_transpose_perm(node, in_shape->rank, perm);
        for (int32_t d = 0; ok && d < in_shape->rank; ++d) {
          if (perm[d] < 0 || perm[d] >= in_shape->rank) ok = false;
          else inverse[perm[d]] = d;
        }
        ok = ok && kiln_view_permute(out, inverse, (size_t)in_shape->rank);
      } else {
        ok = kiln_view_reshape(out, in_shape);
      }
    }
    if (ok) {
      *out_length = length;
      return true;
    }
  }
  return false;
}

