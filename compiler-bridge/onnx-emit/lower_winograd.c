// Winograd F(2x2, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional
// Neural Networks", 2015) for the large 3x3 stride-1 convs of desktop GPUs and the CPU:
// each 2x2 block of outputs from a 4x4 input patch in 16 multiplies per
// channel pair instead of 36, as three dispatches:
//   winograd_input   V[e] = B^T d B of every patch     (C x T per e)
//   gemm, batch 16   M[e] = U[e] . V[e]                (C_out x T per e)
//   winograd_output  y = act(A^T m A + bias + residual)
// with U[e] = G g G^T of the weight, computed here (the weight must be a
// constant), and T the output tiles of all images in one row, so the 16
// products are wide. cuDNN runs these convs the same way; on an H100 its
// ResNet-50 batch 32 3x3s ran 2-2.5x faster than kiln's columns + gemm
// (kernels of 0.14-0.32 ms against 0.34-0.40, 2026-11-25).
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"
#include "lower_winograd.h"

// Least multiply-adds of a conv (all images) taken. Every 3x3 of the
// ResNets qualifies (the smallest, 7x7 over 512 channels at batch 1: 115
// M); on an H100 (alternating A/B runs, wall ms a call) ResNet-50 batch 32
// went 14.30 -> 11.39, ResNet-50 1.50 -> 1.42 and ResNet-18 0.760 ->
// 0.635. Below this, unmeasured, the columns path stays.
#define KILN_WINOGRAD_MIN_MACS (64ull << 20)

// U[e][co][ci] (e = 4 i + j) = (G g G^T)[i][j] of the 3x3 filter g of
// (co, ci), G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1], in double.
static void kiln_winograd_filter(const float* w, uint64_t co_count, uint64_t ci_count,
                                 float* u) {
  static const double G[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  const uint64_t plane = co_count * ci_count;
  for (uint64_t co = 0; co < co_count; ++co) {
    for (uint64_t ci = 0; ci < ci_count; ++ci) {
      const float* g = w + (co * ci_count + ci) * 9;
      double t[4][3];  // G g
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 3; ++j) {
          t[i][j] = G[i][0] * g[j] + G[i][1] * g[3 + j] + G[i][2] * g[6 + j];
        }
      }
      for (int i = 0; i < 4; ++i) {
        for (int j = 0; j < 4; ++j) {
          const double v = t[i][0] * G[j][0] + t[i][1] * G[j][1] + t[i][2] * G[j][2];
          u[(uint64_t)(4 * i + j) * plane + co * ci_count + ci] = (float)v;
        }
      }
    }
  }
}

kiln_status_t kiln_lower_conv_winograd(const kiln_lower_t* l,
                                       const kiln_lower_winograd_epilogue_t* e,
                                       const kiln_kernel_conv2d_params_t* c, bool* out_done) {
  *out_done = false;
  const kiln_graph_value_t* wv = kiln_lower_in(l, 1);
  if (c->groups != 1 || c->kernel_h != 3 || c->kernel_w != 3 || c->stride_h != 1 ||
      c->stride_w != 1 || c->dilation_h != 1 || c->dilation_w != 1 || !wv || !wv->data ||
      wv->dtype != KILN_GRAPH_DTYPE_F32) {
    return kiln_ok_status();
  }
  const uint64_t N = c->batch, C = c->in_channels, CO = c->out_channels;
  const uint64_t OH = c->out_height, OW = c->out_width;
  if ((uint64_t)N * CO * OH * OW * C * 9 < KILN_WINOGRAD_MIN_MACS) return kiln_ok_status();
  const uint64_t T = N * ((OH + 1) / 2) * ((OW + 1) / 2), T4 = (T + 3) / 4 * 4;
  const uint64_t v_count = 16 * C * T4, m_count = 16 * CO * T4;
  const uint64_t limit = kiln_emit_range_limit(l->program);
  if (v_count * 4 > limit || m_count * 4 > limit || v_count > UINT32_MAX ||
      m_count > UINT32_MAX || C * T > UINT32_MAX || CO * T > UINT32_MAX ||
      16 * CO * C > UINT32_MAX) {
    return kiln_ok_status();  // the columns or implicit GEMM take it
  }
  // U, placed as a weight of its own.
  float* u = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator, 16 * CO * C * sizeof(float),
                                             (void**)&u));
  kiln_winograd_filter((const float*)wv->data, CO, C, u);
  kiln_emit_range_t u_range;
  kiln_status_t placed =
      kiln_emit_add_float_weight(l->program, u, (size_t)(16 * CO * C), &u_range);
  kiln_allocator_free(l->program->allocator, u);
  KILN_RETURN_IF_ERROR(placed);

  // V and M in one scratch range, held while split-K may place partials.
  const uint64_t v_bytes = v_count * 4, m_bytes = m_count * 4;
  kiln_emit_range_t scratch;
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, v_bytes + m_bytes, &scratch));
  kiln_emit_range_t v_range = scratch, m_range = scratch;
  v_range.length = v_bytes;
  m_range.offset += v_bytes;
  m_range.length = m_bytes;

  kiln_emit_dispatch_desc_t input = {.kernel = KILN_KERNEL_WINOGRAD_INPUT, .push = c,
                                     .binding_count = 2, .written_mask = 2u,
                                     .grid = KILN_EMIT_GRID_LINEAR,
                                     .grid_count = (uint32_t)(C * T)};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &input.bindings[0]));
  input.bindings[1] = v_range;
  KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &input));

  kiln_kernel_gemm_params_t p = {
      .m = (uint32_t)CO, .n = (uint32_t)T, .k = (uint32_t)C, .batch = 16,
      .a_batch_stride = (uint32_t)(CO * C), .a_row_stride = (uint32_t)C, .a_col_stride = 1,
      .b_batch_stride = (uint32_t)(C * T4), .b_row_stride = (uint32_t)T4, .b_col_stride = 1,
      .c_batch_stride = (uint32_t)(CO * T4), .c_row_stride = (uint32_t)T4,
      .residual_batch_stride = (uint32_t)(CO * T4), .residual_row_stride = (uint32_t)T4,
      .scale = 1.0f};
  kiln_emit_dispatch_desc_t product = {.kernel = kiln_lower_gemm_kernel(l, &p), .push = &p,
                                       .binding_count = 5, .written_mask = 1u << 4,
                                       .grid = KILN_EMIT_GRID_GEMM};
  product.bindings[0] = u_range;
  product.bindings[1] = v_range;
  product.bindings[2] = u_range;  // no bias
  product.bindings[3] = v_range;  // no residual
  product.bindings[4] = m_range;
  static const uint32_t specs[3] = {KILN_SPEC_GEMM_ACTIVATION, KILN_SPEC_GEMM_HAS_BIAS,
                                    KILN_SPEC_GEMM_HAS_RESIDUAL};
  kiln_lower_reduction_t r = {specs, KILN_ACT_NONE, false, false};
  (void)kiln_emit_scratch_reserve(l->program, v_bytes + m_bytes);
  bool split = false;
  kiln_status_t status = kiln_lower_add_split_k(l, &product, &r, &split);
  if (!status && !split) status = kiln_lower_add_big_reduction(l, &product, &r);
  (void)kiln_emit_scratch_reserve(l->program, 0);
  KILN_RETURN_IF_ERROR(status);

  kiln_emit_dispatch_desc_t output = {.kernel = KILN_KERNEL_WINOGRAD_OUTPUT, .push = c,
                                      .binding_count = 4, .written_mask = 1u << 3,
                                      .grid = KILN_EMIT_GRID_LINEAR,
                                      .grid_count = (uint32_t)(CO * T)};
  output.bindings[0] = m_range;
  output.bindings[1] = output.bindings[2] = m_range;  // unused slots: any read-only range
  if (e->has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &output.bindings[1]));
  if (e->residual >= 0) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, (size_t)e->residual, &output.bindings[2]));
  }
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &output.bindings[3]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_CONV_ACTIVATION, e->activation},
                                    {KILN_SPEC_CONV_HAS_BIAS, e->has_bias},
                                    {KILN_SPEC_CONV_HAS_RESIDUAL, e->residual >= 0}};
  output.ops = ops;
  output.op_count = 3;
  KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &output));
  *out_done = true;
  return kiln_ok_status();
}
