// Gemm and MatMul (numpy semantics: 1-D promotion, broadcast batch dims).
// Accumulates in double so the reference is tighter than any GPU kernel.
#include <string.h>

#include "ops.h"

#define KILN_EPILOGUE_ATTRS \
  "kiln.bias,kiln.residual,kiln.residual_first,kiln.residual_flat,kiln.activation," \
  "kiln.activation_alpha,kiln.activation_beta,kiln.int8_scale"

static kiln_status_t kiln_infer_gemm(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* a = NULL;
  const kiln_graph_value_t* b = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &a));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_F32, &b));
  if (a->shape.rank != 2 || b->shape.rank != 2) {
    return kiln_op_invalid(args, "A and B must be 2-D");
  }
  int64_t trans_a = 0, trans_b = 0;
  float alpha, beta;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "transA", 0, &trans_a));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "transB", 0, &trans_b));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "alpha", 1.0f, &alpha));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "beta", 1.0f, &beta));
  int64_t m = trans_a ? a->shape.dims[1] : a->shape.dims[0];
  int64_t k = trans_a ? a->shape.dims[0] : a->shape.dims[1];
  int64_t kb = trans_b ? b->shape.dims[1] : b->shape.dims[0];
  int64_t n = trans_b ? b->shape.dims[0] : b->shape.dims[1];
  if (k != kb) {
    return kiln_op_invalid(args, "inner dims differ (%lld vs %lld)",
                           (long long)k, (long long)kb);
  }
  kiln_graph_shape_t shape = {2, {m, n}};
  if (kiln_op_input(args, 2)) {
    const kiln_graph_value_t* c = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 2, KILN_OP_F32, &c));
    kiln_graph_shape_t joined;
    KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &shape, &c->shape, &joined));
    if (!kiln_graph_shape_equal(&joined, &shape)) {
      return kiln_op_invalid(args, "C does not broadcast to (M, N)");
    }
  }
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape));
  return kiln_op_check_epilogue(args);
}

static kiln_status_t kiln_run_gemm(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* a = &args->inputs[0];
  const kiln_ref_tensor_t* b = &args->inputs[1];
  const kiln_ref_tensor_t* c =
      args->input_count > 2 && args->inputs[2].data ? &args->inputs[2] : NULL;
  int64_t trans_a = 0, trans_b = 0;
  float alpha, beta;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "transA", 0, &trans_a));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "transB", 0, &trans_b));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "alpha", 1.0f, &alpha));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "beta", 1.0f, &beta));
  kiln_ref_tensor_t* y = &args->outputs[0];
  int64_t m = y->shape.dims[0], n = y->shape.dims[1];
  int64_t k = trans_a ? a->shape.dims[0] : a->shape.dims[1];
  const float* pa = (const float*)a->data;
  const float* pb = (const float*)b->data;
  float* py = (float*)y->data;
  int64_t c_strides[2] = {0, 0};
  if (c) kiln_ref_broadcast_strides(&c->shape, &y->shape, c_strides);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0.0;
      for (int64_t p = 0; p < k; ++p) {
        float av = trans_a ? pa[p * m + i] : pa[i * k + p];
        float bv = trans_b ? pb[j * k + p] : pb[p * n + j];
        sum += (double)av * bv;
      }
      double value = alpha * sum;
      if (c) {
        value += (double)beta *
                 ((const float*)c->data)[i * c_strides[0] + j * c_strides[1]];
      }
      py[i * n + j] = (float)value;
    }
  }
  kiln_ref_apply_epilogue(args);
  return kiln_ok_status();
}

kiln_status_t kiln_op_matmul_shape(const kiln_op_infer_args_t* args,
                                   const kiln_graph_value_t* a,
                                   const kiln_graph_value_t* b,
                                   kiln_graph_shape_t* out_shape) {
  if (a->shape.rank == 0 || b->shape.rank == 0) {
    return kiln_op_invalid(args, "MatMul inputs must have rank >= 1");
  }
  kiln_graph_shape_t sa = a->shape, sb = b->shape;
  if (sa.rank == 1) { sa.rank = 2; sa.dims[1] = sa.dims[0]; sa.dims[0] = 1; }
  if (sb.rank == 1) { sb.rank = 2; sb.dims[1] = 1; }
  if (sa.dims[sa.rank - 1] != sb.dims[sb.rank - 2]) {
    return kiln_op_invalid(args, "inner dims differ (%lld vs %lld)",
                           (long long)sa.dims[sa.rank - 1],
                           (long long)sb.dims[sb.rank - 2]);
  }
  kiln_graph_shape_t ba = sa, bb = sb;
  ba.rank -= 2;
  bb.rank -= 2;
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &ba, &bb, &shape));
  if (a->shape.rank != 1) shape.dims[shape.rank++] = sa.dims[sa.rank - 2];
  if (b->shape.rank != 1) shape.dims[shape.rank++] = sb.dims[sb.rank - 1];
  *out_shape = shape;
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_matmul(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* a = NULL;
  const kiln_graph_value_t* b = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &a));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_F32, &b));
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(kiln_op_matmul_shape(args, a, b, &shape));
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape));
  return kiln_op_check_epilogue(args);
}

static kiln_status_t kiln_run_matmul(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* a = &args->inputs[0];
  const kiln_ref_tensor_t* b = &args->inputs[1];
  kiln_graph_shape_t sa = a->shape, sb = b->shape;
  if (sa.rank == 1) { sa.rank = 2; sa.dims[1] = sa.dims[0]; sa.dims[0] = 1; }
  if (sb.rank == 1) { sb.rank = 2; sb.dims[1] = 1; }
  int64_t m = sa.dims[sa.rank - 2], k = sa.dims[sa.rank - 1];
  int64_t n = sb.dims[sb.rank - 1];
  // Batch shape and per-operand batch strides (in matrices).
  kiln_graph_shape_t ba = sa, bb = sb, batch;
  ba.rank -= 2;
  bb.rank -= 2;
  batch.rank = ba.rank > bb.rank ? ba.rank : bb.rank;
  for (int32_t d = 0; d < batch.rank; ++d) {
    int32_t ia = d - (batch.rank - ba.rank), ib = d - (batch.rank - bb.rank);
    int64_t da = ia >= 0 ? ba.dims[ia] : 1, db = ib >= 0 ? bb.dims[ib] : 1;
    batch.dims[d] = da == 1 ? db : da;
  }
  int64_t stride_a[KILN_GRAPH_MAX_RANK], stride_b[KILN_GRAPH_MAX_RANK];
  kiln_ref_broadcast_strides(&ba, &batch, stride_a);
  kiln_ref_broadcast_strides(&bb, &batch, stride_b);
  size_t batches = 1;
  for (int32_t d = 0; d < batch.rank; ++d) batches *= (size_t)batch.dims[d];
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  int64_t oa = 0, ob = 0;
  const float* pa = (const float*)a->data;
  const float* pb = (const float*)b->data;
  float* py = (float*)args->outputs[0].data;
  for (size_t t = 0; t < batches; ++t) {
    const float* ma = pa + oa * m * k;
    const float* mb = pb + ob * k * n;
    float* my = py + (int64_t)t * m * n;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (int64_t p = 0; p < k; ++p) sum += (double)ma[i * k + p] * mb[p * n + j];
        my[i * n + j] = (float)sum;
      }
    }
    for (int32_t d = batch.rank; d-- > 0;) {
      oa += stride_a[d];
      ob += stride_b[d];
      if (++coords[d] < batch.dims[d]) break;
      oa -= stride_a[d] * batch.dims[d];
      ob -= stride_b[d] * batch.dims[d];
      coords[d] = 0;
    }
  }
  kiln_ref_apply_epilogue(args);
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_matmul[] = {
    {"Gemm", "alpha,beta,transA,transB," KILN_EPILOGUE_ATTRS, 2, 8, 1, 1,
     kiln_infer_gemm, kiln_run_gemm},
    {"MatMul", KILN_EPILOGUE_ATTRS, 2, 8, 1, 1, kiln_infer_matmul,
     kiln_run_matmul},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
