// Winograd F(2x2, 3x3) convolution (lower_winograd.c).
#ifndef KILN_COMPILER_ONNX_EMIT_LOWER_WINOGRAD_H_
#define KILN_COMPILER_ONNX_EMIT_LOWER_WINOGRAD_H_

#include "lower_util.h"

// The conv's epilogue as its kernels take it.
typedef struct kiln_lower_winograd_epilogue_t {
  uint32_t activation;
  bool has_bias;
  int64_t residual;  // input index or -1
} kiln_lower_winograd_epilogue_t;

// Conv `c` (its node's input 1 the weight, 2 the bias) as Winograd
// F(2x2, 3x3) where it qualifies (see lower_winograd.c); *out_done false
// and nothing recorded otherwise. The caller checks the targets (desktop
// GPUs and the CPU: kiln_lower_winograd_targets) and the precision (fp32).
kiln_status_t kiln_lower_conv_winograd(const kiln_lower_t* l,
                                       const kiln_lower_winograd_epilogue_t* e,
                                       const kiln_kernel_conv2d_params_t* c, bool* out_done);

// The kernel kiln_lower_gemm and its kin run product `p` on (lower_linear.c).
kiln_kernel_id_t kiln_lower_gemm_kernel(const kiln_lower_t* l, const kiln_kernel_gemm_params_t* p);

#endif  // KILN_COMPILER_ONNX_EMIT_LOWER_WINOGRAD_H_
