// ArgMax / ArgMin: the int64 index of the largest (smallest) value along
// `axis`; ties go to the first index, or the last with select_last_index.
// NaN counts as larger than everything (numpy's rule), so the first NaN
// wins.
#include <math.h>
#include <string.h>

#include "ops.h"

static kiln_status_t kiln_infer_arg(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  int64_t axis_attr = 0, keepdims = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "keepdims", 1, &keepdims));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_op_axis(args, axis_attr, x->shape.rank, &axis));
  if (x->shape.dims[axis] == 0) return kiln_op_invalid(args, "an empty axis has no arg");
  kiln_graph_shape_t shape = x->shape;
  if (keepdims) {
    shape.dims[axis] = 1;
  } else {
    for (int32_t d = axis; d + 1 < shape.rank; ++d) shape.dims[d] = shape.dims[d + 1];
    --shape.rank;
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I64, &shape);
}

// Whether v replaces the current best b (`min` flips the order).
static bool kiln_arg_better(float v, float b, bool min, bool last) {
  if (isnan(b)) return false;
  if (isnan(v)) return true;
  if (last) return min ? v <= b : v >= b;
  return min ? v < b : v > b;
}

static kiln_status_t kiln_run_arg(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t axis_attr = 0, last = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "select_last_index", 0, &last));
  int32_t rank = x->shape.rank;
  int32_t axis = (int32_t)(axis_attr < 0 ? axis_attr + rank : axis_attr);
  bool min = strcmp(args->node->op_type, "ArgMin") == 0;
  size_t size = (size_t)x->shape.dims[axis], inner = 1, outer = 1;
  for (int32_t d = axis + 1; d < rank; ++d) inner *= (size_t)x->shape.dims[d];
  for (int32_t d = 0; d < axis; ++d) outer *= (size_t)x->shape.dims[d];
  const float* px = (const float*)x->data;
  int64_t* y = (int64_t*)args->outputs[0].data;
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      const float* row = px + o * size * inner + i;
      size_t best = 0;
      for (size_t r = 1; r < size; ++r) {
        if (kiln_arg_better(row[r * inner], row[best * inner], min, last != 0)) best = r;
      }
      y[o * inner + i] = (int64_t)best;
    }
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_arg[] = {
    {"ArgMax", "axis,keepdims,select_last_index", 1, 1, 1, 1, kiln_infer_arg, kiln_run_arg, 11},
    {"ArgMin", "axis,keepdims,select_last_index", 1, 1, 1, 1, kiln_infer_arg, kiln_run_arg, 11},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
