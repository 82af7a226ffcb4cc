// The push constants of gemm (and gemm_small) and gemm_coopmat.
#ifndef KILN_GEMM_PARAMS_GLSL_
#define KILN_GEMM_PARAMS_GLSL_
// Mirrors kiln_kernel_gemm_params_t (kernels_abi.h).
layout(push_constant) uniform Params {
  uint m, n, k, batch;
  uint a_batch_stride, a_row_stride, a_col_stride;
  uint b_batch_stride, b_row_stride, b_col_stride;
  uint c_batch_stride, c_row_stride;
  uint bias_batch_stride, bias_row_stride, bias_col_stride;
  uint residual_batch_stride, residual_row_stride;
  float scale, alpha, beta;
} p;
#endif  // KILN_GEMM_PARAMS_GLSL_
