// Data-movement kernels (strided copy as Transpose / Slice / Expand /
// Concat, Gather, Pad, Resize) on the test device against
// tests/spirv/reference. Moves are exact (compared bit for bit); linear
// Resize interpolates in fp32: atol 1e-6 + rtol 1e-5.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_test_util.h"
#include "kiln/compiler/kernels_params.h"
#include "kiln_test.h"
#include "reference/reference.h"

#define R6 KILN_KERNEL_MAX_RANK

static size_t product(const size_t* shape, size_t rank) {
  size_t n = 1;
  for (size_t d = 0; d < rank; ++d) n *= shape[d];
  return n;
}

static void to_dims(const size_t* shape, size_t rank, int64_t* dims) {
  for (size_t d = 0; d < rank; ++d) dims[d] = (int64_t)shape[d];
}

// Runs strided_copy from `x` (in_count values) into `out` (out_count
// values, initial contents kept) on `groups` workgroups (0: the emitter's
// linear grid).
static void run_strided_copy_on(const kiln_kernel_strided_copy_params_t* p, const float* x,
                                size_t in_count, float* out, size_t out_count,
                                uint32_t groups) {
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_STRIDED_COPY, KILN_KERNEL_STORAGE_FP32);
  uint32_t grid[3] = {groups, 1, 1};
  if (groups == 0) KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, p->count, grid));
  gpu_arg_t args[2] = {{x, in_count * 4}, {out, out_count * 4}};
  gpu_run(KILN_KERNEL_STRIDED_COPY, KILN_KERNEL_VARIANT_FP32, &config, p, sizeof(*p), args,
          2, 1, out, out_count * 4, grid);
}

static void run_strided_copy(const kiln_kernel_strided_copy_params_t* p, const float* x,
                             size_t in_count, float* out, size_t out_count) {
  run_strided_copy_on(p, x, in_count, out, out_count, 0);
}

KILN_TEST(GpuMovementTest, Transpose) {
  const size_t shape[] = {2, 3, 4, 5};
  const size_t perms[][4] = {{0, 2, 3, 1}, {3, 2, 1, 0}, {1, 0, 2, 3}};
  size_t count = product(shape, 4);
  float* x = gpu_random_alloc(count, 130, -1, 1);
  for (size_t t = 0; t < 3; ++t) {
    const size_t* perm = perms[t];
    int64_t dims[4], perm64[4];
    to_dims(shape, 4, dims);
    to_dims(perm, 4, perm64);
    kiln_kernel_strided_copy_params_t p;
    KILN_ASSERT_OK(kiln_kernel_params_transpose(dims, 4, perm64, &p));
    float* got = gpu_alloc(count);
    float* want = gpu_alloc(count);
    run_strided_copy(&p, x, count, got, count);
    ref_transpose(x, shape, 4, perm, want);
    KILN_EXPECT_BYTES_EQ(got, want, count * 4);
    free(got);
    free(want);
  }
  free(x);
}

// A grid far smaller than the copy: each invocation walks many elements
// by the grid stride, whose mixed-radix digits carry through every dim
// (rank 6, odd sizes, a permutation of all of them).
KILN_TEST(GpuMovementTest, TransposeGridStrideCarriesEveryDim) {
  const size_t shape[] = {3, 5, 2, 7, 3, 11};
  const size_t perm[] = {5, 3, 0, 4, 1, 2};
  const size_t count = product(shape, 6);
  float* x = gpu_random_alloc(count, 131, -1, 1);
  int64_t dims[6], perm64[6];
  to_dims(shape, 6, dims);
  to_dims(perm, 6, perm64);
  kiln_kernel_strided_copy_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_transpose(dims, 6, perm64, &p));
  kiln_kernel_config_t config = gpu_config(KILN_KERNEL_STRIDED_COPY, KILN_KERNEL_STORAGE_FP32);
  float* want = gpu_alloc(count);
  ref_transpose(x, shape, 6, perm, want);
  for (uint32_t groups = 1; groups <= 3; ++groups) {
    KILN_ASSERT_LT((uint64_t)groups * config.workgroup_size[0], (uint64_t)count);
    float* got = gpu_alloc(count);
    run_strided_copy_on(&p, x, count, got, count, groups);
    KILN_EXPECT_BYTES_EQ(got, want, count * 4);
    free(got);
  }
  free(want);
  free(x);
}

KILN_TEST(GpuMovementTest, SliceWithNegativeStep) {
  // x[1:3, ::-2, 1:6:2] of a [4, 7, 8] tensor.
  const size_t shape[] = {4, 7, 8};
  const int64_t starts[] = {1, 6, 1}, steps[] = {1, -2, 2};
  const size_t out_shape[] = {2, 4, 3};
  size_t in_count = product(shape, 3), out_count = product(out_shape, 3);
  float* x = gpu_random_alloc(in_count, 140, -1, 1);
  int64_t dims[3], out_dims[3];
  to_dims(shape, 3, dims);
  to_dims(out_shape, 3, out_dims);
  kiln_kernel_strided_copy_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_slice(dims, 3, starts, steps, out_dims, &p));
  float* got = gpu_alloc(out_count);
  float* want = gpu_alloc(out_count);
  run_strided_copy(&p, x, in_count, got, out_count);
  ref_slice(x, shape, 3, starts, steps, out_shape, want);
  KILN_EXPECT_BYTES_EQ(got, want, out_count * 4);
  free(x);
  free(got);
  free(want);
}

KILN_TEST(GpuMovementTest, Expand) {
  const size_t shape[] = {3, 1, 5}, out_shape[] = {3, 4, 5};
  size_t in_count = product(shape, 3), out_count = product(out_shape, 3);
  float* x = gpu_random_alloc(in_count, 150, -1, 1);
  int64_t dims[3], out_dims[3];
  to_dims(shape, 3, dims);
  to_dims(out_shape, 3, out_dims);
  kiln_kernel_strided_copy_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_expand(dims, 3, out_dims, 3, &p));
  float* got = gpu_alloc(out_count);
  float* want = gpu_alloc(out_count);
  run_strided_copy(&p, x, in_count, got, out_count);
  ref_expand(x, shape, 3, out_shape, want);
  KILN_EXPECT_BYTES_EQ(got, want, out_count * 4);
  free(x);
  free(got);
  free(want);
}

KILN_TEST(GpuMovementTest, ConcatAlongChannels) {
  // Three NCHW inputs with 2, 5 and 3 channels: one dispatch each, writing
  // its slab of the shared output.
  const size_t s0[] = {2, 2, 3, 4}, s1[] = {2, 5, 3, 4}, s2[] = {2, 3, 3, 4};
  const size_t* shapes[] = {s0, s1, s2};
  const size_t out_shape[] = {2, 10, 3, 4};
  size_t out_count = product(out_shape, 4);
  float* inputs[3];
  for (size_t t = 0; t < 3; ++t) {
    inputs[t] = gpu_random_alloc(product(shapes[t], 4), 160 + (uint32_t)t, -1, 1);
  }
  float* got = gpu_alloc(out_count);
  float* want = gpu_alloc(out_count);
  size_t channel = 0;
  for (size_t t = 0; t < 3; ++t) {
    int64_t dims[4];
    to_dims(shapes[t], 4, dims);
    kiln_kernel_strided_copy_params_t p;
    KILN_ASSERT_OK(kiln_kernel_params_concat_part(dims, 4, 1, (int64_t)out_shape[1],
                                                  (int64_t)channel, &p));
    run_strided_copy(&p, inputs[t], product(shapes[t], 4), got, out_count);
    channel += shapes[t][1];
  }
  ref_concat((const float* const*)inputs, shapes, 3, 4, 1, want);
  KILN_EXPECT_BYTES_EQ(got, want, out_count * 4);
  for (size_t t = 0; t < 3; ++t) free(inputs[t]);
  free(got);
  free(want);
}

KILN_TEST(GpuMovementTest, Gather) {
  const size_t shape[] = {5, 6, 7};
  const int32_t indices[] = {0, 4, -1, 2, 2, -6, 5};
  const size_t index_count = sizeof(indices) / sizeof(indices[0]);
  size_t in_count = product(shape, 3);
  float* x = gpu_random_alloc(in_count, 170, -1, 1);
  for (size_t axis = 0; axis < 3; ++axis) {
    size_t outer = product(shape, axis), inner = product(shape + axis + 1, 2 - axis);
    // -6 is out of range on axis 0 (size 5) and 2 (size 7 -> 1): both
    // kernel and reference are defined to write 0 / wrap as documented.
    size_t out_count = outer * index_count * inner;
    float* got = gpu_alloc(out_count);
    float* want = gpu_alloc(out_count);
    int64_t dims[3];
    to_dims(shape, 3, dims);
    kiln_kernel_gather_params_t p;
    KILN_ASSERT_OK(kiln_kernel_params_gather(dims, 3, (int64_t)axis - 3, (int64_t)index_count,
                                             &p));
    KILN_EXPECT_EQ(p.outer, outer);
    KILN_EXPECT_EQ(p.inner, inner);
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_GATHER, KILN_KERNEL_STORAGE_FP32);
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, out_count, grid));
    gpu_arg_t args[3] = {{x, in_count * 4}, {indices, sizeof(indices)}, {NULL, out_count * 4}};
    gpu_run(KILN_KERNEL_GATHER, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 3, 2,
            got, out_count * 4, grid);
    ref_gather(x, shape, 3, axis, indices, index_count, want);
    KILN_EXPECT_BYTES_EQ(got, want, out_count * 4);
    free(got);
    free(want);
  }
  free(x);
}

KILN_TEST(GpuMovementTest, PadAllModes) {
  const size_t shape[] = {1, 2, 5, 6};
  // begin pads then end pads; one negative (crop) end pad on W, and a C
  // pad of 3 > 2 channels (reflect wraps periodically).
  const int64_t pads[] = {0, 3, 2, 3, 0, 0, 3, -1};
  size_t in_count = product(shape, 4);
  size_t out_shape[4];
  for (size_t d = 0; d < 4; ++d) out_shape[d] = (size_t)((int64_t)shape[d] + pads[d] + pads[4 + d]);
  size_t out_count = product(out_shape, 4);
  float* x = gpu_random_alloc(in_count, 180, -1, 1);
  const char* names[] = {"constant", "reflect", "edge"};
  for (uint32_t mode = 0; mode < 3; ++mode) {
    int64_t dims[4];
    to_dims(shape, 4, dims);
    kiln_kernel_pad_params_t p;
    KILN_ASSERT_OK(kiln_kernel_params_pad(dims, 4, pads, 0.25f, &p));
    KILN_ASSERT_EQ(p.count, out_count);
    float* got = gpu_alloc(out_count);
    float* want = gpu_alloc(out_count);
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_PAD, KILN_KERNEL_STORAGE_FP32);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_PAD_MODE, mode));
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, out_count, grid));
    gpu_arg_t args[2] = {{x, in_count * 4}, {NULL, out_count * 4}};
    gpu_run(KILN_KERNEL_PAD, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 2, 1, got,
            out_count * 4, grid);
    ref_pad(x, shape, 4, pads, mode, 0.25f, want);
    if (memcmp(got, want, out_count * 4) != 0) KILN_ADD_FAILURE("pad %s differs", names[mode]);
    free(got);
    free(want);
  }
  free(x);
}

// conv_columns' push constants for the conv `r` (conv2d's; groups 1).
static kiln_kernel_conv2d_params_t conv_columns_params(const ref_conv2d_t* r) {
  kiln_kernel_conv2d_params_t p = {
      .batch = (uint32_t)r->batch, .in_channels = (uint32_t)r->in_channels,
      .in_height = (uint32_t)r->in_h, .in_width = (uint32_t)r->in_w,
      .out_channels = 1, .out_height = (uint32_t)ref_conv2d_out_h(r),
      .out_width = (uint32_t)ref_conv2d_out_w(r), .groups = 1,
      .kernel_h = (uint32_t)r->kernel_h, .kernel_w = (uint32_t)r->kernel_w,
      .stride_h = (uint32_t)r->stride_h, .stride_w = (uint32_t)r->stride_w,
      .pad_top = (uint32_t)r->pad_top, .pad_left = (uint32_t)r->pad_left,
      .dilation_h = (uint32_t)r->dilation_h, .dilation_w = (uint32_t)r->dilation_w};
  return p;
}

// conv_columns (gemm_coopmat's im2col) against ref_conv_columns, bit for
// bit: pads on every side (asymmetric too), strides, dilation, a 1x1
// stride-2 downsample, a 7x7 stem, rows whose P is not a multiple of 8
// (their tails must be zeroed over a poisoned buffer), a width of 1, and
// one workgroup walking the whole copy by the grid stride.
KILN_TEST(GpuMovementTest, ConvColumns) {
  // batch, in_channels, in_h, in_w, out_channels, groups, kernel_h, kernel_w,
  // stride_h, stride_w, pad_top, pad_left, pad_bottom, pad_right, dilation_h, dilation_w
  const ref_conv2d_t cases[] = {
      {2, 3, 9, 9, 1, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0},
      {1, 2, 10, 11, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0},
      {2, 4, 7, 7, 1, 1, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1, 0, 0},
      {1, 3, 15, 13, 1, 1, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 0, 0},
      {1, 2, 8, 9, 1, 1, 3, 2, 1, 1, 0, 1, 2, 0, 2, 3, 0, 0},
      {3, 1, 4, 1, 1, 1, 2, 1, 1, 1, 1, 0, 1, 0, 1, 1, 0, 0},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const ref_conv2d_t* r = &cases[i];
    const kiln_kernel_conv2d_params_t p = conv_columns_params(r);
    const size_t in_count = r->batch * r->in_channels * r->in_h * r->in_w;
    const size_t row = ((size_t)p.out_height * p.out_width + 7) / 8 * 8;
    const size_t count = r->batch * r->in_channels * r->kernel_h * r->kernel_w * row;
    float* x = gpu_random_alloc(in_count, 240 + (uint32_t)i, -1, 1);
    float* poison = gpu_alloc(count);
    for (size_t e = 0; e < count; ++e) poison[e] = 7.0f;
    float* want = gpu_alloc(count);
    ref_conv_columns(r, x, want);
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_CONV_COLUMNS, KILN_KERNEL_STORAGE_FP32);
    for (uint32_t one_group = 0; one_group < 2; ++one_group) {
      uint32_t grid[3] = {1, 1, 1};
      if (!one_group) KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, count / 8, grid));
      float* got = gpu_alloc(count);
      gpu_arg_t args[2] = {{x, in_count * 4}, {poison, count * 4}};
      gpu_run(KILN_KERNEL_CONV_COLUMNS, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args,
              2, 1, got, count * 4, grid);
      if (memcmp(got, want, count * 4) != 0) {
        KILN_ADD_FAILURE("conv_columns case %zu (%s grid) differs", i,
                         one_group ? "one-workgroup" : "linear");
      }
      free(got);
    }
    free(x);
    free(poison);
    free(want);
  }
}

KILN_TEST(GpuMovementTest, ResizeModes) {
  typedef struct {
    size_t in_h, in_w, out_h, out_w;
    uint32_t mode, coord, nearest;
  } resize_case_t;
  const resize_case_t cases[] = {
      // YOLO-style 2x nearest upsample (asymmetric, floor).
      {5, 6, 10, 12, KILN_RESIZE_NEAREST, KILN_RESIZE_COORD_ASYMMETRIC, KILN_RESIZE_NEAREST_FLOOR},
      {5, 6, 10, 12, KILN_RESIZE_NEAREST, KILN_RESIZE_COORD_HALF_PIXEL,
       KILN_RESIZE_NEAREST_ROUND_PREFER_FLOOR},
      {8, 8, 3, 5, KILN_RESIZE_NEAREST, KILN_RESIZE_COORD_HALF_PIXEL,
       KILN_RESIZE_NEAREST_ROUND_PREFER_CEIL},
      {4, 4, 7, 9, KILN_RESIZE_NEAREST, KILN_RESIZE_COORD_ALIGN_CORNERS, KILN_RESIZE_NEAREST_CEIL},
      {5, 6, 10, 12, KILN_RESIZE_LINEAR, KILN_RESIZE_COORD_HALF_PIXEL, 0},
      {5, 6, 9, 4, KILN_RESIZE_LINEAR, KILN_RESIZE_COORD_ALIGN_CORNERS, 0},
      {5, 6, 1, 13, KILN_RESIZE_LINEAR, KILN_RESIZE_COORD_PYTORCH_HALF_PIXEL, 0},
      {6, 6, 3, 3, KILN_RESIZE_LINEAR, KILN_RESIZE_COORD_ASYMMETRIC, 0},
      {4, 4, 3, 2, KILN_RESIZE_NEAREST, KILN_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN,
       KILN_RESIZE_NEAREST_ROUND_PREFER_FLOOR},
  };
  const size_t planes = 3;
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); ++i) {
    const resize_case_t* c = &cases[i];
    size_t in_count = planes * c->in_h * c->in_w, out_count = planes * c->out_h * c->out_w;
    float* x = gpu_random_alloc(in_count, 190 + (uint32_t)i, -1, 1);
    float* got = gpu_alloc(out_count);
    float* want = gpu_alloc(out_count);
    float scale_h = (float)c->out_h / (float)c->in_h, scale_w = (float)c->out_w / (float)c->in_w;
    kiln_kernel_resize_params_t p = {(uint32_t)planes, (uint32_t)c->in_h, (uint32_t)c->in_w,
                                     (uint32_t)c->out_h, (uint32_t)c->out_w, scale_h, scale_w};
    kiln_kernel_config_t config = gpu_config(KILN_KERNEL_RESIZE, KILN_KERNEL_STORAGE_FP32);
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_RESIZE_MODE, c->mode));
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_RESIZE_COORD, c->coord));
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_RESIZE_NEAREST, c->nearest));
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, out_count, grid));
    gpu_arg_t args[2] = {{x, in_count * 4}, {NULL, out_count * 4}};
    gpu_run(KILN_KERNEL_RESIZE, KILN_KERNEL_VARIANT_FP32, &config, &p, sizeof(p), args, 2, 1,
            got, out_count * 4, grid);
    ref_resize(x, planes, c->in_h, c->in_w, c->out_h, c->out_w, scale_h, scale_w, c->mode,
               c->coord, c->nearest, want);
    char what[48];
    snprintf(what, sizeof(what), "resize case %zu", i);
    gpu_expect_close(what, got, want, out_count, 1e-6, 1e-5);
    free(x);
    free(got);
    free(want);
  }
}
