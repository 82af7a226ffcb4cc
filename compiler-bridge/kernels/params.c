// Push-constant builders from ONNX-shaped descriptions (kernels_params.h).
#include <string.h>

#include "kiln/compiler/kernels_params.h"

#define R6 KILN_KERNEL_MAX_RANK

// Checks a shape: rank <= 6, dims >= 0, element count < 2^32.
static kiln_status_t kiln_params_check_dims(const char* what, const int64_t* dims,
                                            size_t rank, uint64_t* out_count) {
  *out_count = 0;
  if (rank > R6) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "%s: rank %zu exceeds the kernels' %d", what, rank, R6);
  }
  if (rank > 0 && !dims) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: NULL dims", what);
  }
  uint64_t count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (dims[d] < 0 || dims[d] > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "%s: dim %zu is %lld", what, d, (long long)dims[d]);
    }
    count *= (uint64_t)dims[d];
    if (count > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "%s: more than 2^32-1 elements exceed the kernels' "
                              "32-bit indexing",
                              what);
    }
  }
  *out_count = count;
  return kiln_ok_status();
}

// Right-aligns `dims` into 6 dims (leading 1s) with dense strides.
static void kiln_params_align(const int64_t* dims, size_t rank, int64_t out_dims[R6],
                              int64_t out_strides[R6]) {
  for (size_t d = 0; d < R6; ++d) out_dims[d] = 1;
  for (size_t d = 0; d < rank; ++d) out_dims[R6 - rank + d] = dims[d];
  int64_t stride = 1;
  for (size_t d = R6; d-- > 0;) {
    out_strides[d] = stride;
    stride *= out_dims[d];
  }
}

kiln_status_t kiln_kernel_params_binary(const int64_t* a_dims, size_t a_rank,
                                        const int64_t* b_dims, size_t b_rank,
                                        float alpha, float beta,
                                        kiln_kernel_binary_params_t* out_params,
                                        int64_t* out_dims, size_t* out_rank) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  if (out_rank) *out_rank = 0;
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "binary: NULL out_params");
  }
  uint64_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("binary input a", a_dims, a_rank, &count));
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("binary input b", b_dims, b_rank, &count));
  int64_t ad[R6], as[R6], bd[R6], bs[R6], od[R6];
  kiln_params_align(a_dims, a_rank, ad, as);
  kiln_params_align(b_dims, b_rank, bd, bs);
  for (size_t d = 0; d < R6; ++d) {
    if (ad[d] != bd[d] && ad[d] != 1 && bd[d] != 1) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "binary: dims %lld and %lld do not broadcast (axis %zu "
                              "from the end)",
                              (long long)ad[d], (long long)bd[d], R6 - 1 - d);
    }
    // A 0-sized dim wins over 1 (numpy).
    od[d] = ad[d] == 1 ? bd[d] : ad[d];
  }
  size_t rank = a_rank > b_rank ? a_rank : b_rank;
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("binary output", od + R6 - rank, rank, &count));
  for (size_t d = 0; d < R6; ++d) {
    out_params->shape[d] = (uint32_t)od[d];
    out_params->a_strides[d] = (ad[d] == 1 && od[d] != 1) ? 0 : (uint32_t)as[d];
    out_params->b_strides[d] = (bd[d] == 1 && od[d] != 1) ? 0 : (uint32_t)bs[d];
  }
  out_params->count = (uint32_t)count;
  out_params->alpha = alpha;
  out_params->beta = beta;
  if (out_dims) memcpy(out_dims, od + R6 - rank, rank * sizeof(int64_t));
  if (out_rank) *out_rank = rank;
  return kiln_ok_status();
}

// Fills a strided copy over `shape` (rank dims, right-aligned) with the
// given per-dim input/output strides and offsets.
static kiln_status_t kiln_params_strided(const char* what, const int64_t* shape,
                                         size_t rank, const int64_t* in_strides,
                                         int64_t in_offset, const int64_t* out_strides,
                                         int64_t out_offset,
                                         kiln_kernel_strided_copy_params_t* p) {
  uint64_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_params_check_dims(what, shape, rank, &count));
  for (size_t d = 0; d < R6; ++d) p->shape[d] = 1;
  for (size_t d = 0; d < rank; ++d) {
    size_t at = R6 - rank + d;
    if (in_strides[d] < INT32_MIN || in_strides[d] > INT32_MAX ||
        out_strides[d] < 0 || out_strides[d] > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "%s: stride of dim %zu too large",
                              what, d);
    }
    p->shape[at] = (uint32_t)shape[d];
    p->in_strides[at] = (int32_t)in_strides[d];
    p->out_strides[at] = (uint32_t)out_strides[d];
  }
  if (in_offset < 0 || in_offset > INT32_MAX || out_offset < 0 || out_offset > UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "%s: offset out of range", what);
  }
  p->count = (uint32_t)count;
  p->in_offset = (int32_t)in_offset;
  p->out_offset = (uint32_t)out_offset;
  return kiln_ok_status();
}

static void kiln_params_dense(const int64_t* dims, size_t rank, int64_t* strides) {
  int64_t stride = 1;
  for (size_t d = rank; d-- > 0;) {
    strides[d] = stride;
    stride *= dims[d];
  }
}

kiln_status_t kiln_kernel_params_transpose(
    const int64_t* dims, size_t rank, const int64_t* perm,
    kiln_kernel_strided_copy_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params || (rank && !perm)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "transpose: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("transpose input", dims, rank, &count));
  int64_t in_dense[R6], out_dims[R6], in_strides[R6], out_strides[R6];
  bool seen[R6] = {false};
  kiln_params_dense(dims, rank, in_dense);
  for (size_t d = 0; d < rank; ++d) {
    if (perm[d] < 0 || (size_t)perm[d] >= rank || seen[perm[d]]) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "transpose: perm[%zu] = %lld is not a permutation of "
                              "0..%zu",
                              d, (long long)perm[d], rank - 1);
    }
    seen[perm[d]] = true;
    out_dims[d] = dims[perm[d]];
    in_strides[d] = in_dense[perm[d]];
  }
  kiln_params_dense(out_dims, rank, out_strides);
  return kiln_params_strided("transpose", out_dims, rank, in_strides, 0, out_strides, 0,
                             out_params);
}

kiln_status_t kiln_kernel_params_slice(
    const int64_t* dims, size_t rank, const int64_t* starts,
    const int64_t* steps, const int64_t* out_dims,
    kiln_kernel_strided_copy_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params || (rank && (!starts || !steps || !out_dims))) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "slice: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("slice input", dims, rank, &count));
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("slice output", out_dims, rank, &count));
  int64_t dense[R6], in_strides[R6], out_strides[R6];
  kiln_params_dense(dims, rank, dense);
  kiln_params_dense(out_dims, rank, out_strides);
  int64_t offset = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (steps[d] == 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "slice: step of axis %zu is 0", d);
    }
    if (out_dims[d] > 0) {
      // First and last index read along this axis must be inside.
      int64_t last = starts[d] + (out_dims[d] - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= dims[d] || last < 0 || last >= dims[d]) {
        return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "slice: axis %zu reads %lld..%lld of a dim of %lld", d,
                                (long long)starts[d], (long long)last, (long long)dims[d]);
      }
    }
    in_strides[d] = dense[d] * steps[d];
    offset += (out_dims[d] > 0 ? starts[d] : 0) * dense[d];
  }
  return kiln_params_strided("slice", out_dims, rank, in_strides, offset, out_strides, 0,
                             out_params);
}

kiln_status_t kiln_kernel_params_expand(
    const int64_t* dims, size_t rank, const int64_t* out_dims, size_t out_rank,
    kiln_kernel_strided_copy_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "expand: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("expand input", dims, rank, &count));
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("expand output", out_dims, out_rank, &count));
  if (rank > out_rank) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "expand: input rank %zu above output rank %zu", rank, out_rank);
  }
  int64_t dense[R6], in_strides[R6], out_strides[R6];
  kiln_params_dense(dims, rank, dense);
  kiln_params_dense(out_dims, out_rank, out_strides);
  for (size_t d = 0; d < out_rank; ++d) {
    size_t from_end = out_rank - d;
    if (from_end > rank) {
      in_strides[d] = 0;
      continue;
    }
    size_t src = rank - from_end;
    if (dims[src] != out_dims[d] && dims[src] != 1) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "expand: input dim %zu (%lld) cannot become %lld", src,
                              (long long)dims[src], (long long)out_dims[d]);
    }
    in_strides[d] = dims[src] == 1 ? 0 : dense[src];
  }
  return kiln_params_strided("expand", out_dims, out_rank, in_strides, 0, out_strides, 0,
                             out_params);
}

kiln_status_t kiln_kernel_params_concat_part(
    const int64_t* dims, size_t rank, size_t axis, int64_t out_axis_size,
    int64_t axis_offset, kiln_kernel_strided_copy_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "concat: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("concat input", dims, rank, &count));
  if (axis >= rank) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "concat: axis %zu of rank %zu",
                            axis, rank);
  }
  if (axis_offset < 0 || axis_offset + dims[axis] > out_axis_size) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "concat: slab %lld..%lld outside the output's %lld",
                            (long long)axis_offset, (long long)(axis_offset + dims[axis]),
                            (long long)out_axis_size);
  }
  int64_t out_dims[R6], in_strides[R6], out_strides[R6];
  memcpy(out_dims, dims, rank * sizeof(int64_t));
  out_dims[axis] = out_axis_size;
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("concat output", out_dims, rank, &count));
  kiln_params_dense(dims, rank, in_strides);
  kiln_params_dense(out_dims, rank, out_strides);
  return kiln_params_strided("concat", dims, rank, in_strides, 0, out_strides,
                             axis_offset * out_strides[axis], out_params);
}

static kiln_status_t kiln_params_check_sizes(const char* what, const int64_t* values,
                                             size_t count) {
  uint64_t product = 1;
  for (size_t i = 0; i < count; ++i) {
    if (values[i] <= 0 || values[i] > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: size %zu is %lld", what,
                              i, (long long)values[i]);
    }
    product *= (uint64_t)values[i];
    if (product > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "%s: sizes exceed the kernels' 32-bit indexing", what);
    }
  }
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_conv1x1_as_gemm(
    int64_t batch, int64_t in_channels, int64_t spatial, int64_t out_channels,
    float alpha, float beta, kiln_kernel_gemm_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "conv1x1: NULL out_params");
  }
  const int64_t in_sizes[] = {batch, in_channels, spatial};
  const int64_t out_sizes[] = {batch, out_channels, spatial};
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes("conv1x1 input", in_sizes, 3));
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes("conv1x1 output", out_sizes, 3));
  kiln_kernel_gemm_params_t* p = out_params;
  p->m = (uint32_t)out_channels;
  p->n = (uint32_t)spatial;
  p->k = (uint32_t)in_channels;
  p->batch = (uint32_t)batch;
  p->a_row_stride = (uint32_t)in_channels;
  p->a_col_stride = 1;
  p->b_batch_stride = (uint32_t)(in_channels * spatial);
  p->b_row_stride = (uint32_t)spatial;
  p->b_col_stride = 1;
  p->c_batch_stride = (uint32_t)(out_channels * spatial);
  p->c_row_stride = (uint32_t)spatial;
  p->bias_row_stride = 1;
  p->residual_batch_stride = p->c_batch_stride;
  p->residual_row_stride = p->c_row_stride;
  p->scale = 1.0f;
  p->alpha = alpha;
  p->beta = beta;
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_matmul(int64_t batch, int64_t a_batch,
                                        int64_t b_batch, int64_t m, int64_t n,
                                        int64_t k, int trans_a, int trans_b,
                                        float scale,
                                        kiln_kernel_gemm_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "matmul: NULL out_params");
  }
  const int64_t a_sizes[] = {batch, m, k}, b_sizes[] = {batch, k, n}, c_sizes[] = {batch, m, n};
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes("matmul a", a_sizes, 3));
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes("matmul b", b_sizes, 3));
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes("matmul output", c_sizes, 3));
  if ((a_batch != 1 && a_batch != batch) || (b_batch != 1 && b_batch != batch)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "matmul: batches %lld and %lld do not broadcast to %lld",
                            (long long)a_batch, (long long)b_batch, (long long)batch);
  }
  kiln_kernel_gemm_params_t* p = out_params;
  p->m = (uint32_t)m;
  p->n = (uint32_t)n;
  p->k = (uint32_t)k;
  p->batch = (uint32_t)batch;
  p->a_batch_stride = a_batch == 1 ? 0 : (uint32_t)(m * k);
  p->a_row_stride = trans_a ? 1 : (uint32_t)k;
  p->a_col_stride = trans_a ? (uint32_t)m : 1;
  p->b_batch_stride = b_batch == 1 ? 0 : (uint32_t)(k * n);
  p->b_row_stride = trans_b ? 1 : (uint32_t)n;
  p->b_col_stride = trans_b ? (uint32_t)k : 1;
  p->c_batch_stride = (uint32_t)(m * n);
  p->c_row_stride = (uint32_t)n;
  p->bias_col_stride = 1;  // a row-vector bias, broadcast over m and batch
  p->residual_batch_stride = p->c_batch_stride;
  p->residual_row_stride = p->c_row_stride;
  p->scale = scale;
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_pad(const int64_t* dims, size_t rank,
                                     const int64_t* pads, float value,
                                     kiln_kernel_pad_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params || (rank && !pads)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "pad: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("pad input", dims, rank, &count));
  int64_t out_dims[R6];
  for (size_t d = 0; d < rank; ++d) {
    out_dims[d] = dims[d] + pads[d] + pads[rank + d];
    if (out_dims[d] < 0) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "pad: axis %zu crops below zero (%lld + %lld + %lld)", d,
                              (long long)dims[d], (long long)pads[d],
                              (long long)pads[rank + d]);
    }
    if (pads[d] < INT32_MIN || pads[d] > INT32_MAX) {
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "pad: pad of axis %zu too large", d);
    }
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("pad output", out_dims, rank, &count));
  for (size_t d = 0; d < R6; ++d) out_params->out_shape[d] = out_params->in_shape[d] = 1;
  for (size_t d = 0; d < rank; ++d) {
    size_t at = R6 - rank + d;
    out_params->out_shape[at] = (uint32_t)out_dims[d];
    out_params->in_shape[at] = (uint32_t)dims[d];
    out_params->pad_begin[at] = (int32_t)pads[d];
  }
  out_params->count = (uint32_t)count;
  out_params->value = value;
  return kiln_ok_status();
}

// Each value in 1..2^32-1 (attributes: no product limit).
static kiln_status_t kiln_params_check_positive(const char* what, const int64_t* values,
                                                size_t count) {
  for (size_t i = 0; i < count; ++i) {
    if (values[i] <= 0 || values[i] > UINT32_MAX) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: attribute %zu is %lld",
                              what, i, (long long)values[i]);
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_params_check_conv(const char* what,
                                            const kiln_kernel_conv2d_attrs_t* a) {
  const int64_t positive[] = {a->batch, a->in_channels, a->in_height, a->in_width,
                              a->out_channels, a->groups, a->kernel_h, a->kernel_w,
                              a->stride_h, a->stride_w, a->dilation_h, a->dilation_w};
  KILN_RETURN_IF_ERROR(
      kiln_params_check_positive(what, positive, sizeof(positive) / sizeof(positive[0])));
  const int64_t pads[] = {a->pad_top, a->pad_left, a->pad_bottom, a->pad_right,
                          a->output_pad_h, a->output_pad_w};
  for (size_t i = 0; i < 6; ++i) {
    if (pads[i] < 0 || pads[i] > INT32_MAX) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: pad %zu is %lld", what, i,
                              (long long)pads[i]);
    }
  }
  if (a->in_channels % a->groups || a->out_channels % a->groups) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "%s: channels %lld -> %lld do not divide into %lld groups", what,
                            (long long)a->in_channels, (long long)a->out_channels,
                            (long long)a->groups);
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_params_conv_fill(const char* what,
                                           const kiln_kernel_conv2d_attrs_t* a,
                                           int64_t out_h, int64_t out_w, float alpha,
                                           float beta, kiln_kernel_conv2d_params_t* p) {
  if (out_h < 1 || out_w < 1) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: output %lldx%lld is empty",
                            what, (long long)out_h, (long long)out_w);
  }
  const int64_t out_sizes[] = {a->batch, a->out_channels, out_h, out_w};
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes(what, out_sizes, 4));
  const int64_t in_sizes[] = {a->batch, a->in_channels, a->in_height, a->in_width};
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes(what, in_sizes, 4));
  *p = (kiln_kernel_conv2d_params_t){
      (uint32_t)a->batch,      (uint32_t)a->in_channels, (uint32_t)a->in_height,
      (uint32_t)a->in_width,   (uint32_t)a->out_channels, (uint32_t)out_h,
      (uint32_t)out_w,         (uint32_t)a->groups,      (uint32_t)a->kernel_h,
      (uint32_t)a->kernel_w,   (uint32_t)a->stride_h,    (uint32_t)a->stride_w,
      (uint32_t)a->pad_top,    (uint32_t)a->pad_left,    (uint32_t)a->dilation_h,
      (uint32_t)a->dilation_w, alpha,                    beta};
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_conv2d(const kiln_kernel_conv2d_attrs_t* attrs,
                                        float alpha, float beta,
                                        kiln_kernel_conv2d_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  if (!attrs || !out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "conv2d: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_conv("conv2d", attrs));
  int64_t span_h = attrs->dilation_h * (attrs->kernel_h - 1) + 1;
  int64_t span_w = attrs->dilation_w * (attrs->kernel_w - 1) + 1;
  int64_t padded_h = attrs->in_height + attrs->pad_top + attrs->pad_bottom;
  int64_t padded_w = attrs->in_width + attrs->pad_left + attrs->pad_right;
  int64_t out_h = padded_h < span_h ? 0 : (padded_h - span_h) / attrs->stride_h + 1;
  int64_t out_w = padded_w < span_w ? 0 : (padded_w - span_w) / attrs->stride_w + 1;
  return kiln_params_conv_fill("conv2d", attrs, out_h, out_w, alpha, beta, out_params);
}

bool kiln_kernel_conv2d_is_depthwise(const kiln_kernel_conv2d_attrs_t* attrs) {
  return attrs && attrs->groups > 1 && attrs->groups == attrs->in_channels &&
         attrs->out_channels % attrs->in_channels == 0;
}

kiln_kernel_id_t kiln_kernel_conv2d_choose(const kiln_kernel_conv2d_attrs_t* a) {
  if (a->kernel_h == 1 && a->kernel_w == 1 && a->stride_h == 1 && a->stride_w == 1 &&
      a->pad_top == 0 && a->pad_left == 0 && a->pad_bottom == 0 && a->pad_right == 0 &&
      a->groups == 1) {
    return KILN_KERNEL_GEMM;
  }
  if (kiln_kernel_conv2d_is_depthwise(a)) return KILN_KERNEL_DEPTHWISE_CONV2D;
  // Below ~16 on either side most of a 64-wide tile would be padding.
  int64_t reduction = a->groups ? a->in_channels / a->groups * a->kernel_h * a->kernel_w : 0;
  int64_t channels = a->groups ? a->out_channels / a->groups : 0;
  if (reduction >= 16 && channels >= 16) return KILN_KERNEL_CONV2D_GEMM;
  return KILN_KERNEL_CONV2D;
}

kiln_status_t kiln_kernel_params_conv_transpose2d(
    const kiln_kernel_conv2d_attrs_t* attrs, float alpha, float beta,
    kiln_kernel_conv2d_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  if (!attrs || !out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "conv_transpose2d: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_conv("conv_transpose2d", attrs));
  int64_t out_h = attrs->stride_h * (attrs->in_height - 1) + attrs->output_pad_h +
                  (attrs->kernel_h - 1) * attrs->dilation_h + 1 - attrs->pad_top -
                  attrs->pad_bottom;
  int64_t out_w = attrs->stride_w * (attrs->in_width - 1) + attrs->output_pad_w +
                  (attrs->kernel_w - 1) * attrs->dilation_w + 1 - attrs->pad_left -
                  attrs->pad_right;
  return kiln_params_conv_fill("conv_transpose2d", attrs, out_h, out_w, alpha, beta,
                               out_params);
}

kiln_status_t kiln_kernel_params_pool2d(const kiln_kernel_pool2d_attrs_t* a,
                                        kiln_kernel_pool2d_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  if (!a || !out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "pool2d: NULL argument");
  }
  const int64_t positive[] = {a->planes,   a->in_height, a->in_width,   a->kernel_h,
                              a->kernel_w, a->stride_h,  a->stride_w,   a->dilation_h,
                              a->dilation_w};
  KILN_RETURN_IF_ERROR(kiln_params_check_positive("pool2d", positive, 9));
  const int64_t in_sizes[] = {a->planes, a->in_height, a->in_width};
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes("pool2d input", in_sizes, 3));
  const int64_t pads[] = {a->pad_top, a->pad_left, a->pad_bottom, a->pad_right};
  const int64_t kernel[] = {a->kernel_h, a->kernel_w, a->kernel_h, a->kernel_w};
  for (size_t i = 0; i < 4; ++i) {
    // ONNX: a pad must be smaller than the kernel, so no window is all pad.
    if (pads[i] < 0 || pads[i] >= kernel[i]) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "pool2d: pad %zu is %lld for a kernel of %lld", i,
                              (long long)pads[i], (long long)kernel[i]);
    }
  }
  int64_t span_h = a->dilation_h * (a->kernel_h - 1) + 1;
  int64_t span_w = a->dilation_w * (a->kernel_w - 1) + 1;
  int64_t padded_h = a->in_height + a->pad_top + a->pad_bottom - span_h;
  int64_t padded_w = a->in_width + a->pad_left + a->pad_right - span_w;
  if (padded_h < 0 || padded_w < 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "pool2d: window larger than input");
  }
  int64_t out_h = (padded_h + (a->ceil_mode ? a->stride_h - 1 : 0)) / a->stride_h + 1;
  int64_t out_w = (padded_w + (a->ceil_mode ? a->stride_w - 1 : 0)) / a->stride_w + 1;
  // ceil_mode: a last window starting past the padded input is dropped.
  if (a->ceil_mode && (out_h - 1) * a->stride_h >= a->in_height + a->pad_top) --out_h;
  if (a->ceil_mode && (out_w - 1) * a->stride_w >= a->in_width + a->pad_left) --out_w;
  const int64_t out_sizes[] = {a->planes, out_h, out_w};
  KILN_RETURN_IF_ERROR(kiln_params_check_sizes("pool2d output", out_sizes, 3));
  *out_params = (kiln_kernel_pool2d_params_t){
      (uint32_t)a->planes,     (uint32_t)a->in_height,  (uint32_t)a->in_width,
      (uint32_t)out_h,         (uint32_t)out_w,         (uint32_t)a->kernel_h,
      (uint32_t)a->kernel_w,   (uint32_t)a->stride_h,   (uint32_t)a->stride_w,
      (uint32_t)a->pad_top,    (uint32_t)a->pad_left,   (uint32_t)a->pad_bottom,
      (uint32_t)a->pad_right,  (uint32_t)a->dilation_h, (uint32_t)a->dilation_w,
      a->count_include_pad ? 1u : 0u};
  return kiln_ok_status();
}

// Normalizes a possibly negative axis; INVALID_ARGUMENT when out of range.
static kiln_status_t kiln_params_axis(const char* what, int64_t axis, size_t rank,
                                      size_t* out_axis) {
  int64_t normalized = axis < 0 ? axis + (int64_t)rank : axis;
  if (normalized < 0 || normalized >= (int64_t)rank) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%s: axis %lld of rank %zu", what,
                            (long long)axis, rank);
  }
  *out_axis = (size_t)normalized;
  return kiln_ok_status();
}

static uint64_t kiln_params_product(const int64_t* dims, size_t begin, size_t end) {
  uint64_t product = 1;
  for (size_t d = begin; d < end; ++d) product *= (uint64_t)dims[d];
  return product;
}

kiln_status_t kiln_kernel_params_axes(const int64_t* dims, size_t rank,
                                      const int64_t* axes, size_t axis_count,
                                      kiln_kernel_reduce_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params || (axis_count && !axes)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "axes: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("axes input", dims, rank, &count));
  bool selected[R6] = {false};
  for (size_t i = 0; i < axis_count; ++i) {
    size_t axis = 0;
    KILN_RETURN_IF_ERROR(kiln_params_axis("axes", axes[i], rank, &axis));
    selected[axis] = true;
  }
  if (axis_count == 0) {
    for (size_t d = 0; d < rank; ++d) selected[d] = true;
  }
  size_t first = rank, last = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (!selected[d]) continue;
    if (first == rank) first = d;
    last = d;
  }
  if (first == rank) {  // rank 0: a scalar reduces to itself
    out_params->outer = out_params->size = out_params->inner = 1;
    return kiln_ok_status();
  }
  for (size_t d = first; d <= last; ++d) {
    if (!selected[d]) {
      return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                              "axes: %zu..%zu are not adjacent (axis %zu is kept); "
                              "transpose them together first",
                              first, last, d);
    }
  }
  out_params->outer = (uint32_t)kiln_params_product(dims, 0, first);
  out_params->size = (uint32_t)kiln_params_product(dims, first, last + 1);
  out_params->inner = (uint32_t)kiln_params_product(dims, last + 1, rank);
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_layer_norm(const int64_t* dims, size_t rank,
                                            int64_t axis, float epsilon,
                                            kiln_kernel_norm_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "layer_norm: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("layer_norm input", dims, rank, &count));
  size_t first = 0;
  KILN_RETURN_IF_ERROR(kiln_params_axis("layer_norm", axis, rank, &first));
  out_params->rows = (uint32_t)kiln_params_product(dims, 0, first);
  out_params->size = (uint32_t)kiln_params_product(dims, first, rank);
  out_params->channels = 1;
  out_params->epsilon = epsilon;
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_instance_norm(const int64_t* dims, size_t rank,
                                               float epsilon,
                                               kiln_kernel_norm_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "instance_norm: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("instance_norm input", dims, rank, &count));
  if (rank < 3 || dims[1] == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "instance_norm: needs [N, C, spatial...] with C > 0, got rank %zu",
                            rank);
  }
  out_params->rows = (uint32_t)(dims[0] * dims[1]);
  out_params->size = (uint32_t)kiln_params_product(dims, 2, rank);
  out_params->channels = (uint32_t)dims[1];
  out_params->epsilon = epsilon;
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_gather(const int64_t* dims, size_t rank,
                                        int64_t axis, int64_t index_count,
                                        kiln_kernel_gather_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "gather: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("gather data", dims, rank, &count));
  size_t a = 0;
  KILN_RETURN_IF_ERROR(kiln_params_axis("gather", axis, rank, &a));
  uint64_t outer = kiln_params_product(dims, 0, a);
  uint64_t inner = kiln_params_product(dims, a + 1, rank);
  if (index_count < 0 || (uint64_t)index_count * outer * inner > UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "gather: %lld indices exceed the kernels' 32-bit indexing",
                            (long long)index_count);
  }
  out_params->outer = (uint32_t)outer;
  out_params->axis_size = (uint32_t)dims[a];
  out_params->inner = (uint32_t)inner;
  out_params->index_count = (uint32_t)index_count;
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_params_resize(const int64_t* dims, size_t rank,
                                        int64_t out_h, int64_t out_w,
                                        float scale_h, float scale_w,
                                        kiln_kernel_resize_params_t* out_params) {
  if (out_params) memset(out_params, 0, sizeof(*out_params));
  uint64_t count = 0;
  if (!out_params) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "resize: NULL argument");
  }
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("resize input", dims, rank, &count));
  if (rank != 4 || count == 0) {
    return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                            "resize: only non-empty NCHW (rank 4) is supported, got rank %zu",
                            rank);
  }
  const int64_t out_dims[] = {dims[0], dims[1], out_h, out_w};
  KILN_RETURN_IF_ERROR(kiln_params_check_dims("resize output", out_dims, 4, &count));
  if (out_h == 0 || out_w == 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "resize: empty output");
  }
  out_params->planes = (uint32_t)(dims[0] * dims[1]);
  out_params->in_height = (uint32_t)dims[2];
  out_params->in_width = (uint32_t)dims[3];
  out_params->out_height = (uint32_t)out_h;
  out_params->out_width = (uint32_t)out_w;
  out_params->scale_h = scale_h > 0 ? scale_h : (float)out_h / (float)dims[2];
  out_params->scale_w = scale_w > 0 ? scale_w : (float)out_w / (float)dims[3];
  return kiln_ok_status();
}

uint32_t kiln_kernel_reduce_step_op(uint32_t op, bool first, bool last, bool stage_last) {
  switch (op) {
    case KILN_REDUCE_MEAN: return stage_last ? op : KILN_REDUCE_SUM;
    case KILN_REDUCE_SUM_ABS:
    case KILN_REDUCE_SUM_SQUARE: return first ? op : KILN_REDUCE_SUM;
    case KILN_REDUCE_L2:
      return first ? (last ? op : KILN_REDUCE_SUM_SQUARE)
                   : (last ? KILN_REDUCE_SQRT_SUM : KILN_REDUCE_SUM);
    case KILN_REDUCE_SQRT_SUM:
    case KILN_REDUCE_LOG_SUM: return last ? op : KILN_REDUCE_SUM;
    default: return op;
  }
}
