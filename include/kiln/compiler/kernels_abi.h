// The ABI of every kernel in the library: binding order, push-constant
// structs (mirroring the GLSL blocks byte for byte; sizes are asserted here
// and checked against SPIR-V reflection by tests/spirv), and the dispatch
// grid formulas. All tensors are float32 (fp16 in the fp16-storage variants)
// and densely packed NCHW unless a kernel takes strides.
//
// Bindings are set 0, in the order listed; "ro" bindings are readonly. A
// kernel whose optional input is disabled by a spec constant (HAS_BIAS,
// HAS_RESIDUAL) still declares the binding: bind any buffer there.
#ifndef KILN_COMPILER_KERNELS_ABI_H_
#define KILN_COMPILER_KERNELS_ABI_H_

#include <stdint.h>

#include "kiln/compiler/kernels_codes.h"

#ifdef __cplusplus
extern "C" {
#endif

// Vulkan guarantees 128 bytes of push constants and no more.
#define KILN_KERNEL_MAX_PUSH_CONSTANT_BYTES 128
#define KILN_KERNEL_MAX_RANK 6
// Grid-stride kernels cap grid.x here (the Vulkan minimum of
// maxComputeWorkGroupCount[0]) and loop over the rest.
#define KILN_KERNEL_MAX_GRID_X 65535u
// Loop bounds (llvmpipe ends loops after a per-invocation pass budget):
// kiln/compiler/kernels_loops.h.
// Every binding is at most the target's storage-buffer range (128 MiB to
// 4 GiB; kiln_emit_add_dispatch), so a binding has at most 2^30 floats and
// grid-stride loops over 65535 workgroups run at most ceil(2^30 / 65535) =
// 16385 times.

// gemm: bindings 0 A (ro), 1 B (ro), 2 bias (ro), 3 residual (ro), 4 C.
// C[b][m][n] = act(scale * sum_k A[b][m][k] * B[b][k][n] + bias + residual)
// with A(b,m,k) = A[b*a_batch_stride + m*a_row_stride + k*a_col_stride],
// B(b,k,n) likewise, C and residual dense in n (column stride 1), bias
// addressed by its three strides (0 to broadcast: per-row bias of a 1x1
// conv is bias_row_stride = 1, others 0).
// Grid: (ceil(N / (WG_X*TN)), ceil(M / (WG_Y*TM)), batch).
// gemm_coopmat takes the same bindings and push constants; its grid is
// (ceil(N / BN), ceil(M / BM), batch), BN = WARPS_N*TILES_N*16 and BM =
// WARPS_M*TILES_M*16 (KILN_SPEC_COOPMAT_*).
// qgemm takes the same struct with B a quantized weight W [n][k]
// (kiln/compiler/quant.h): b_row_stride is the bytes of one W row,
// b_batch_stride bytes per batch (usually 0), b_col_stride unused; A has
// k contiguous (a_col_stride 1, row and batch strides multiples of 4).
// Grid: (ceil(N / WG_Y), ceil(M / TM), batch).
typedef struct kiln_kernel_gemm_params_t {
  uint32_t m, n, k, batch;
  uint32_t a_batch_stride, a_row_stride, a_col_stride;
  uint32_t b_batch_stride, b_row_stride, b_col_stride;
  uint32_t c_batch_stride, c_row_stride;
  uint32_t bias_batch_stride, bias_row_stride, bias_col_stride;
  uint32_t residual_batch_stride, residual_row_stride;
  float scale, alpha, beta;  // alpha/beta: activation parameters
} kiln_kernel_gemm_params_t;
_Static_assert(sizeof(kiln_kernel_gemm_params_t) == 80, "gemm push constants");

// conv2d, conv2d_gemm, depthwise_conv2d, conv_transpose2d: bindings 0 input (ro),
// 1 weight (ro), 2 bias (ro), 3 residual (ro), 4 output.
// y = act(conv(x, w) + bias + residual). Weights: conv2d and depthwise
// [C_out, C_in/groups, KH, KW]; conv_transpose2d [C_in, C_out/groups, KH, KW].
// pad_* are the begin pads; the end pads only shape the output.
// Grids: conv2d (ceil(OH*OW / WG_X), ceil(C_out / CO_BLOCK), N);
// conv2d_gemm (implicit GEMM, gemm's spec ids and tiling)
// (ceil(OH*OW / (WG_X*TN)), ceil(C_out/groups / (WG_Y*TM)), N*groups), its
// cpu variant (conv2d_cpu's blob) conv2d_cpu's grid;
// depthwise and transpose: linear over N*C_out*OH*OW (kiln_kernel_grid_linear).
// ci_* and kh_* select the part of the reduction one dispatch sums: input
// channels [ci_begin, ci_end) of each group and kernel rows [kh_begin,
// kh_end); an end of 0 means to the end. The bridge splits a reduction
// that would exceed KILN_KERNEL_LOOP_PASS_BUDGET (kernels_loops.h) into
// several dispatches accumulating into the output. conv2d_gemm takes a
// kh_* range only together with a single input channel.
typedef struct kiln_kernel_conv2d_params_t {
  uint32_t batch, in_channels, in_height, in_width;
  uint32_t out_channels, out_height, out_width, groups;
  uint32_t kernel_h, kernel_w, stride_h, stride_w;
  uint32_t pad_top, pad_left, dilation_h, dilation_w;
  float alpha, beta;
  uint32_t ci_begin, ci_end, kh_begin, kh_end;
} kiln_kernel_conv2d_params_t;
_Static_assert(sizeof(kiln_kernel_conv2d_params_t) == 88, "conv push constants");

// binary: bindings 0 A (ro), 1 B (ro), 2 out. out = act(A op B) with shapes
// right-aligned to rank 6 (leading 1s); a broadcast dim has stride 0.
// Grid: linear over count.
typedef struct kiln_kernel_binary_params_t {
  uint32_t count;
  uint32_t shape[KILN_KERNEL_MAX_RANK];
  uint32_t a_strides[KILN_KERNEL_MAX_RANK];
  uint32_t b_strides[KILN_KERNEL_MAX_RANK];
  float alpha, beta;
} kiln_kernel_binary_params_t;
_Static_assert(sizeof(kiln_kernel_binary_params_t) == 84, "binary push constants");

// unary: bindings 0 in (ro), 1 out. Grid: linear over count.
typedef struct kiln_kernel_unary_params_t {
  uint32_t count;
  float alpha, beta;
} kiln_kernel_unary_params_t;
_Static_assert(sizeof(kiln_kernel_unary_params_t) == 12, "unary push constants");

// quantize_dequantize: bindings 0 x, 1 scale, 2 zero point (float values;
// bound to the scale when has_zero_point is 0), 3 y. y = (clamp(round_even(
// x / scale) + zp, qmin, qmax) - zp) * scale, the channel of element i being
// (i / inner) % channels. Grid: linear over count.
typedef struct kiln_kernel_quantize_params_t {
  uint32_t count, inner, channels, has_zero_point;
  float qmin, qmax;
} kiln_kernel_quantize_params_t;
_Static_assert(sizeof(kiln_kernel_quantize_params_t) == 24, "quantize push constants");

// dynamic_quantize_params: bindings 0 min(x), 1 max(x) (one float each), 2
// scale, 3 zero point (one float each); qmax 255 (uint8). One invocation.
typedef struct kiln_kernel_dynamic_quantize_params_t {
  uint32_t qmax;
} kiln_kernel_dynamic_quantize_params_t;
_Static_assert(sizeof(kiln_kernel_dynamic_quantize_params_t) == 4,
               "dynamic quantize push constants");

// copy: bindings 0 in (ro), 1 out. Grid: linear over count.
typedef struct kiln_kernel_copy_params_t {
  uint32_t count;
} kiln_kernel_copy_params_t;
_Static_assert(sizeof(kiln_kernel_copy_params_t) == 4, "copy push constants");

// strided_copy: bindings 0 in (ro), 1 out. See strided_copy.comp for how
// Transpose, Slice, Expand and Concat map onto it. Grid: linear over count.
typedef struct kiln_kernel_strided_copy_params_t {
  uint32_t count;
  uint32_t shape[KILN_KERNEL_MAX_RANK];
  int32_t in_strides[KILN_KERNEL_MAX_RANK];
  uint32_t out_strides[KILN_KERNEL_MAX_RANK];
  int32_t in_offset;
  uint32_t out_offset;
} kiln_kernel_strided_copy_params_t;
_Static_assert(sizeof(kiln_kernel_strided_copy_params_t) == 84,
               "strided_copy push constants");

// pool2d: bindings 0 in (ro), 1 out. Grid: linear over planes*OH*OW.
// A window bigger than KILN_KERNEL_MAX_LOOP_ITERATIONS positions runs as
// several dispatches, each over the window tile rows [tile_h0, tile_h0 +
// tile_h) x columns [tile_w0, tile_w0 + tile_w) (tile_h 0: the whole
// window); a tile other than the first combines into the output.
typedef struct kiln_kernel_pool2d_params_t {
  uint32_t planes, in_height, in_width, out_height, out_width;
  uint32_t kernel_h, kernel_w, stride_h, stride_w;
  uint32_t pad_top, pad_left, pad_bottom, pad_right;
  uint32_t dilation_h, dilation_w, count_include_pad;
  uint32_t tile_h0, tile_w0, tile_h, tile_w;
} kiln_kernel_pool2d_params_t;
_Static_assert(sizeof(kiln_kernel_pool2d_params_t) == 80, "pool2d push constants");

// reduce: bindings 0 in (ro), 1 out; the tensor is viewed as
// [outer, size, inner] and the middle axis is reduced in chunks of `chunk`
// values (0: one chunk) to out[outer, chunks, inner]; mean divides by
// `divisor` (0: size). Grid: (min(outer*chunks*inner, 65535), 1, 1)
// workgroups (kiln_kernel_grid_rows).
typedef struct kiln_kernel_reduce_params_t {
  uint32_t outer, size, inner, chunk;
  float divisor;
} kiln_kernel_reduce_params_t;
_Static_assert(sizeof(kiln_kernel_reduce_params_t) == 20, "reduce push constants");

// softmax: bindings 0 in (ro), 1 out; [outer, size, inner] normalized along
// the middle axis. Grid: (min(outer*inner, 65535), 1, 1) workgroups.
typedef struct kiln_kernel_softmax_params_t {
  uint32_t outer, size, inner;
} kiln_kernel_softmax_params_t;
_Static_assert(sizeof(kiln_kernel_softmax_params_t) == 12, "softmax push constants");

// norm: bindings 0 in (ro), 1 scale (ro), 2 bias (ro), 3 out; norm_residual
// adds 4 residual (ro) and normalizes in + residual.
// Grid: (min(rows, 65535), 1, 1) workgroups.
typedef struct kiln_kernel_norm_params_t {
  uint32_t rows, size, channels;
  float epsilon;
} kiln_kernel_norm_params_t;
_Static_assert(sizeof(kiln_kernel_norm_params_t) == 16, "norm push constants");

// norm_parts: LayerNorm of a split-K product summed from its parts.
// Bindings 0 parts (ro; part s of element i at s * part_stride + i), 1 the
// weights span holding the product's bias and the norm's scale and beta at
// bias_at / scale_at / beta_at (ro), 2 residual (ro), 3 y, 4 the sum x.
// Grid: (min(rows, 65535), 1, 1) workgroups.
typedef struct kiln_kernel_norm_parts_params_t {
  uint32_t rows, size, part_count, part_stride;
  uint32_t bias_at, scale_at, beta_at;
  float epsilon;
} kiln_kernel_norm_parts_params_t;
_Static_assert(sizeof(kiln_kernel_norm_parts_params_t) == 32, "norm_parts push constants");

// squeeze_excite (squeeze_excite.comp): a squeeze-and-excitation block's
// global average pool and its two 1x1 convs over 1x1 images in one
// dispatch. Bindings 0 x [images][channels][pixels] (ro), 1 w1 [hidden]
// [channels] (ro), 2 b1 (ro), 3 w2 [channels][hidden] (ro), 4 b2 (ro), 5 s
// [images][channels], 6 partial sums (f32 [images][parts][channels]), 7 a
// counter per image, zero before the call. `chunk` pixels per part, `parts`
// parts per image. Grid: (images * ceil(channels / KILN_SE_GROUP_CHANNELS)
// * parts, 1, 1) workgroups.
typedef struct kiln_kernel_squeeze_excite_params_t {
  uint32_t images, channels, pixels, hidden;
  uint32_t chunk, parts;
  float alpha1, beta1, alpha2, beta2;  // of the two activations
} kiln_kernel_squeeze_excite_params_t;
_Static_assert(sizeof(kiln_kernel_squeeze_excite_params_t) == 40,
               "squeeze_excite push constants");

// rows_split (softmax and norms over long rows, three phases; see
// rows_split.comp): bindings 0 x (ro), 1 scale (ro), 2 bias (ro), 3 stats,
// 4 out. stats holds 3 floats per (row, chunk) then 2 per row. Grid: (min(
// items, 65535), 1, 1), items = rows*chunks (partial, apply) or rows.
typedef struct kiln_kernel_rows_split_params_t {
  uint32_t outer, size, inner, chunk, channels;
  float epsilon;
} kiln_kernel_rows_split_params_t;
_Static_assert(sizeof(kiln_kernel_rows_split_params_t) == 24, "rows_split push constants");

// gather: bindings 0 data (ro), 1 int32 indices (ro), 2 out.
// Grid: linear over outer*index_count*inner. axis_begin/axis_rows: the rows
// of the axis the data binding holds when a table is gathered in parts (0/0:
// all of it; see gather.comp).
typedef struct kiln_kernel_gather_params_t {
  uint32_t outer, axis_size, inner, index_count;
  uint32_t axis_begin, axis_rows;
} kiln_kernel_gather_params_t;
_Static_assert(sizeof(kiln_kernel_gather_params_t) == 24, "gather push constants");

// pad: bindings 0 in (ro), 1 out. Grid: linear over count (output values).
typedef struct kiln_kernel_pad_params_t {
  uint32_t count;
  uint32_t out_shape[KILN_KERNEL_MAX_RANK];
  uint32_t in_shape[KILN_KERNEL_MAX_RANK];
  int32_t pad_begin[KILN_KERNEL_MAX_RANK];
  float value;
} kiln_kernel_pad_params_t;
_Static_assert(sizeof(kiln_kernel_pad_params_t) == 80, "pad push constants");

// resize: bindings 0 in (ro), 1 out. Grid: linear over planes*OH*OW.
typedef struct kiln_kernel_resize_params_t {
  uint32_t planes, in_height, in_width, out_height, out_width;
  float scale_h, scale_w;
} kiln_kernel_resize_params_t;
_Static_assert(sizeof(kiln_kernel_resize_params_t) == 28, "resize push constants");

// attention (attention.comp): bindings 0 Q (ro; the scratch in the merge
// phase), 1 K (ro), 2 V (ro), 3 mask (ro), 4 O (the scratch in the partial
// phase). Q(b,h,i,d) = Q[q_off + b*q_sb + h*q_sh + i*q_ss + d], K, V and O
// likewise, mask(b,h,i,j) = mask[b*m_sb + h*m_sh + i*m_si + j*m_sj].
// Keys [c*key_chunk, (c+1)*key_chunk) per chunk c < chunks.
// Grid: (ceil(sq / WG_X), heads, batch * chunks) (merge: batch).
typedef struct kiln_kernel_attention_params_t {
  uint32_t batch, heads, sq, sk, d, dv;
  float scale;
  uint32_t key_chunk, chunks;
  uint32_t q_off, q_sb, q_sh, q_ss;
  uint32_t k_off, k_sb, k_sh, k_ss;
  uint32_t v_off, v_sb, v_sh, v_ss;
  uint32_t o_off, o_sb, o_sh, o_ss;
  uint32_t m_sb, m_sh, m_si, m_sj;
} kiln_kernel_attention_params_t;
_Static_assert(sizeof(kiln_kernel_attention_params_t) == 116, "attention push constants");
// recurrent (ONNX LSTM / GRU / RNN, recurrent.comp): steps [step_begin,
// step_end) of the time loop, h (and c) carried in `state` between
// dispatches. Bindings 0 gx (ro): X.W^T + Wb for every (direction, t, b),
// GH = gates * hidden floats each, at d * gx_d + t * gx_t + b * gx_b;
// 1 params (ro, read as vec4): R per direction as [GH][hidden4] (columns
// past hidden are zero) at r_offset + d * GH * hidden4 (r_offset % 4 == 0), Rb per direction [GH] at rb_offset,
// lengths (uint bits) at lens_offset, peepholes at p_offset; 2 state: h at d * state_d +
// b * state_b, c at c_offset past it; 3 y: Y at d * y_d + t * y_t + b * y_b.
// Grid: (directions * batch, 1, 1), one workgroup per (d, b).
typedef struct kiln_kernel_recurrent_params_t {
  uint32_t batch, hidden, hidden4, seq, step_begin, step_end, flags;
  uint32_t gx_d, gx_t, gx_b;
  uint32_t r_offset, rb_offset, lens_offset;
  uint32_t state_d, state_b, c_offset;
  uint32_t y_d, y_t, y_b;
  float clip;
  float alpha[3], beta[3];  // of activations f, g, h
  uint32_t p_offset;  // LSTM peepholes [D][3 * hidden] (i, o, f) with KILN_RNN_FLAG_PEEPHOLE
} kiln_kernel_recurrent_params_t;
_Static_assert(sizeof(kiln_kernel_recurrent_params_t) == 108, "recurrent push constants");

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_KERNELS_ABI_H_
