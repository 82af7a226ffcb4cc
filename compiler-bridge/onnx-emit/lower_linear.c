// Conv, Gemm and MatMul with their fused epilogues (bias, residual,
// activation) onto the gemm, conv2d and depthwise kernels.
#include <string.h>

#include "lower_util.h"
#include "window.h"

typedef struct kiln_lower_epilogue_t {
  uint32_t activation;
  float alpha, beta;
  int64_t bias;      // input index or -1 (MatMul's kiln.bias)
  int64_t residual;  // input index or -1
} kiln_lower_epilogue_t;

// The kernels add the residual before the activation; the other order is
// refused.
static kiln_status_t kiln_lower_epilogue(const kiln_lower_t* l,
                                         kiln_lower_epilogue_t* out) {
  memset(out, 0, sizeof(*out));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "kiln.bias", -1, &out->bias));
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "kiln.residual", -1, &out->residual));
  int64_t residual_first = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "kiln.residual_first", 0, &residual_first));
  const char* activation = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(l->node, "kiln.activation", NULL, &activation));
  float alpha = 0, beta = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(l->node, "kiln.activation_alpha", 0.0f, &alpha));
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(l->node, "kiln.activation_beta", 0.0f, &beta));
  out->alpha = alpha;
  out->beta = beta;
  if (activation) {
    KILN_RETURN_IF_ERROR(kiln_lower_activation(l, activation, alpha, beta,
                                               &out->activation, &out->alpha,
                                               &out->beta));
  }
  if (out->residual >= 0) {
    if (out->activation != KILN_ACT_NONE && !residual_first) {
      return kiln_lower_refuse(l, "a residual added after the activation is not supported");
    }
    const kiln_graph_value_t* residual = kiln_lower_in(l, (size_t)out->residual);
    const kiln_graph_value_t* y = kiln_lower_out(l, 0);
    if (!residual || !y || !kiln_graph_shape_equal(&residual->shape, &y->shape)) {
      return kiln_lower_refuse(l, "a broadcast residual is not supported");
    }
  }
  return kiln_ok_status();
}

// The spec constants of each kernel family's epilogue, in the order
// activation, has_bias, has_residual.
static const uint32_t kGemmEpilogueSpecs[3] = {
    KILN_SPEC_GEMM_ACTIVATION, KILN_SPEC_GEMM_HAS_BIAS, KILN_SPEC_GEMM_HAS_RESIDUAL};
static const uint32_t kConvEpilogueSpecs[3] = {
    KILN_SPEC_CONV_ACTIVATION, KILN_SPEC_CONV_HAS_BIAS, KILN_SPEC_CONV_HAS_RESIDUAL};

// Every epilogue kernel binds the residual at 3 (an unused slot repeats
// binding `placeholder`) and the output at 4, then records the dispatch
// with its three spec constants (split where a reduction is too long).
static kiln_status_t kiln_lower_finish_epilogue(const kiln_lower_t* l,
                                                const kiln_lower_epilogue_t* e,
                                                bool has_bias, const uint32_t specs[3],
                                                uint32_t placeholder,
                                                kiln_emit_dispatch_desc_t* desc) {
  desc->bindings[3] = desc->bindings[placeholder];
  if (e->residual >= 0) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e->residual, &desc->bindings[3]));
  }
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc->bindings[4]));
  kiln_lower_reduction_t r = {specs, e->activation, has_bias, e->residual >= 0};
  return kiln_lower_add_reduction(l, desc, &r);
}

// Whether no target of the module is a CPU device (subgroup <= 8, e.g.
// llvmpipe). KxK convolutions then run as implicit GEMMs on the tiled core
// (conv2d_gemm); a module that may run on a CPU device keeps conv2d, whose
// cpu variant is several times faster there. The kernel is one per dispatch
// for all targets, so one CPU target decides.
static bool kiln_lower_gpu_only(const kiln_lower_t* l) {
  for (size_t t = 0; t < l->program->target_count; ++t) {
    if (l->program->caps[t].subgroup_size <= 8) return false;
  }
  return true;
}

// One-row products (batch-1 linear layers) take gemv, everything else the
// tiled gemm; both have gemm's ABI.
static kiln_kernel_id_t kiln_lower_gemm_kernel(const kiln_kernel_gemm_params_t* p) {
  return p->m == 1 ? KILN_KERNEL_GEMV : KILN_KERNEL_GEMM;
}

// conv2d as one gemm when it is a plain 1x1 (MobileNet's pointwise convs).
static kiln_status_t kiln_lower_conv_gemm(const kiln_lower_t* l,
                                          const kiln_lower_epilogue_t* e,
                                          const kiln_graph_shape_t* x,
                                          const kiln_graph_shape_t* y) {
  uint32_t n = (uint32_t)x->dims[0], ci = (uint32_t)x->dims[1];
  uint32_t co = (uint32_t)y->dims[1];
  uint32_t hw = (uint32_t)(y->dims[2] * y->dims[3]);
  bool has_bias = kiln_lower_in(l, 2) != NULL;
  kiln_kernel_gemm_params_t p = {
      .m = co, .n = hw, .k = ci, .batch = n,
      .a_batch_stride = 0, .a_row_stride = ci, .a_col_stride = 1,
      .b_batch_stride = ci * hw, .b_row_stride = hw, .b_col_stride = 1,
      .c_batch_stride = co * hw, .c_row_stride = hw,
      .bias_batch_stride = 0, .bias_row_stride = 1, .bias_col_stride = 0,
      .residual_batch_stride = co * hw, .residual_row_stride = hw,
      .scale = 1.0f, .alpha = e->alpha, .beta = e->beta};
  kiln_emit_dispatch_desc_t desc = {.kernel = kiln_lower_gemm_kernel(&p), .push = &p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[0];
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  return kiln_lower_finish_epilogue(l, e, has_bias, kGemmEpilogueSpecs, 0, &desc);
}

kiln_status_t kiln_lower_conv(const kiln_lower_t* l) {
  const kiln_graph_value_t* xv = kiln_lower_in(l, 0);
  const kiln_graph_value_t* wv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  kiln_graph_shape_t x4, y4;
  if (!xv || !wv || !yv || !kiln_lower_shape_2d(&xv->shape, &x4) ||
      !kiln_lower_shape_2d(&yv->shape, &y4)) {
    return kiln_lower_refuse(l, "only 1-D (NCL) and 2-D (NCHW) convolutions are supported");
  }
  kiln_lower_epilogue_t e;
  KILN_RETURN_IF_ERROR(kiln_lower_epilogue(l, &e));
  if (e.bias >= 0) return kiln_lower_refuse(l, "kiln.bias on Conv is not supported");
  kiln_window_t window;
  KILN_RETURN_IF_ERROR(
      kiln_lower_window_2d(l, &xv->shape, &wv->shape, false, false, true, &window));
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "group", 1, &group));
  const kiln_graph_shape_t* x = &x4;
  const kiln_graph_shape_t* y = &y4;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(x)));
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(y)));
  bool pointwise = group == 1 && window.kernel[0] == 1 && window.kernel[1] == 1 &&
                   window.stride[0] == 1 && window.stride[1] == 1 &&
                   window.pad_begin[0] == 0 && window.pad_begin[1] == 0 &&
                   window.pad_end[0] == 0 && window.pad_end[1] == 0;
  if (pointwise) return kiln_lower_conv_gemm(l, &e, x, y);
  bool depthwise = group > 1 && group == x->dims[1] && group == y->dims[1];
  kiln_kernel_conv2d_params_t p = {
      .batch = (uint32_t)x->dims[0], .in_channels = (uint32_t)x->dims[1],
      .in_height = (uint32_t)x->dims[2], .in_width = (uint32_t)x->dims[3],
      .out_channels = (uint32_t)y->dims[1], .out_height = (uint32_t)y->dims[2],
      .out_width = (uint32_t)y->dims[3], .groups = (uint32_t)group,
      .kernel_h = (uint32_t)window.kernel[0], .kernel_w = (uint32_t)window.kernel[1],
      .stride_h = (uint32_t)window.stride[0], .stride_w = (uint32_t)window.stride[1],
      .pad_top = (uint32_t)window.pad_begin[0], .pad_left = (uint32_t)window.pad_begin[1],
      .dilation_h = (uint32_t)window.dilation[0], .dilation_w = (uint32_t)window.dilation[1],
      .alpha = e.alpha, .beta = e.beta};
  bool has_bias = kiln_lower_in(l, 2) != NULL;
  const bool tiled = !depthwise && kiln_lower_gpu_only(l);
  kiln_emit_dispatch_desc_t desc = {
      .kernel = depthwise ? KILN_KERNEL_DEPTHWISE_CONV2D
                          : (tiled ? KILN_KERNEL_CONV2D_GEMM : KILN_KERNEL_CONV2D),
      .push = &p, .binding_count = 5, .written_mask = 1u << 4,
      .grid = depthwise ? KILN_EMIT_GRID_LINEAR
                        : (tiled ? KILN_EMIT_GRID_CONV2D_GEMM : KILN_EMIT_GRID_CONV2D),
      .grid_count = kiln_lower_count(y)};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[1];
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  return kiln_lower_finish_epilogue(l, &e, has_bias,
                                    tiled ? kGemmEpilogueSpecs : kConvEpilogueSpecs, 1, &desc);
}

// Bias strides for an addend broadcast onto [batch, m, n] (rank-`rank` out).
static kiln_status_t kiln_lower_bias_strides(const kiln_lower_t* l,
                                             const kiln_graph_shape_t* bias,
                                             const kiln_graph_shape_t* out,
                                             kiln_kernel_gemm_params_t* p) {
  int32_t rank = out->rank;
  int32_t offset = rank - bias->rank;
  int64_t dims[KILN_GRAPH_MAX_RANK];
  for (int32_t d = 0; d < rank; ++d) dims[d] = d < offset ? 1 : bias->dims[d - offset];
  for (int32_t d = 0; d < rank - 2; ++d) {
    if (dims[d] != 1) return kiln_lower_refuse(l, "a batched bias is not supported");
  }
  bool row = dims[rank - 2] != 1, col = dims[rank - 1] != 1;
  p->bias_batch_stride = 0;
  p->bias_row_stride = row ? (col ? (uint32_t)dims[rank - 1] : 1) : 0;
  p->bias_col_stride = col ? 1 : 0;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_gemm(const kiln_lower_t* l) {
  const kiln_graph_value_t* av = kiln_lower_in(l, 0);
  const kiln_graph_value_t* bv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* cv = kiln_lower_in(l, 2);
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  int64_t trans_a = 0, trans_b = 0;
  float alpha = 1, beta = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "transA", 0, &trans_a));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "transB", 0, &trans_b));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "alpha", 1.0f, &alpha));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "beta", 1.0f, &beta));
  kiln_lower_epilogue_t e;
  KILN_RETURN_IF_ERROR(kiln_lower_epilogue(l, &e));
  if (e.bias >= 0) return kiln_lower_refuse(l, "kiln.bias on Gemm is not supported");
  if (cv && beta != 1.0f && !cv->data) {
    return kiln_lower_refuse(l, "beta != 1 with a run-time C is not supported");
  }
  uint32_t m = (uint32_t)yv->shape.dims[0], n = (uint32_t)yv->shape.dims[1];
  uint32_t k = (uint32_t)(trans_a ? av->shape.dims[0] : av->shape.dims[1]);
  uint32_t a_cols = (uint32_t)av->shape.dims[1], b_cols = (uint32_t)bv->shape.dims[1];
  kiln_kernel_gemm_params_t p = {
      .m = m, .n = n, .k = k, .batch = 1,
      .a_row_stride = trans_a ? 1 : a_cols, .a_col_stride = trans_a ? a_cols : 1,
      .b_row_stride = trans_b ? 1 : b_cols, .b_col_stride = trans_b ? b_cols : 1,
      .c_batch_stride = m * n, .c_row_stride = n,
      .residual_batch_stride = m * n, .residual_row_stride = n,
      .scale = alpha, .alpha = e.alpha, .beta = e.beta};
  if (cv) KILN_RETURN_IF_ERROR(kiln_lower_bias_strides(l, &cv->shape, &yv->shape, &p));
  kiln_emit_dispatch_desc_t desc = {.kernel = kiln_lower_gemm_kernel(&p), .push = &p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[0];
  if (cv && beta != 1.0f) {
    // A constant C is pre-scaled by beta into the weights.
    size_t count = (size_t)kiln_lower_count(&cv->shape);
    float* scaled = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator,
                                               count * sizeof(float), (void**)&scaled));
    for (size_t i = 0; i < count; ++i) scaled[i] = beta * ((const float*)cv->data)[i];
    kiln_status_t status = kiln_emit_add_weight(l->program, scaled, count * sizeof(float),
                                                &desc.bindings[2]);
    kiln_allocator_free(l->program->allocator, scaled);
    KILN_RETURN_IF_ERROR(status);
  } else if (cv) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  }
  return kiln_lower_finish_epilogue(l, &e, cv != NULL, kGemmEpilogueSpecs, 0, &desc);
}

// Batch stride of an operand of rank `rank` for an output with `batch`
// flattened leading dims: 0 when broadcast (all leading dims 1), the matrix
// size when its leading dims equal the output's; otherwise refused.
static kiln_status_t kiln_lower_batch_stride(const kiln_lower_t* l,
                                             const kiln_graph_shape_t* operand,
                                             const kiln_graph_shape_t* out,
                                             uint32_t* out_stride) {
  *out_stride = 0;
  uint64_t operand_batch = kiln_lower_dims(operand, 0, operand->rank - 2);
  if (operand_batch == 1) return kiln_ok_status();
  if (operand->rank != out->rank) {
    return kiln_lower_refuse(l, "MatMul batch broadcasting is not supported");
  }
  for (int32_t d = 0; d < out->rank - 2; ++d) {
    if (operand->dims[d] != out->dims[d]) {
      return kiln_lower_refuse(l, "MatMul batch broadcasting is not supported");
    }
  }
  *out_stride = (uint32_t)(operand->dims[operand->rank - 2] *
                           operand->dims[operand->rank - 1]);
  return kiln_ok_status();
}

kiln_status_t kiln_lower_matmul(const kiln_lower_t* l) {
  const kiln_graph_value_t* av = kiln_lower_in(l, 0);
  const kiln_graph_value_t* bv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  if (av->shape.rank < 2 || bv->shape.rank < 2) {
    return kiln_lower_refuse(l, "MatMul of a rank-1 operand is not supported");
  }
  kiln_lower_epilogue_t e;
  KILN_RETURN_IF_ERROR(kiln_lower_epilogue(l, &e));
  const kiln_graph_shape_t* y = &yv->shape;
  uint32_t m = (uint32_t)y->dims[y->rank - 2], n = (uint32_t)y->dims[y->rank - 1];
  uint32_t k = (uint32_t)av->shape.dims[av->shape.rank - 1];
  uint64_t batch = kiln_lower_dims(y, 0, y->rank - 2);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(y)));
  kiln_kernel_gemm_params_t p = {
      .m = m, .n = n, .k = k, .batch = (uint32_t)batch,
      .a_row_stride = k, .a_col_stride = 1, .b_row_stride = n, .b_col_stride = 1,
      .c_batch_stride = m * n, .c_row_stride = n,
      .residual_batch_stride = m * n, .residual_row_stride = n,
      .scale = 1.0f, .alpha = e.alpha, .beta = e.beta};
  KILN_RETURN_IF_ERROR(kiln_lower_batch_stride(l, &av->shape, y, &p.a_batch_stride));
  KILN_RETURN_IF_ERROR(kiln_lower_batch_stride(l, &bv->shape, y, &p.b_batch_stride));
  const kiln_graph_value_t* bias = e.bias >= 0 ? kiln_lower_in(l, (size_t)e.bias) : NULL;
  if (bias) KILN_RETURN_IF_ERROR(kiln_lower_bias_strides(l, &bias->shape, y, &p));
  // A shared B (a 2-D weight) with a contiguous batched A: the batch dims
  // fold into M, one GEMM of batch * m rows (seq-first transformers had
  // [128,1,768] x [768,3072] as 128 one-row GEMMs). C and the residual are
  // contiguous [batch, m, n] already; a per-row bias would not fold.
  if (p.batch > 1 && p.b_batch_stride == 0 && p.a_batch_stride == m * k &&
      p.bias_row_stride == 0) {
    p.m = m * p.batch;
    p.batch = 1;
    p.a_batch_stride = 0;
    p.c_batch_stride = p.m * n;
    p.residual_batch_stride = p.m * n;
  }
  kiln_emit_dispatch_desc_t desc = {.kernel = kiln_lower_gemm_kernel(&p), .push = &p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_GEMM};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[0];
  if (bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e.bias, &desc.bindings[2]));
  return kiln_lower_finish_epilogue(l, &e, bias != NULL, kGemmEpilogueSpecs, 0, &desc);
}
