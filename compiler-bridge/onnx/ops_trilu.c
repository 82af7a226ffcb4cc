// Trilu (torch.triu / torch.tril): keeps the upper (or lower) triangle of
// the last two dims from diagonal k, zeroes the rest. Typically evaluated
// on constants (causal masks built in forward) and folded away.
#include <string.h>

#include "ops.h"

static kiln_status_t kiln_infer_trilu(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  if (x->shape.rank < 2) return kiln_op_invalid(args, "input rank must be at least 2");
  if (kiln_op_input(args, 1)) {
    int64_t k = 0;
    size_t count = 0;
    KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, &k, 1, &count));
    if (count != 1) return kiln_op_invalid(args, "k must hold one value");
  }
  return kiln_op_set_output(args, 0, x->dtype, &x->shape);
}

static kiln_status_t kiln_run_trilu(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t upper = 1, k = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "upper", 1, &upper));
  if (args->input_count > 1 && args->inputs[1].data) k = kiln_ref_index_at(&args->inputs[1], 0);
  int64_t rows = x->shape.dims[x->shape.rank - 2], cols = x->shape.dims[x->shape.rank - 1];
  size_t elem = kiln_graph_dtype_size(x->dtype);
  const uint8_t* src = (const uint8_t*)x->data;
  uint8_t* dst = (uint8_t*)args->outputs[0].data;
  for (size_t i = 0; i < x->count; ++i) {
    int64_t col = (int64_t)(i % (size_t)cols), row = (int64_t)(i / (size_t)cols % (size_t)rows);
    bool keep = upper ? col - row >= k : col - row <= k;
    if (keep) {
      memcpy(dst + i * elem, src + i * elem, elem);
    } else {
      memset(dst + i * elem, 0, elem);
    }
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_trilu[] = {
    {"Trilu", "upper", 1, 2, 1, 1, kiln_infer_trilu, kiln_run_trilu, 14},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
