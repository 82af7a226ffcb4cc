// Plain C reference implementations of the kernel library's ops, written
// from the ONNX operator definitions with their own (ONNX-shaped)
// parameters rather than the kernels' ABI structs, and accumulating in
// double. GPU results are compared against these.
#ifndef KILN_TESTS_SPIRV_REFERENCE_H_
#define KILN_TESTS_SPIRV_REFERENCE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define REF_MAX_RANK 6

// Activation by code (kernels_codes.h KILN_ACT_*), in double.
double ref_activation(uint32_t code, double x, double alpha, double beta);

// out[b] = act(scale * op(A[b]) op(B[b]) + bias + residual), where
// op(A) is M x K (A stored K x M when trans_a), op(B) is K x N (B stored
// N x K when trans_b). bias: NULL, or per-row [M] (bias_per_row) or
// per-column [N], shared by all batches; residual: NULL or [batch, M, N].
// a_batch / b_batch false means one matrix broadcast over the batch.
void ref_gemm(size_t batch, size_t m, size_t n, size_t k, const float* a,
              bool a_batched, bool trans_a, const float* b, bool b_batched,
              bool trans_b, float scale, const float* bias, bool bias_per_row,
              const float* residual, uint32_t act, float alpha, float beta,
              float* out);

typedef struct ref_conv2d_t {
  size_t batch, in_channels, in_h, in_w, out_channels, groups;
  size_t kernel_h, kernel_w, stride_h, stride_w;
  size_t pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w;
  size_t output_pad_h, output_pad_w;  // ConvTranspose only
} ref_conv2d_t;

size_t ref_conv2d_out_h(const ref_conv2d_t* c);
size_t ref_conv2d_out_w(const ref_conv2d_t* c);
// Weights [C_out, C_in/groups, KH, KW]; bias [C_out] or NULL; residual like
// the output or NULL. out = act(conv + bias + residual).
void ref_conv2d(const ref_conv2d_t* c, const float* x, const float* w,
                const float* bias, const float* residual, uint32_t act,
                float alpha, float beta, float* out);

// The conv's windows as GEMM columns (groups 1): out[n][c][i][j][p] = x at
// output pixel p's window tap (i, j), 0 in the pad; rows of out_h * out_w
// padded with zeros to a multiple of 8 (conv_columns.comp's layout).
void ref_conv_columns(const ref_conv2d_t* c, const float* x, float* out);

size_t ref_conv_transpose2d_out_h(const ref_conv2d_t* c);
size_t ref_conv_transpose2d_out_w(const ref_conv2d_t* c);
// Scatter form (as ONNX defines it), weights [C_in, C_out/groups, KH, KW].
void ref_conv_transpose2d(const ref_conv2d_t* c, const float* x, const float* w,
                          const float* bias, uint32_t act, float alpha,
                          float beta, float* out);

// Numpy-broadcast binary op (KILN_BINARY_*), then activation.
// Shapes of rank <= 6; out_shape is written (rank = max of ranks).
void ref_binary(uint32_t op, const float* a, const size_t* a_shape,
                size_t a_rank, const float* b, const size_t* b_shape,
                size_t b_rank, uint32_t act, float alpha, float beta,
                float* out);

typedef struct ref_pool2d_t {
  size_t planes, in_h, in_w, kernel_h, kernel_w, stride_h, stride_w;
  size_t pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w;
  bool count_include_pad;
  bool ceil_mode;  // output size rounds up; a window starting in the end
                   // padding or beyond is dropped
} ref_pool2d_t;
size_t ref_pool2d_out_h(const ref_pool2d_t* p);
size_t ref_pool2d_out_w(const ref_pool2d_t* p);
void ref_max_pool2d(const ref_pool2d_t* p, const float* x, float* out);
void ref_avg_pool2d(const ref_pool2d_t* p, const float* x, float* out);

// Over the middle axis of [outer, size, inner]; op KILN_REDUCE_*.
void ref_reduce(uint32_t op, size_t outer, size_t size, size_t inner,
                const float* x, float* out);
void ref_softmax(bool log_softmax, size_t outer, size_t size, size_t inner,
                 const float* x, float* out);
// LayerNorm over the last `size` values of each of `rows` rows.
void ref_layer_norm(size_t rows, size_t size, const float* x, const float* scale,
                    const float* bias, float epsilon, float* out);
// InstanceNorm over H*W of each (n, c).
void ref_instance_norm(size_t batch, size_t channels, size_t spatial,
                       const float* x, const float* scale, const float* bias,
                       float epsilon, float* out);

// Data movement.
void ref_transpose(const float* x, const size_t* shape, size_t rank,
                   const size_t* perm, float* out);
// ONNX Slice with already-clamped starts/ends per axis and nonzero steps.
void ref_slice(const float* x, const size_t* shape, size_t rank,
               const int64_t* starts, const int64_t* steps,
               const size_t* out_shape, float* out);
void ref_concat(const float* const* inputs, const size_t* const* shapes,
                size_t count, size_t rank, size_t axis, float* out);
void ref_expand(const float* x, const size_t* shape, size_t rank,
                const size_t* out_shape, float* out);
// Gather along `axis`: out shape is shape[:axis] + [index_count] + shape[axis+1:].
void ref_gather(const float* x, const size_t* shape, size_t rank, size_t axis,
                const int32_t* indices, size_t index_count, float* out);
// ONNX Pad: mode 0 constant, 1 reflect, 2 edge; pads[begin..., end...].
void ref_pad(const float* x, const size_t* shape, size_t rank,
             const int64_t* pads, uint32_t mode, float value, float* out);
// ONNX Resize on NCHW spatial axes; mode/coord/nearest per kernels_codes.h.
void ref_resize(const float* x, size_t planes, size_t in_h, size_t in_w,
                size_t out_h, size_t out_w, float scale_h, float scale_w,
                uint32_t mode, uint32_t coord, uint32_t nearest, float* out);

#endif  // KILN_TESTS_SPIRV_REFERENCE_H_
