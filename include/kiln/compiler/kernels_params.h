// Builders of the kernels' push-constant structs (kernels_abi.h) from
// ONNX-shaped descriptions (int64 dims, as the graph IR holds them), so the
// bridge does not repeat the stride arithmetic per op. Every builder checks
// rank <= 6, non-negative dims, element counts within the kernels' 32-bit
// indexing, and op-specific rules; errors name the argument at fault.
// Outputs are cleared on entry.
#ifndef KILN_COMPILER_KERNELS_PARAMS_H_
#define KILN_COMPILER_KERNELS_PARAMS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

// Numpy broadcasting of a and b. `out_dims` (may be NULL) receives the
// result shape, right-aligned in `*out_rank` = max(a_rank, b_rank) dims.
kiln_status_t kiln_kernel_params_binary(const int64_t* a_dims, size_t a_rank,
                                        const int64_t* b_dims, size_t b_rank,
                                        float alpha, float beta,
                                        kiln_kernel_binary_params_t* out_params,
                                        int64_t* out_dims, size_t* out_rank);

// Transpose: output dim d is input dim perm[d] (perm a permutation).
kiln_status_t kiln_kernel_params_transpose(
    const int64_t* dims, size_t rank, const int64_t* perm,
    kiln_kernel_strided_copy_params_t* out_params);

// Slice with normalized starts (0 <= start < dim) and nonzero steps, and the
// resulting output dims (as ONNX's shape inference computed them). Every
// element read must lie inside the input: checked here.
kiln_status_t kiln_kernel_params_slice(
    const int64_t* dims, size_t rank, const int64_t* starts,
    const int64_t* steps, const int64_t* out_dims,
    kiln_kernel_strided_copy_params_t* out_params);

// Expand (numpy broadcast of one input to `out_dims`).
kiln_status_t kiln_kernel_params_expand(
    const int64_t* dims, size_t rank, const int64_t* out_dims, size_t out_rank,
    kiln_kernel_strided_copy_params_t* out_params);

// One input of a Concat: copies `dims` into the output (same rank, equal
// dims except on `axis`, where the output has `out_axis_size`) starting at
// `axis_offset` along the axis. One dispatch per input.
kiln_status_t kiln_kernel_params_concat_part(
    const int64_t* dims, size_t rank, size_t axis, int64_t out_axis_size,
    int64_t axis_offset, kiln_kernel_strided_copy_params_t* out_params);

// A 1x1, stride-1, unpadded convolution of NCHW x[n, c_in, h, w] with
// weights [c_out, c_in] as a GEMM per image (per-row bias). Bind A = weights,
// B = input, bias, residual, C = output.
kiln_status_t kiln_kernel_params_conv1x1_as_gemm(
    int64_t batch, int64_t in_channels, int64_t spatial, int64_t out_channels,
    float alpha, float beta, kiln_kernel_gemm_params_t* out_params);

// ONNX MatMul of dense row-major [batch..., m, k] x [batch..., k, n] where
// either side may have batch count 1 (broadcast) and an optional bias of n
// values (Gemm's C as a row vector). trans_a / trans_b read the stored
// matrices transposed ([k, m] / [n, k]), as Gemm's transA / transB.
kiln_status_t kiln_kernel_params_matmul(int64_t batch, int64_t a_batch,
                                        int64_t b_batch, int64_t m, int64_t n,
                                        int64_t k, int trans_a, int trans_b,
                                        float scale,
                                        kiln_kernel_gemm_params_t* out_params);

// ONNX Pad: pads holds rank begin pads then rank end pads (negative crops).
kiln_status_t kiln_kernel_params_pad(const int64_t* dims, size_t rank,
                                     const int64_t* pads, float value,
                                     kiln_kernel_pad_params_t* out_params);

// Reduce / Softmax view of `dims` over `axes` (negative counts from the end;
// duplicates allowed; empty = all axes): outer x size x inner. The axes
// must be adjacent once sorted (UNIMPLEMENTED otherwise: transpose first).
// Serves ReduceSum/Mean/Max/Min, global pooling (axes {2, 3}), Softmax and
// LogSoftmax (one axis, or axis..rank-1 for opset < 13).
kiln_status_t kiln_kernel_params_axes(const int64_t* dims, size_t rank,
                                      const int64_t* axes, size_t axis_count,
                                      kiln_kernel_reduce_params_t* out_params);

// The reduce op of one dispatch of a reduction done in several (chunk
// partials, then the partials; runs of axes one after another): the sum
// family transforms each value in the first dispatch (`first`: it reads the
// input) and the sum in the last (`last`: it writes the output); mean sums
// partials and divides in each stage's last dispatch (`stage_last`); max,
// min, sum, prod and log-sum-exp compose as they are.
uint32_t kiln_kernel_reduce_step_op(uint32_t op, bool first, bool last, bool stage_last);

// LayerNormalization over axis..rank-1 (scale/bias of that many values).
kiln_status_t kiln_kernel_params_layer_norm(const int64_t* dims, size_t rank,
                                            int64_t axis, float epsilon,
                                            kiln_kernel_norm_params_t* out_params);
// InstanceNormalization of [N, C, spatial...] (scale/bias of C values).
kiln_status_t kiln_kernel_params_instance_norm(const int64_t* dims, size_t rank,
                                               float epsilon,
                                               kiln_kernel_norm_params_t* out_params);

// Gather along `axis` (negative counts from the end) with `index_count`
// indices (any index shape, flattened).
kiln_status_t kiln_kernel_params_gather(const int64_t* dims, size_t rank,
                                        int64_t axis, int64_t index_count,
                                        kiln_kernel_gather_params_t* out_params);

// Resize of NCHW (rank 4, N and C unchanged) to out_h x out_w. ONNX scales
// when given (> 0), else out / in as ONNX derives them from sizes.
kiln_status_t kiln_kernel_params_resize(const int64_t* dims, size_t rank,
                                        int64_t out_h, int64_t out_w,
                                        float scale_h, float scale_w,
                                        kiln_kernel_resize_params_t* out_params);

// Conv / ConvTranspose attributes on NCHW (ONNX's, with the pads split).
typedef struct kiln_kernel_conv2d_attrs_t {
  int64_t batch, in_channels, in_height, in_width, out_channels, groups;
  int64_t kernel_h, kernel_w, stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w;
  int64_t output_pad_h, output_pad_w;  // ConvTranspose only
} kiln_kernel_conv2d_attrs_t;

// Conv: checks channels divide by groups, positive sizes, an output of at
// least 1x1, and computes the output size (floor).
kiln_status_t kiln_kernel_params_conv2d(const kiln_kernel_conv2d_attrs_t* attrs,
                                        float alpha, float beta,
                                        kiln_kernel_conv2d_params_t* out_params);
// True when the depthwise kernel applies (groups == C_in, C_out a multiple).
bool kiln_kernel_conv2d_is_depthwise(const kiln_kernel_conv2d_attrs_t* attrs);
// The kernel a Conv should use: gemm for 1x1 / stride 1 / unpadded /
// ungrouped (with kiln_kernel_params_conv1x1_as_gemm), depthwise_conv2d for
// depthwise, conv2d_gemm when the reduction (C_in/groups*KH*KW) and the
// channels per group are wide enough to fill its tiles, conv2d otherwise.
kiln_kernel_id_t kiln_kernel_conv2d_choose(const kiln_kernel_conv2d_attrs_t* attrs);
// ConvTranspose: output = stride*(in-1) + output_pad + (k-1)*dilation + 1
// - pads, per axis.
kiln_status_t kiln_kernel_params_conv_transpose2d(
    const kiln_kernel_conv2d_attrs_t* attrs, float alpha, float beta,
    kiln_kernel_conv2d_params_t* out_params);

// MaxPool / AveragePool attributes; planes = N * C.
typedef struct kiln_kernel_pool2d_attrs_t {
  int64_t planes, in_height, in_width, kernel_h, kernel_w, stride_h, stride_w;
  int64_t pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w;
  bool ceil_mode, count_include_pad;
} kiln_kernel_pool2d_attrs_t;
kiln_status_t kiln_kernel_params_pool2d(const kiln_kernel_pool2d_attrs_t* attrs,
                                        kiln_kernel_pool2d_params_t* out_params);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_KERNELS_PARAMS_H_
