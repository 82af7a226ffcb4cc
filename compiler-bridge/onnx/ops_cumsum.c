// CumSum: what exporters emit for positions counted from a mask (OPT's and
// BLOOM's position ids and ALiBi from an all-ones attention mask, EdgeNeXt's
// positional embedding). On constants it folds; reference only, so a
// run-time CumSum has no GPU lowering and is refused.
#include <string.h>

#include "ops.h"

static kiln_status_t kiln_infer_cumsum(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_NUMERIC, &x));
  int64_t axis = 0;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, &axis, 1, &count));
  if (count != 1) return kiln_op_invalid(args, "axis must hold one value");
  int32_t normalized = 0;
  KILN_RETURN_IF_ERROR(kiln_op_axis(args, axis, x->shape.rank, &normalized));
  return kiln_op_set_output(args, 0, x->dtype, &x->shape);
}

// Sums along the axis in the direction `reverse` gives; `exclusive` leaves
// each element out of its own sum. Integers wrap (two's complement), as
// the operator's integer types do.
static kiln_status_t kiln_run_cumsum(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t exclusive = 0, reverse = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "exclusive", 0, &exclusive));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "reverse", 0, &reverse));
  int64_t axis = kiln_ref_index_at(&args->inputs[1], 0);
  if (axis < 0) axis += x->shape.rank;
  size_t outer = 1, inner = 1;
  for (int32_t d = 0; d < (int32_t)axis; ++d) outer *= (size_t)x->shape.dims[d];
  for (int32_t d = (int32_t)axis + 1; d < x->shape.rank; ++d) inner *= (size_t)x->shape.dims[d];
  const size_t length = (size_t)x->shape.dims[axis];
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      double fsum = 0.0;
      uint64_t isum = 0;
      for (size_t step = 0; step < length; ++step) {
        const size_t j = reverse ? length - 1 - step : step;
        const size_t at = (o * length + j) * inner + i;
        switch (x->dtype) {
          case KILN_GRAPH_DTYPE_F32: {
            const float v = ((const float*)x->data)[at];
            if (!exclusive) fsum += v;
            ((float*)args->outputs[0].data)[at] = (float)fsum;
            if (exclusive) fsum += v;
            break;
          }
          case KILN_GRAPH_DTYPE_I64: {
            const uint64_t v = (uint64_t)((const int64_t*)x->data)[at];
            if (!exclusive) isum += v;
            ((int64_t*)args->outputs[0].data)[at] = (int64_t)isum;
            if (exclusive) isum += v;
            break;
          }
          default: {  // int32 (the checker allows numeric types only)
            const uint32_t v = (uint32_t)((const int32_t*)x->data)[at];
            if (!exclusive) isum += v;
            ((int32_t*)args->outputs[0].data)[at] = (int32_t)(uint32_t)isum;
            if (exclusive) isum += v;
            break;
          }
        }
      }
    }
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_cumsum[] = {
    {"CumSum", "exclusive,reverse", 2, 2, 1, 1, kiln_infer_cumsum, kiln_run_cumsum, 11},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
