// ReduceMean, ReduceSum, ReduceMax, ReduceMin, ReduceProd, ReduceL1,
// ReduceL2, ReduceLogSum, ReduceLogSumExp, ReduceSumSquare (axes as
// attribute, or as an input for ReduceSum from opset 13 and for all of them
// from opset 18; keepdims; noop_with_empty_axes).
#include <float.h>
#include <math.h>
#include <string.h>

#include "ops.h"

typedef struct kiln_reduce_plan_t {
  bool reduced[KILN_GRAPH_MAX_RANK];
  bool noop;
  bool keepdims;
} kiln_reduce_plan_t;

static bool kiln_axes_from_input(const kiln_graph_node_t* node, int64_t opset) {
  return opset >= 18 || (strcmp(node->op_type, "ReduceSum") == 0 && opset >= 13);
}

static kiln_status_t kiln_reduce_plan(const kiln_op_infer_args_t* args,
                                      const kiln_graph_value_t* x,
                                      kiln_reduce_plan_t* plan) {
  memset(plan, 0, sizeof(*plan));
  int64_t keepdims = 1, noop = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "keepdims", 1, &keepdims));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(
      args->node, "noop_with_empty_axes", 0, &noop));
  plan->keepdims = keepdims != 0;
  int64_t axes[64];
  size_t count = 0;
  if (kiln_axes_from_input(args->node, args->graph->opset)) {
    if (kiln_graph_node_find_attr(args->node, "axes")) {
      return kiln_op_invalid(args, "the axes attribute is an input from "
                             "opset %d on", args->graph->opset >= 18 ? 18 : 13);
    }
    if (kiln_op_input(args, 1)) {
      KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, axes, 64, &count));
    }
  } else {
    if (kiln_op_input(args, 1)) {
      return kiln_op_unsupported(args, "axes as an input needs ReduceSum at "
                                 "opset 13+ (or opset 18)");
    }
    const int64_t* list = NULL;
    KILN_RETURN_IF_ERROR(
        kiln_graph_node_attr_ints(args->node, "axes", &list, &count));
    if (count > 64) return kiln_op_invalid(args, "too many axes");
    if (count) memcpy(axes, list, count * sizeof(int64_t));
  }
  if (count == 0) {
    // The sum family's empty-axes no-op is read two ways (the input as is,
    // or each value transformed alone): refused rather than guessed.
    const char* op = args->node->op_type;
    if (noop && strcmp(op, "ReduceSum") != 0 && strcmp(op, "ReduceMean") != 0 &&
        strcmp(op, "ReduceMax") != 0 && strcmp(op, "ReduceMin") != 0 &&
        strcmp(op, "ReduceProd") != 0) {
      return kiln_op_unsupported(args, "noop_with_empty_axes=1 with empty axes "
                                 "is not supported for %s", op);
    }
    plan->noop = noop != 0;
    for (int32_t d = 0; d < x->shape.rank; ++d) plan->reduced[d] = !plan->noop;
    return kiln_ok_status();
  }
  for (size_t i = 0; i < count; ++i) {
    int32_t axis;
    KILN_RETURN_IF_ERROR(kiln_op_axis(args, axes[i], x->shape.rank, &axis));
    plan->reduced[axis] = true;
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_reduce(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  // int64 for shape arithmetic (numel as ReduceProd of a Shape): Sum, Max,
  // Min and Prod; the others float32 only.
  const char* op = args->node->op_type;
  bool int_op = strcmp(op, "ReduceSum") == 0 || strcmp(op, "ReduceMax") == 0 ||
                strcmp(op, "ReduceMin") == 0 || strcmp(op, "ReduceProd") == 0;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(
      args, 0, int_op ? (KILN_OP_F32 | KILN_OP_I64) : KILN_OP_F32, &x));
  kiln_reduce_plan_t plan;
  KILN_RETURN_IF_ERROR(kiln_reduce_plan(args, x, &plan));
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  bool is_extreme = strcmp(args->node->op_type, "ReduceMax") == 0 ||
                    strcmp(args->node->op_type, "ReduceMin") == 0;
  for (int32_t d = 0; d < x->shape.rank; ++d) {
    if (plan.reduced[d] && x->shape.dims[d] == 0 && is_extreme) {
      return kiln_op_unsupported(args, "max/min over an empty axis");
    }
    if (!plan.reduced[d]) {
      shape.dims[shape.rank++] = x->shape.dims[d];
    } else if (plan.keepdims) {
      shape.dims[shape.rank++] = 1;
    }
  }
  // The plan is kept on the node for the run: record the reduced axes.
  kiln_graph_attr_t attr;
  memset(&attr, 0, sizeof(attr));
  int64_t mask = 0;
  for (int32_t d = 0; d < x->shape.rank; ++d) {
    if (plan.reduced[d]) mask |= (int64_t)1 << d;
  }
  attr.name = "kiln.reduce_mask";
  attr.type = KILN_GRAPH_ATTR_INT;
  attr.i = mask;
  KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(
      args->graph, (int32_t)(args->node - args->graph->nodes), &attr));
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

// The integer form: exact int64 arithmetic (wrapping, as the float form's
// overflow is unspecified too).
static void kiln_run_reduce_i64(const kiln_op_run_args_t* args, char kind,
                                const int64_t* out_strides) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t* py = (int64_t*)args->outputs[0].data;
  for (size_t i = 0; i < args->outputs[0].count; ++i) {
    py[i] = kind == 'p' ? 1 : kind == 'x' ? INT64_MIN : kind == 'n' ? INT64_MAX : 0;
  }
  int32_t rank = x->shape.rank;
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  int64_t offset = 0;
  const int64_t* px = (const int64_t*)x->data;
  for (size_t i = 0; i < x->count; ++i) {
    int64_t v = px[i];
    int64_t* a = &py[offset];
    switch (kind) {
      case 'p': *a = (int64_t)((uint64_t)*a * (uint64_t)v); break;
      case 'x': if (v > *a) *a = v; break;
      case 'n': if (v < *a) *a = v; break;
      default: *a = (int64_t)((uint64_t)*a + (uint64_t)v); break;
    }
    for (int32_t d = rank; d-- > 0;) {
      offset += out_strides[d];
      if (++coords[d] < x->shape.dims[d]) break;
      offset -= out_strides[d] * x->shape.dims[d];
      coords[d] = 0;
    }
  }
}

static kiln_status_t kiln_run_reduce(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  int64_t mask = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "kiln.reduce_mask", 0, &mask));
  const char* op = args->node->op_type;
  bool is_mean = strcmp(op, "ReduceMean") == 0;
  bool is_max = strcmp(op, "ReduceMax") == 0;
  bool is_prod = strcmp(op, "ReduceProd") == 0;
  if (x->dtype == KILN_GRAPH_DTYPE_I64) {
    int64_t out_strides[KILN_GRAPH_MAX_RANK];
    int64_t stride = 1;
    for (int32_t d = x->shape.rank; d-- > 0;) {
      bool reduced = (mask & ((int64_t)1 << d)) != 0;
      out_strides[d] = reduced ? 0 : stride;
      if (!reduced) stride *= x->shape.dims[d];
    }
    char kind = is_prod ? 'p' : is_max ? 'x' : strcmp(op, "ReduceMin") == 0 ? 'n' : 's';
    kiln_run_reduce_i64(args, kind, out_strides);
    return kiln_ok_status();
  }
  // The sum family: what is summed per element, what the sum becomes.
  char pre = strcmp(op, "ReduceL1") == 0 ? 'a'
             : (strcmp(op, "ReduceL2") == 0 || strcmp(op, "ReduceSumSquare") == 0) ? 'q'
             : strcmp(op, "ReduceLogSumExp") == 0 ? 'e' : 0;
  char post = strcmp(op, "ReduceL2") == 0 ? 's'
              : (strcmp(op, "ReduceLogSum") == 0 || pre == 'e') ? 'l' : 0;
  size_t out_count = args->outputs[0].count;
  double* acc = NULL;
  double* shift = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(
      args->allocator, 2 * (out_count ? out_count : 1) * sizeof(double),
      (void**)&acc));
  shift = acc + (out_count ? out_count : 1);
  // LogSumExp sums exp(x - max) (then adds max back): no overflow.
  bool extreme = is_max || strcmp(op, "ReduceMin") == 0 || pre == 'e';
  for (size_t i = 0; i < out_count; ++i) {
    acc[i] = extreme ? (is_max || pre == 'e' ? -INFINITY : INFINITY) : is_prod ? 1.0 : 0.0;
  }
  // Output strides over the input's dims (0 on reduced dims).
  int32_t rank = x->shape.rank;
  int64_t out_strides[KILN_GRAPH_MAX_RANK];
  int64_t stride = 1;
  size_t reduced_count = 1;
  for (int32_t d = rank; d-- > 0;) {
    if (mask & ((int64_t)1 << d)) {
      out_strides[d] = 0;
      reduced_count *= (size_t)x->shape.dims[d];
    } else {
      out_strides[d] = stride;
      stride *= x->shape.dims[d];
    }
  }
  const float* px = (const float*)x->data;
  for (int pass = 0; pass < (pre == 'e' ? 2 : 1); ++pass) {
    if (pass == 1) {
      for (size_t i = 0; i < out_count; ++i) {
        shift[i] = isfinite(acc[i]) ? acc[i] : 0.0;
        // An infinite or NaN max is the result itself (post keeps it).
        acc[i] = isfinite(acc[i]) ? 0.0 : exp(acc[i]);
      }
      extreme = false;
    }
    int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
    int64_t offset = 0;
    for (size_t i = 0; i < x->count; ++i) {
      double v = px[i];
      if (pass == 1) v = exp(v - shift[offset]);
      else if (pre == 'a') v = fabs(v);
      else if (pre == 'q') v = v * v;
      if (is_prod) acc[offset] *= v;
      else if (!extreme) acc[offset] += v;
      else if (isnan(v)) acc[offset] = v;
      else if (is_max || pre == 'e' ? v > acc[offset] : v < acc[offset]) acc[offset] = v;
      for (int32_t d = rank; d-- > 0;) {
        offset += out_strides[d];
        if (++coords[d] < x->shape.dims[d]) break;
        offset -= out_strides[d] * x->shape.dims[d];
        coords[d] = 0;
      }
    }
  }
  float* py = (float*)args->outputs[0].data;
  for (size_t i = 0; i < out_count; ++i) {
    double v = acc[i];
    if (is_mean) v = reduced_count ? v / (double)reduced_count : NAN;
    if (post == 's') v = sqrt(v);
    if (post == 'l') v = log(v) + (pre == 'e' ? shift[i] : 0.0);
    py[i] = (float)v;
  }
  kiln_allocator_free(args->allocator, acc);
  return kiln_ok_status();
}

#define KILN_REDUCE(name) \
  {name, "axes,keepdims,noop_with_empty_axes,kiln.reduce_mask", 1, 2, 1, 1, \
   kiln_infer_reduce, kiln_run_reduce}
const kiln_op_def_t kiln_ops_reduce[] = {
    KILN_REDUCE("ReduceMean"), KILN_REDUCE("ReduceSum"),
    KILN_REDUCE("ReduceMax"), KILN_REDUCE("ReduceMin"),
    KILN_REDUCE("ReduceProd"), KILN_REDUCE("ReduceL1"),
    KILN_REDUCE("ReduceL2"), KILN_REDUCE("ReduceLogSum"),
    KILN_REDUCE("ReduceLogSumExp"), KILN_REDUCE("ReduceSumSquare"),
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
