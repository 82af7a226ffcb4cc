// Einsum (float32, one or two operands, no ellipsis): the reference sums
// products over every label assignment, accumulating in double. The GPU
// lowering maps the matmul-shaped equations onto the gemm kernel.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "einsum.h"
#include "ops.h"

static kiln_status_t kiln_einsum_read(const kiln_graph_node_t* node, size_t input_count,
                                      kiln_einsum_t* out, char* error, size_t error_size) {
  const char* equation = NULL;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(node, "equation", NULL, &equation));
  if (!equation) {
    snprintf(error, error_size, "the equation attribute is missing");
    return kiln_ok_status();
  }
  if (!kiln_einsum_parse(equation, input_count, out, error, error_size)) return kiln_ok_status();
  error[0] = '\0';
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_einsum(const kiln_op_infer_args_t* args) {
  size_t count = args->node->input_count;
  kiln_einsum_t e;
  char error[160] = "";
  KILN_RETURN_IF_ERROR(kiln_einsum_read(args->node, count, &e, error, sizeof(error)));
  if (error[0]) return kiln_op_unsupported(args, "equation: %s", error);
  int64_t sizes[KILN_EINSUM_MAX_LABELS];
  for (int32_t i = 0; i < KILN_EINSUM_MAX_LABELS; ++i) sizes[i] = -1;
  for (size_t i = 0; i < count; ++i) {
    const kiln_graph_value_t* v = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, i, KILN_OP_F32, &v));
    if (v->shape.rank != e.rank[i]) {
      return kiln_op_invalid(args, "input %zu has rank %d but %d labels", i,
                             (int)v->shape.rank, (int)e.rank[i]);
    }
    for (int32_t d = 0; d < e.rank[i]; ++d) {
      int32_t label = e.labels[i][d];
      if (sizes[label] >= 0 && sizes[label] != v->shape.dims[d]) {
        return kiln_op_invalid(args, "label '%c' has sizes %lld and %lld", e.names[label],
                               (long long)sizes[label], (long long)v->shape.dims[d]);
      }
      sizes[label] = v->shape.dims[d];
    }
  }
  // The reference visits every label assignment once.
  uint64_t work = 1;
  for (int32_t l = 0; l < e.label_count; ++l) {
    work *= (uint64_t)(sizes[l] > 0 ? sizes[l] : 1);
    if (work > ((uint64_t)1 << 34)) return kiln_op_unsupported(args, "too much work");
  }
  kiln_graph_shape_t shape = {e.rank[count], {0}};
  for (int32_t d = 0; d < shape.rank; ++d) shape.dims[d] = sizes[e.labels[count][d]];
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
}

static kiln_status_t kiln_run_einsum(const kiln_op_run_args_t* args) {
  size_t count = args->input_count;
  kiln_einsum_t e;
  char error[160] = "";
  KILN_RETURN_IF_ERROR(kiln_einsum_read(args->node, count, &e, error, sizeof(error)));
  if (error[0]) return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "Einsum: %s", error);
  int64_t sizes[KILN_EINSUM_MAX_LABELS] = {0};
  // strides[o][label]: element stride of the label in operand o (summed
  // when a label repeats, which walks the diagonal).
  int64_t strides[KILN_EINSUM_MAX_INPUTS + 1][KILN_EINSUM_MAX_LABELS];
  memset(strides, 0, sizeof(strides));
  const kiln_ref_tensor_t* y = &args->outputs[0];
  for (size_t o = 0; o <= count; ++o) {
    const kiln_graph_shape_t* shape = o < count ? &args->inputs[o].shape : &y->shape;
    int64_t stride = 1;
    for (int32_t d = shape->rank; d-- > 0;) {
      sizes[e.labels[o][d]] = shape->dims[d];
      strides[o][e.labels[o][d]] += stride;
      stride *= shape->dims[d];
    }
  }
  double* sum = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(
      args->allocator, (y->count ? y->count : 1) * sizeof(double), (void**)&sum));
  memset(sum, 0, (y->count ? y->count : 1) * sizeof(double));
  bool empty = false;
  for (int32_t l = 0; l < e.label_count; ++l) empty |= sizes[l] == 0;
  int64_t coords[KILN_EINSUM_MAX_LABELS] = {0};
  int64_t offsets[KILN_EINSUM_MAX_INPUTS + 1] = {0};
  while (!empty) {
    double product = 1.0;
    for (size_t o = 0; o < count; ++o) {
      product *= ((const float*)args->inputs[o].data)[offsets[o]];
    }
    sum[offsets[count]] += product;
    int32_t l = e.label_count - 1;
    for (; l >= 0; --l) {
      for (size_t o = 0; o <= count; ++o) offsets[o] += strides[o][l];
      if (++coords[l] < sizes[l]) break;
      for (size_t o = 0; o <= count; ++o) offsets[o] -= strides[o][l] * sizes[l];
      coords[l] = 0;
    }
    if (l < 0) break;
  }
  float* out = (float*)y->data;
  for (size_t i = 0; i < y->count; ++i) out[i] = (float)sum[i];
  kiln_allocator_free(args->allocator, sum);
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_einsum[] = {
    {"Einsum", "equation", 1, KILN_EINSUM_MAX_INPUTS, 1, 1, kiln_infer_einsum, kiln_run_einsum,
     12},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
