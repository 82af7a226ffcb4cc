// TopK, NonZero and NonMaxSuppression: ops whose GPU form kiln lacks (TopK)
// or whose output shape depends on the data (NonZero, NonMaxSuppression).
// The emitter runs them on the host between GPU segments
// (docs/partitioning.md). A data-dependent output gets its static upper
// bound as its shape here; only the emitted module knows the real count.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static kiln_status_t kiln_infer_topk(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  int64_t axis_attr = -1, largest = 1, sorted = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", -1, &axis_attr));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "largest", 1, &largest));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "sorted", 1, &sorted));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_op_axis(args, axis_attr, x->shape.rank, &axis));
  int64_t k = 0;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, &k, 1, &count));
  if (count != 1 || k < 0 || k > x->shape.dims[axis]) {
    return kiln_op_invalid(args, "K must be one value in 0..%lld (the axis)",
                           (long long)x->shape.dims[axis]);
  }
  kiln_graph_shape_t shape = x->shape;
  shape.dims[axis] = k;
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape));
  return kiln_op_set_output(args, 1, KILN_GRAPH_DTYPE_I64, &shape);
}

// Reference: a plain selection (not the host module's sort), larger first,
// NaN largest, ties to the lower index.
static bool kiln_topk_better(float v, size_t iv, float b, size_t ib, bool largest) {
  if (isnan(v) != isnan(b)) return largest ? isnan(v) : isnan(b);
  if (!isnan(v) && v != b) return largest ? v > b : v < b;
  return iv < ib;
}

static kiln_status_t kiln_run_topk(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t axis_attr = -1, largest = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", -1, &axis_attr));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "largest", 1, &largest));
  int32_t rank = x->shape.rank;
  int32_t axis = (int32_t)(axis_attr < 0 ? axis_attr + rank : axis_attr);
  size_t n = (size_t)x->shape.dims[axis], k = (size_t)args->outputs[0].shape.dims[axis];
  size_t inner = 1, outer = 1;
  for (int32_t d = axis + 1; d < rank; ++d) inner *= (size_t)x->shape.dims[d];
  for (int32_t d = 0; d < axis; ++d) outer *= (size_t)x->shape.dims[d];
  const float* px = (const float*)x->data;
  float* values = (float*)args->outputs[0].data;
  int64_t* indices = (int64_t*)args->outputs[1].data;
  bool* taken = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc(args->allocator, n ? n : 1, (void**)&taken));
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      const float* row = px + o * n * inner + i;
      memset(taken, 0, n);
      for (size_t r = 0; r < k; ++r) {
        size_t best = n;
        for (size_t j = 0; j < n; ++j) {
          if (taken[j]) continue;
          if (best == n ||
              kiln_topk_better(row[j * inner], j, row[best * inner], best, largest != 0)) {
            best = j;
          }
        }
        taken[best] = true;
        if (values) values[(o * k + r) * inner + i] = row[best * inner];
        if (indices) indices[(o * k + r) * inner + i] = (int64_t)best;
      }
    }
  }
  kiln_allocator_free(args->allocator, taken);
  return kiln_ok_status();
}

static bool kiln_nonzero_at(const kiln_graph_value_t* x, size_t i) {
  switch (x->dtype) {
    case KILN_GRAPH_DTYPE_F32:
      return ((const float*)x->data)[i] != 0.0f;
    case KILN_GRAPH_DTYPE_I64:
      return ((const int64_t*)x->data)[i] != 0;
    case KILN_GRAPH_DTYPE_I32:
      return ((const int32_t*)x->data)[i] != 0;
    default:
      return ((const uint8_t*)x->data)[i] != 0;
  }
}

// A constant input gives the exact count (the node then folds); a run-time
// one the bound: every element nonzero.
static kiln_status_t kiln_infer_nonzero(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  if (x->shape.rank == 0) return kiln_op_unsupported(args, "a scalar input");
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&x->shape, &count));
  if (x->data) {
    size_t found = 0;
    for (size_t i = 0; i < count; ++i) found += kiln_nonzero_at(x, i);
    count = found;
  }
  kiln_graph_shape_t shape = {.rank = 2, .dims = {x->shape.rank, (int64_t)count}};
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I64, &shape);
}

// Reference: [rank][N] coordinates of the nonzero elements in row-major
// order, when there are exactly N (the output's second dim: a folded
// constant input's count).
static kiln_status_t kiln_run_nonzero(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  kiln_graph_value_t view = {.dtype = x->dtype, .data = x->data};
  size_t n = (size_t)args->outputs[0].shape.dims[1], j = 0;
  int64_t* out = (int64_t*)args->outputs[0].data;
  size_t found = 0;
  for (size_t i = 0; i < x->count; ++i) found += kiln_nonzero_at(&view, i);
  if (found != n) {
    // Only a constant input's exact count is a static shape.
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "node '%s': NonZero found %zu elements but its static shape holds "
                            "%zu; the reference executor has static shapes only (compiled "
                            "modules return the real count)",
                            args->node->name, found, n);
  }
  for (size_t i = 0; i < x->count && j < n; ++i) {
    if (!kiln_nonzero_at(&view, i)) continue;
    size_t rest = i;
    for (int32_t d = x->shape.rank; d-- > 0;) {
      out[(size_t)d * n + j] = (int64_t)(rest % (size_t)x->shape.dims[d]);
      rest /= (size_t)x->shape.dims[d];
    }
    ++j;
  }
  return kiln_ok_status();
}

// Optional scalar constant input `index` of NonMaxSuppression.
static kiln_status_t kiln_nms_scalar(const kiln_op_infer_args_t* args, size_t index,
                                     unsigned dtype_mask, const kiln_graph_value_t** out) {
  *out = kiln_op_input(args, index);
  if (!*out) return kiln_ok_status();
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, index, dtype_mask, out));
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&(*out)->shape, &count));
  if (count != 1) return kiln_op_invalid(args, "input %zu must hold one value", index);
  if (!(*out)->data) {
    return kiln_op_unsupported(args, "input %zu must be a constant (it is a parameter of the "
                                     "host op)", index);
  }
  return kiln_ok_status();
}

typedef struct kiln_nms_params_t {
  int64_t batches, spatial, classes, max_per_class;
  float iou_threshold, score_threshold;
  bool has_score_threshold, center_point_box;
} kiln_nms_params_t;

static kiln_status_t kiln_nms_params(const kiln_op_infer_args_t* args, kiln_nms_params_t* out) {
  memset(out, 0, sizeof(*out));
  const kiln_graph_value_t *boxes = NULL, *scores = NULL, *max = NULL, *iou = NULL,
                           *score = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &boxes));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_F32, &scores));
  KILN_RETURN_IF_ERROR(kiln_nms_scalar(args, 2, KILN_OP_I64, &max));
  KILN_RETURN_IF_ERROR(kiln_nms_scalar(args, 3, KILN_OP_F32, &iou));
  KILN_RETURN_IF_ERROR(kiln_nms_scalar(args, 4, KILN_OP_F32, &score));
  if (boxes->shape.rank != 3 || boxes->shape.dims[2] != 4 || scores->shape.rank != 3 ||
      scores->shape.dims[0] != boxes->shape.dims[0] ||
      scores->shape.dims[2] != boxes->shape.dims[1]) {
    return kiln_op_invalid(args, "boxes must be [B, S, 4] and scores [B, C, S]");
  }
  int64_t center = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "center_point_box", 0, &center));
  if (center != 0 && center != 1) return kiln_op_invalid(args, "center_point_box is 0 or 1");
  out->batches = boxes->shape.dims[0];
  out->spatial = boxes->shape.dims[1];
  out->classes = scores->shape.dims[1];
  int64_t max_value = max ? *(const int64_t*)max->data : 0;
  // A negative count selects nothing in onnxruntime.
  out->max_per_class = max_value < 0 ? 0 : max_value;
  out->iou_threshold = iou ? *(const float*)iou->data : 0.0f;
  out->has_score_threshold = score != NULL;
  out->score_threshold = score ? *(const float*)score->data : 0.0f;
  out->center_point_box = center != 0;
  if (out->iou_threshold < 0 || out->iou_threshold > 1) {
    return kiln_op_invalid(args, "iou_threshold %g is outside [0, 1]", out->iou_threshold);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_nms(const kiln_op_infer_args_t* args) {
  kiln_nms_params_t p;
  KILN_RETURN_IF_ERROR(kiln_nms_params(args, &p));
  int64_t per_class = p.max_per_class < p.spatial ? p.max_per_class : p.spatial;
  kiln_graph_shape_t shape = {.rank = 2, .dims = {p.batches * p.classes * per_class, 3}};
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I64, &shape);
}

static kiln_status_t kiln_run_nms(const kiln_op_run_args_t* args) {
  return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                          "node '%s': NonMaxSuppression runs at run time only (on the host), "
                          "not on constant inputs",
                          args->node->name);
}

const kiln_op_def_t kiln_ops_host[] = {
    {"TopK", "axis,largest,sorted", 2, 2, 2, 2, kiln_infer_topk, kiln_run_topk, 10},
    {"NonZero", "", 1, 1, 1, 1, kiln_infer_nonzero, kiln_run_nonzero, 9},
    {"NonMaxSuppression", "center_point_box", 2, 5, 1, 1, kiln_infer_nms, kiln_run_nms, 10},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
