// Copying ops: Transpose, Expand, Tile, Concat, Split, Slice, Gather, Pad. They
// move bytes, so every dtype works.
#include <string.h>

#include "ops.h"

#define KILN_MAX_LIST 64

static size_t kiln_elem(const kiln_ref_tensor_t* t) {
  return kiln_graph_dtype_size(t->dtype);
}

// out[i] = in[base + sum(coord[d] * strides[d])] over out's shape.
static void kiln_strided_copy(kiln_ref_tensor_t* out, const void* in,
                              int64_t base, const int64_t* strides) {
  size_t elem = kiln_elem(out);
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  int64_t offset = base;
  int32_t rank = out->shape.rank;
  uint8_t* dst = (uint8_t*)out->data;
  const uint8_t* src = (const uint8_t*)in;
  for (size_t i = 0; i < out->count; ++i) {
    memcpy(dst + i * elem, src + offset * (int64_t)elem, elem);
    for (int32_t d = rank; d-- > 0;) {
      offset += strides[d];
      if (++coords[d] < out->shape.dims[d]) break;
      offset -= strides[d] * out->shape.dims[d];
      coords[d] = 0;
    }
  }
}

// ---- Transpose -----------------------------------------------------------

static kiln_status_t kiln_transpose_perm(const kiln_graph_node_t* node,
                                         int32_t rank, int64_t* perm) {
  const int64_t* list = NULL;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(node, "perm", &list, &count));
  for (int32_t i = 0; i < rank; ++i) {
    perm[i] = list ? list[i] : rank - 1 - i;
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_transpose(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY | KILN_OP_QUANT, &x));
  const int64_t* list = NULL;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_ints(args->node, "perm", &list, &count));
  if (list && count != (size_t)x->shape.rank) {
    return kiln_op_invalid(args, "perm has %zu entries for rank %d", count,
                           (int)x->shape.rank);
  }
  int64_t perm[KILN_GRAPH_MAX_RANK];
  KILN_RETURN_IF_ERROR(kiln_transpose_perm(args->node, x->shape.rank, perm));
  bool seen[KILN_GRAPH_MAX_RANK] = {false};
  kiln_graph_shape_t shape = x->shape;
  for (int32_t i = 0; i < x->shape.rank; ++i) {
    if (perm[i] < 0 || perm[i] >= x->shape.rank || seen[perm[i]]) {
      return kiln_op_invalid(args, "perm is not a permutation");
    }
    seen[perm[i]] = true;
    shape.dims[i] = x->shape.dims[perm[i]];
  }
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

static kiln_status_t kiln_run_transpose(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t perm[KILN_GRAPH_MAX_RANK], in_strides[KILN_GRAPH_MAX_RANK];
  int64_t strides[KILN_GRAPH_MAX_RANK];
  KILN_RETURN_IF_ERROR(kiln_transpose_perm(args->node, x->shape.rank, perm));
  kiln_ref_contiguous_strides(&x->shape, in_strides);
  for (int32_t i = 0; i < x->shape.rank; ++i) strides[i] = in_strides[perm[i]];
  kiln_strided_copy(&args->outputs[0], x->data, 0, strides);
  return kiln_ok_status();
}

// ---- Expand --------------------------------------------------------------

static kiln_status_t kiln_infer_expand(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  int64_t dims[KILN_MAX_LIST];
  size_t count = 0;
  KILN_RETURN_IF_ERROR(
      kiln_op_constant_ints(args, 1, dims, KILN_GRAPH_MAX_RANK, &count));
  kiln_graph_shape_t target;
  memset(&target, 0, sizeof(target));
  target.rank = (int32_t)count;
  for (size_t i = 0; i < count; ++i) {
    if (dims[i] < 0) return kiln_op_invalid(args, "negative dim in shape");
    target.dims[i] = dims[i];
  }
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &x->shape, &target, &shape));
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

static kiln_status_t kiln_run_expand(const kiln_op_run_args_t* args) {
  int64_t strides[KILN_GRAPH_MAX_RANK];
  kiln_ref_broadcast_strides(&args->inputs[0].shape, &args->outputs[0].shape,
                             strides);
  kiln_strided_copy(&args->outputs[0], args->inputs[0].data, 0, strides);
  return kiln_ok_status();
}

// ---- Tile ----------------------------------------------------------------

// out[c] = in[c % in_dims] with out dims = in dims * repeats (a constant).
static kiln_status_t kiln_infer_tile(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  int64_t repeats[KILN_MAX_LIST];
  size_t count = 0;
  KILN_RETURN_IF_ERROR(
      kiln_op_constant_ints(args, 1, repeats, KILN_GRAPH_MAX_RANK, &count));
  if ((int32_t)count != x->shape.rank) {
    return kiln_op_invalid(args, "repeats has %zu values for rank %d", count,
                           x->shape.rank);
  }
  kiln_graph_shape_t shape = x->shape;
  for (size_t i = 0; i < count; ++i) {
    if (repeats[i] < 0) return kiln_op_invalid(args, "negative repeat");
    if (x->shape.dims[i] > 0 && repeats[i] > INT64_MAX / x->shape.dims[i]) {
      return kiln_op_invalid(args, "repeats overflow the shape");
    }
    shape.dims[i] = x->shape.dims[i] * repeats[i];
  }
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

static kiln_status_t kiln_run_tile(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* in = &args->inputs[0];
  kiln_ref_tensor_t* out = &args->outputs[0];
  size_t elem = kiln_elem(out);
  int32_t rank = out->shape.rank;
  int64_t in_strides[KILN_GRAPH_MAX_RANK];
  int64_t stride = 1;
  for (int32_t d = rank; d-- > 0;) {
    in_strides[d] = stride;
    stride *= in->shape.dims[d];
  }
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  for (size_t i = 0; i < out->count; ++i) {
    int64_t offset = 0;
    for (int32_t d = 0; d < rank; ++d) offset += coords[d] % in->shape.dims[d] * in_strides[d];
    memcpy((uint8_t*)out->data + i * elem, (const uint8_t*)in->data + offset * (int64_t)elem,
           elem);
    for (int32_t d = rank; d-- > 0;) {
      if (++coords[d] < out->shape.dims[d]) break;
      coords[d] = 0;
    }
  }
  return kiln_ok_status();
}

// ---- Concat, Split -------------------------------------------------------

static kiln_status_t kiln_infer_concat(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* first = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &first));
  if (!kiln_graph_node_find_attr(args->node, "axis")) {
    return kiln_op_invalid(args, "attribute 'axis' is required");
  }
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  int32_t axis;
  KILN_RETURN_IF_ERROR(kiln_op_axis(args, axis_attr, first->shape.rank, &axis));
  kiln_graph_shape_t shape = first->shape;
  shape.dims[axis] = 0;
  for (size_t i = 0; i < args->node->input_count; ++i) {
    const kiln_graph_value_t* v = NULL;
    KILN_RETURN_IF_ERROR(
        kiln_op_require_input(args, i, 1u << first->dtype, &v));
    if (v->shape.rank != first->shape.rank) {
      return kiln_op_invalid(args, "input %zu has rank %d, expected %d", i,
                             (int)v->shape.rank, (int)first->shape.rank);
    }
    for (int32_t d = 0; d < shape.rank; ++d) {
      if (d != axis && v->shape.dims[d] != first->shape.dims[d]) {
        return kiln_op_invalid(args, "input %zu differs in dim %d", i, (int)d);
      }
    }
    shape.dims[axis] += v->shape.dims[axis];
  }
  return kiln_op_set_output(args, 0, first->dtype, &shape);
}

static kiln_status_t kiln_run_concat(const kiln_op_run_args_t* args) {
  kiln_ref_tensor_t* out = &args->outputs[0];
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  int32_t rank = out->shape.rank;
  int32_t axis = (int32_t)(axis_attr < 0 ? axis_attr + rank : axis_attr);
  size_t elem = kiln_elem(out);
  size_t outer = 1, inner = elem;
  for (int32_t d = 0; d < axis; ++d) outer *= (size_t)out->shape.dims[d];
  for (int32_t d = axis + 1; d < rank; ++d) inner *= (size_t)out->shape.dims[d];
  size_t out_row = (size_t)out->shape.dims[axis] * inner;
  size_t column = 0;
  for (size_t i = 0; i < args->input_count; ++i) {
    const kiln_ref_tensor_t* in = &args->inputs[i];
    size_t row = (size_t)in->shape.dims[axis] * inner;
    for (size_t o = 0; o < outer && row; ++o) {
      memcpy((uint8_t*)out->data + o * out_row + column,
             (const uint8_t*)in->data + o * row, row);
    }
    column += row;
  }
  return kiln_ok_status();
}

// Split-18 `num_outputs`: ceil(dim / n) each, the last one smaller.
static kiln_status_t kiln_split_num_outputs(const kiln_op_infer_args_t* args,
                                            bool has_split, int64_t dim,
                                            int64_t* sizes) {
  int64_t n = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "num_outputs", 0, &n));
  size_t outputs = args->node->output_count;
  if (args->graph->opset < 18 || has_split || n != (int64_t)outputs) {
    return kiln_op_invalid(args, "num_outputs=%lld needs opset 18, no split "
                           "input and %zu outputs", (long long)n, outputs);
  }
  int64_t chunk = (dim + n - 1) / n;
  if (chunk * (n - 1) > dim || (dim > 0 && chunk * (n - 1) == dim)) {
    return kiln_op_invalid(args, "dim %lld cannot be split into %lld "
                           "non-empty chunks", (long long)dim, (long long)n);
  }
  for (int64_t i = 0; i < n; ++i) sizes[i] = i + 1 < n ? chunk : dim - chunk * (n - 1);
  return kiln_ok_status();
}

static kiln_status_t kiln_split_sizes(const kiln_op_infer_args_t* args,
                                      const kiln_graph_value_t* x,
                                      int32_t axis, int64_t* sizes) {
  size_t outputs = args->node->output_count;
  size_t count = 0;
  const int64_t* list = NULL;
  if (args->graph->opset >= 13) {
    if (kiln_op_input(args, 1)) {
      KILN_RETURN_IF_ERROR(
          kiln_op_constant_ints(args, 1, sizes, KILN_MAX_LIST, &count));
      list = sizes;
    }
  } else {
    KILN_RETURN_IF_ERROR(
        kiln_graph_node_attr_ints(args->node, "split", &list, &count));
    if (list && count <= KILN_MAX_LIST) {
      memcpy(sizes, list, count * sizeof(int64_t));
    }
  }
  int64_t dim = x->shape.dims[axis];
  const kiln_graph_attr_t* num_outputs =
      kiln_graph_node_find_attr(args->node, "num_outputs");
  if (num_outputs) return kiln_split_num_outputs(args, list != NULL, dim, sizes);
  if (list) {
    if (count != outputs) {
      return kiln_op_invalid(args, "split has %zu sizes for %zu outputs",
                             count, outputs);
    }
    int64_t total = 0;
    for (size_t i = 0; i < count; ++i) {
      if (sizes[i] < 0) return kiln_op_invalid(args, "negative split size");
      total += sizes[i];
    }
    if (total != dim) {
      return kiln_op_invalid(args, "split sizes sum to %lld, dim is %lld",
                             (long long)total, (long long)dim);
    }
    return kiln_ok_status();
  }
  if (dim % (int64_t)outputs) {
    return kiln_op_invalid(args, "dim %lld does not split evenly into %zu",
                           (long long)dim, outputs);
  }
  for (size_t i = 0; i < outputs; ++i) sizes[i] = dim / (int64_t)outputs;
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_split(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  int32_t axis;
  KILN_RETURN_IF_ERROR(kiln_op_axis(args, axis_attr, x->shape.rank, &axis));
  if (args->node->output_count > KILN_MAX_LIST) {
    return kiln_op_unsupported(args, "too many outputs");
  }
  int64_t sizes[KILN_MAX_LIST];
  KILN_RETURN_IF_ERROR(kiln_split_sizes(args, x, axis, sizes));
  for (size_t i = 0; i < args->node->output_count; ++i) {
    kiln_graph_shape_t shape = x->shape;
    shape.dims[axis] = sizes[i];
    KILN_RETURN_IF_ERROR(kiln_op_set_output(args, i, x->dtype, &shape));
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_run_split(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  int32_t rank = x->shape.rank;
  int32_t axis = (int32_t)(axis_attr < 0 ? axis_attr + rank : axis_attr);
  size_t elem = kiln_elem(x);
  size_t outer = 1, inner = elem;
  for (int32_t d = 0; d < axis; ++d) outer *= (size_t)x->shape.dims[d];
  for (int32_t d = axis + 1; d < rank; ++d) inner *= (size_t)x->shape.dims[d];
  size_t in_row = (size_t)x->shape.dims[axis] * inner;
  size_t column = 0;
  for (size_t i = 0; i < args->output_count; ++i) {
    kiln_ref_tensor_t* out = &args->outputs[i];
    // Sizes come from the inferred output shapes.
    size_t row = (size_t)out->shape.dims[axis] * inner;
    if (out->data) {
      for (size_t o = 0; o < outer && row; ++o) {
        memcpy((uint8_t*)out->data + o * row,
               (const uint8_t*)x->data + o * in_row + column, row);
      }
    }
    column += row;
  }
  return kiln_ok_status();
}

// ---- Slice ---------------------------------------------------------------

typedef struct kiln_slice_plan_t {
  int64_t start[KILN_GRAPH_MAX_RANK];
  int64_t step[KILN_GRAPH_MAX_RANK];
  int64_t count[KILN_GRAPH_MAX_RANK];
} kiln_slice_plan_t;

static kiln_status_t kiln_slice_plan(const kiln_op_infer_args_t* args,
                                     const kiln_graph_shape_t* shape,
                                     kiln_slice_plan_t* plan) {
  int32_t rank = shape->rank;
  for (int32_t d = 0; d < rank; ++d) {
    plan->start[d] = 0;
    plan->step[d] = 1;
    plan->count[d] = shape->dims[d];
  }
  int64_t starts[KILN_MAX_LIST], ends[KILN_MAX_LIST];
  int64_t axes[KILN_MAX_LIST], steps[KILN_MAX_LIST];
  size_t n = 0, n_ends = 0, n_axes = 0, n_steps = 0;
  KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, starts, KILN_MAX_LIST, &n));
  KILN_RETURN_IF_ERROR(
      kiln_op_constant_ints(args, 2, ends, KILN_MAX_LIST, &n_ends));
  if (n_ends != n) return kiln_op_invalid(args, "starts/ends lengths differ");
  if (kiln_op_input(args, 3)) {
    KILN_RETURN_IF_ERROR(
        kiln_op_constant_ints(args, 3, axes, KILN_MAX_LIST, &n_axes));
    if (n_axes != n) return kiln_op_invalid(args, "axes length differs");
  } else {
    for (size_t i = 0; i < n; ++i) axes[i] = (int64_t)i;
  }
  if (kiln_op_input(args, 4)) {
    KILN_RETURN_IF_ERROR(
        kiln_op_constant_ints(args, 4, steps, KILN_MAX_LIST, &n_steps));
    if (n_steps != n) return kiln_op_invalid(args, "steps length differs");
  } else {
    for (size_t i = 0; i < n; ++i) steps[i] = 1;
  }
  bool seen[KILN_GRAPH_MAX_RANK] = {false};
  for (size_t i = 0; i < n; ++i) {
    int32_t axis;
    KILN_RETURN_IF_ERROR(kiln_op_axis(args, axes[i], rank, &axis));
    if (seen[axis]) return kiln_op_invalid(args, "repeated axis %d", (int)axis);
    seen[axis] = true;
    int64_t dim = shape->dims[axis];
    int64_t step = steps[i];
    if (step == 0) return kiln_op_invalid(args, "step 0");
    int64_t start = starts[i], end = ends[i];
    // dim <= 2^32, so these additions cannot overflow.
    if (start < 0) start += dim;
    if (end < 0) end += dim;
    int64_t count;
    if (step > 0) {
      start = start < 0 ? 0 : (start > dim ? dim : start);
      end = end < 0 ? 0 : (end > dim ? dim : end);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = start < 0 ? -1 : (start > dim - 1 ? dim - 1 : start);
      end = end < -1 ? -1 : (end > dim - 1 ? dim - 1 : end);
      count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    plan->start[axis] = start;
    plan->step[axis] = step;
    plan->count[axis] = count;
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_slice(const kiln_op_infer_args_t* args) {
  KILN_RETURN_IF_ERROR(kiln_op_slice_v1(args));  // Slice-1 attributes
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  kiln_slice_plan_t plan;
  KILN_RETURN_IF_ERROR(kiln_slice_plan(args, &x->shape, &plan));
  kiln_graph_shape_t shape = x->shape;
  for (int32_t d = 0; d < shape.rank; ++d) shape.dims[d] = plan.count[d];
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

// Slice's run recomputes the plan from the (constant) run inputs.
static kiln_status_t kiln_run_slice(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  kiln_ref_tensor_t* out = &args->outputs[0];
  int32_t rank = x->shape.rank;
  int64_t start[KILN_GRAPH_MAX_RANK], step[KILN_GRAPH_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) {
    start[d] = 0;
    step[d] = 1;
  }
  size_t n = args->inputs[1].count;
  for (size_t i = 0; i < n; ++i) {
    int64_t axis = args->input_count > 3 && args->inputs[3].data
                       ? kiln_ref_index_at(&args->inputs[3], i)
                       : (int64_t)i;
    if (axis < 0) axis += rank;
    int64_t s = args->input_count > 4 && args->inputs[4].data
                    ? kiln_ref_index_at(&args->inputs[4], i)
                    : 1;
    int64_t dim = x->shape.dims[axis];
    int64_t b = kiln_ref_index_at(&args->inputs[1], i);
    if (b < 0) b += dim;
    if (s > 0) {
      b = b < 0 ? 0 : (b > dim ? dim : b);
    } else {
      b = b < 0 ? -1 : (b > dim - 1 ? dim - 1 : b);
    }
    start[axis] = b;
    step[axis] = s;
  }
  int64_t in_strides[KILN_GRAPH_MAX_RANK], strides[KILN_GRAPH_MAX_RANK];
  kiln_ref_contiguous_strides(&x->shape, in_strides);
  int64_t base = 0;
  for (int32_t d = 0; d < rank; ++d) {
    if (out->count) base += start[d] * in_strides[d];
    strides[d] = step[d] * in_strides[d];
  }
  if (out->count) kiln_strided_copy(out, x->data, base, strides);
  return kiln_ok_status();
}

// ---- Gather --------------------------------------------------------------

static kiln_status_t kiln_infer_gather(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  const kiln_graph_value_t* indices = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY | KILN_OP_QUANT, &x));
  KILN_RETURN_IF_ERROR(
      kiln_op_require_input(args, 1, KILN_OP_INDEX, &indices));
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  int32_t axis;
  KILN_RETURN_IF_ERROR(kiln_op_axis(args, axis_attr, x->shape.rank, &axis));
  int32_t rank = x->shape.rank - 1 + indices->shape.rank;
  if (rank > KILN_GRAPH_MAX_RANK) {
    return kiln_op_unsupported(args, "result rank %d exceeds %d", (int)rank,
                               KILN_GRAPH_MAX_RANK);
  }
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  for (int32_t d = 0; d < axis; ++d) shape.dims[shape.rank++] = x->shape.dims[d];
  for (int32_t d = 0; d < indices->shape.rank; ++d) {
    shape.dims[shape.rank++] = indices->shape.dims[d];
  }
  for (int32_t d = axis + 1; d < x->shape.rank; ++d) {
    shape.dims[shape.rank++] = x->shape.dims[d];
  }
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

static kiln_status_t kiln_run_gather(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const kiln_ref_tensor_t* indices = &args->inputs[1];
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  int32_t axis =
      (int32_t)(axis_attr < 0 ? axis_attr + x->shape.rank : axis_attr);
  size_t elem = kiln_elem(x);
  size_t outer = 1, inner = elem;
  for (int32_t d = 0; d < axis; ++d) outer *= (size_t)x->shape.dims[d];
  for (int32_t d = axis + 1; d < x->shape.rank; ++d) {
    inner *= (size_t)x->shape.dims[d];
  }
  int64_t dim = x->shape.dims[axis];
  uint8_t* dst = (uint8_t*)args->outputs[0].data;
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < indices->count; ++i) {
      int64_t index = kiln_ref_index_at(indices, i);
      if (index < 0) index += dim;
      if (index < 0 || index >= dim) {
        return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "node '%s' (Gather): index %lld out of range "
                                "for dim %lld",
                                args->node->name,
                                (long long)kiln_ref_index_at(indices, i),
                                (long long)dim);
      }
      memcpy(dst, (const uint8_t*)x->data + (o * (size_t)dim + (size_t)index) * inner,
             inner);
      dst += inner;
    }
  }
  return kiln_ok_status();
}

// ---- Pad -----------------------------------------------------------------

static kiln_status_t kiln_infer_pad(const kiln_op_infer_args_t* args) {
  KILN_RETURN_IF_ERROR(kiln_op_pad_v2(args));  // Pad-2 attributes
  KILN_RETURN_IF_ERROR(kiln_op_expand_pad_axes(args));  // Pad-18
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_NUMERIC, &x));
  static const char* const kModes[] = {"constant", "reflect", "edge", NULL};
  const char* mode = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_op_attr_choice(args, "mode", "constant", kModes, &mode));
  int64_t pads[KILN_MAX_LIST];
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, pads, KILN_MAX_LIST, &count));
  int32_t rank = x->shape.rank;
  if (count != (size_t)rank * 2) {
    return kiln_op_invalid(args, "pads has %zu values for rank %d", count,
                           (int)rank);
  }
  if (kiln_op_input(args, 2)) {
    const kiln_graph_value_t* value = NULL;
    KILN_RETURN_IF_ERROR(
        kiln_op_require_input(args, 2, 1u << x->dtype, &value));
  }
  kiln_graph_shape_t shape = x->shape;
  for (int32_t d = 0; d < rank; ++d) {
    shape.dims[d] = x->shape.dims[d] + pads[d] + pads[d + rank];
    if (shape.dims[d] < 0) return kiln_op_invalid(args, "negative result dim");
    if (strcmp(mode, "constant") != 0 && x->shape.dims[d] == 0 &&
        shape.dims[d] > 0) {
      return kiln_op_invalid(args, "cannot %s-pad an empty dim", mode);
    }
    if (strcmp(mode, "reflect") == 0 &&
        (pads[d] >= x->shape.dims[d] || pads[d + rank] >= x->shape.dims[d]) &&
        x->shape.dims[d] > 1) {
      return kiln_op_unsupported(args, "reflect pads must be smaller than the "
                                 "dim");
    }
  }
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

static kiln_status_t kiln_run_pad(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  kiln_ref_tensor_t* out = &args->outputs[0];
  const char* mode = "constant";
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(args->node, "mode", "constant", &mode));
  int32_t rank = x->shape.rank;
  int64_t begin[KILN_GRAPH_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) {
    begin[d] = kiln_ref_index_at(&args->inputs[1], (size_t)d);
  }
  size_t elem = kiln_elem(x);
  uint8_t fill[8] = {0};
  if (args->input_count > 2 && args->inputs[2].data) {
    memcpy(fill, args->inputs[2].data, elem);
  }
  int64_t in_strides[KILN_GRAPH_MAX_RANK];
  kiln_ref_contiguous_strides(&x->shape, in_strides);
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  bool reflect = strcmp(mode, "reflect") == 0;
  bool edge = strcmp(mode, "edge") == 0;
  for (size_t i = 0; i < out->count; ++i) {
    int64_t offset = 0;
    bool inside = true;
    for (int32_t d = 0; d < rank; ++d) {
      int64_t c = coords[d] - begin[d];
      int64_t dim = x->shape.dims[d];
      if (c < 0 || c >= dim) {
        if (edge) {
          c = c < 0 ? 0 : dim - 1;
        } else if (reflect) {
          if (dim == 1) {
            c = 0;
          } else {
            int64_t period = 2 * (dim - 1);
            c = c % period;
            if (c < 0) c += period;
            if (c >= dim) c = period - c;
          }
        } else {
          inside = false;
          break;
        }
      }
      offset += c * in_strides[d];
    }
    uint8_t* dst = (uint8_t*)out->data + i * elem;
    if (inside) {
      memcpy(dst, (const uint8_t*)x->data + offset * (int64_t)elem, elem);
    } else {
      memcpy(dst, fill, elem);
    }
    for (int32_t d = rank; d-- > 0;) {
      if (++coords[d] < out->shape.dims[d]) break;
      coords[d] = 0;
    }
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_copy[] = {
    {"Transpose", "perm", 1, 1, 1, 1, kiln_infer_transpose,
     kiln_run_transpose},
    {"Expand", "", 2, 2, 1, 1, kiln_infer_expand, kiln_run_expand},
    {"Tile", "", 2, 2, 1, 1, kiln_infer_tile, kiln_run_tile},
    {"Concat", "axis", 1, 64, 1, 1, kiln_infer_concat, kiln_run_concat},
    {"Split", "axis,num_outputs,split", 1, 2, 1, 64, kiln_infer_split, kiln_run_split, 2},
    {"Slice", "axes,ends,starts", 1, 5, 1, 1, kiln_infer_slice, kiln_run_slice},
    {"Gather", "axis", 2, 2, 1, 1, kiln_infer_gather, kiln_run_gather},
    {"Pad", "mode,pads,value", 1, 4, 1, 1, kiln_infer_pad, kiln_run_pad, 2},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
