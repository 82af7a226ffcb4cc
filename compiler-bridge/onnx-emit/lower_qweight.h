// Weight-only quantized products (lower_qweight.c): MatMul / Gemm with a
// constant B as a qgemm dispatch, Conv with a constant weight as a
// qconv2d_gemm dispatch, when the program quantizes weights.
#ifndef KILN_COMPILER_ONNX_EMIT_LOWER_QWEIGHT_H_
#define KILN_COMPILER_ONNX_EMIT_LOWER_QWEIGHT_H_

#include "kiln/compiler/quant.h"
#include "lower_util.h"

typedef struct kiln_lower_qgemm_t {
  // gemm's params as the fp32 path computed them (m, n, k, batch, A, C,
  // bias and residual strides); B's strides are replaced.
  const kiln_kernel_gemm_params_t* params;
  bool eligible_a;  // A dense with k contiguous: a_col_stride 1, strides % 4 == 0
  bool b_nk;        // B (input 1) stored [N][K] (Gemm transB) rather than [K][N]
  uint32_t activation;
  bool has_bias, has_residual;
  // 0 A, 2 bias, 3 residual, 4 output (1 is replaced by the packed weight).
  kiln_emit_range_t bindings[5];
} kiln_lower_qgemm_t;

// Leaves the node to the fp32 path (*out_done false), counting it and
// printing the reason to the statistics stream.
kiln_status_t kiln_quant_keep_fp32(const kiln_lower_t* l, bool* out_done, const char* format,
                                   ...) __attribute__((format(printf, 3, 4)));

// Whether input 1 may go to a quantized kernel: --quantize, or a QDQ int8
// weight (kiln.int8_scale from pass_fuse_qdq.c).
bool kiln_lower_weight_quantizable(const kiln_lower_t* l);

// The layout --quantize=`layout` stores a weight of reduction k in: q4_K
// falls back to q4_0 where 256 does not divide k but 32 does.
kiln_quant_layout_t kiln_quant_layout_for_k(kiln_quant_layout_t layout, uint64_t k);

// Records the qgemm dispatch and sets *out_done, or leaves the node to the
// fp32 path (*out_done false; the reason goes to the statistics stream).
// A QDQ int8 weight goes to the int8 layout with its own codes and scales
// when they reproduce the folded weight exactly, ahead of --quantize.
kiln_status_t kiln_lower_try_qgemm(const kiln_lower_t* l, const kiln_lower_qgemm_t* q,
                                   bool* out_done);

typedef struct kiln_lower_qconv_t {
  const kiln_kernel_conv2d_params_t* params;  // as for conv2d_gemm (2-D, NCHW)
  bool depthwise;
  uint32_t activation;
  bool has_bias, has_residual;
  // 0 input, 2 bias, 3 residual, 4 output (1 is replaced by the packed weight).
  kiln_emit_range_t bindings[5];
} kiln_lower_qconv_t;

// Conv: records one qconv2d_gemm dispatch over the weight (input 1,
// [M, C/g, KH, KW] fp32) packed as M rows of C/g*KH*KW (im2col's k order),
// or leaves the node to the fp32 path as kiln_lower_try_qgemm does.
kiln_status_t kiln_lower_try_qconv(const kiln_lower_t* l, const kiln_lower_qconv_t* q,
                                   bool* out_done);

#endif  // KILN_COMPILER_ONNX_EMIT_LOWER_QWEIGHT_H_
