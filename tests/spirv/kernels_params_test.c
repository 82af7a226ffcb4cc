// Push-constant builders: exact strides for hand-worked cases and the
// rejection of bad shapes. (Their results drive real kernels in
// tests/spirv/gpu, compared against the references.)
#include <string.h>

#include "kiln/compiler/kernels_params.h"
#include "kiln_test.h"

KILN_TEST(KernelParamsTest, BinaryBroadcastStrides) {
  const int64_t a[] = {2, 3, 4}, b[] = {3, 1};
  kiln_kernel_binary_params_t p;
  int64_t out[6];
  size_t rank = 0;
  KILN_ASSERT_OK(kiln_kernel_params_binary(a, 3, b, 2, 0.5f, 2.0f, &p, out, &rank));
  KILN_EXPECT_EQ(rank, 3);
  KILN_EXPECT_EQ(out[0], 2);
  KILN_EXPECT_EQ(out[2], 4);
  KILN_EXPECT_EQ(p.count, 24);
  const uint32_t shape[6] = {1, 1, 1, 2, 3, 4};
  const uint32_t a_strides[6] = {24, 24, 24, 12, 4, 1};
  const uint32_t b_strides[6] = {3, 3, 3, 0, 1, 0};
  KILN_EXPECT_BYTES_EQ(p.shape, shape, sizeof(shape));
  KILN_EXPECT_BYTES_EQ(p.a_strides, a_strides, sizeof(a_strides));
  KILN_EXPECT_BYTES_EQ(p.b_strides, b_strides, sizeof(b_strides));
  KILN_EXPECT_NEAR(p.beta, 2.0, 0);
}

KILN_TEST(KernelParamsTest, BinaryRejectsBadShapes) {
  const int64_t a[] = {2, 3}, b[] = {4}, big[] = {1 << 20, 1 << 20}, neg[] = {-1};
  const int64_t r7[] = {1, 1, 1, 1, 1, 1, 1};
  kiln_kernel_binary_params_t p;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "dims 3 and 4 do not broadcast",
                             kiln_kernel_params_binary(a, 2, b, 1, 0, 0, &p, NULL, NULL));
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_kernel_params_binary(big, 2, b, 0, 0, 0, &p, NULL, NULL));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "dim 0 is -1",
                             kiln_kernel_params_binary(neg, 1, b, 1, 0, 0, &p, NULL, NULL));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, "rank 7",
                             kiln_kernel_params_binary(r7, 7, b, 1, 0, 0, &p, NULL, NULL));
  KILN_EXPECT_EQ(p.count, 0);  // cleared on failure
}

KILN_TEST(KernelParamsTest, TransposeSliceExpandConcat) {
  const int64_t dims[] = {2, 3, 4};
  kiln_kernel_strided_copy_params_t p;
  const int64_t perm[] = {2, 0, 1};
  KILN_ASSERT_OK(kiln_kernel_params_transpose(dims, 3, perm, &p));
  KILN_EXPECT_EQ(p.shape[3], 4);
  KILN_EXPECT_EQ(p.in_strides[3], 1);
  KILN_EXPECT_EQ(p.in_strides[4], 12);
  KILN_EXPECT_EQ(p.in_strides[5], 4);
  KILN_EXPECT_EQ(p.out_strides[3], 6);
  const int64_t bad_perm[] = {0, 0, 1};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "not a permutation",
                             kiln_kernel_params_transpose(dims, 3, bad_perm, &p));

  // x[:, 2::-1, 3] -> out dims {2, 3, 1}: offset 2*4 + 3, strides {12, -4, 1}.
  const int64_t starts[] = {0, 2, 3}, steps[] = {1, -1, 1}, out_dims[] = {2, 3, 1};
  KILN_ASSERT_OK(kiln_kernel_params_slice(dims, 3, starts, steps, out_dims, &p));
  KILN_EXPECT_EQ(p.in_offset, 11);
  KILN_EXPECT_EQ(p.in_strides[4], -4);
  KILN_EXPECT_EQ(p.count, 6);
  const int64_t too_far[] = {2, 4, 1};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "axis 1 reads 2..-1",
                             kiln_kernel_params_slice(dims, 3, starts, steps, too_far, &p));
  const int64_t zero_step[] = {1, 0, 1};
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_kernel_params_slice(dims, 3, starts, zero_step, out_dims, &p));

  const int64_t small[] = {3, 1}, big[] = {5, 3, 7};
  KILN_ASSERT_OK(kiln_kernel_params_expand(small, 2, big, 3, &p));
  KILN_EXPECT_EQ(p.in_strides[3], 0);
  KILN_EXPECT_EQ(p.in_strides[4], 1);
  KILN_EXPECT_EQ(p.in_strides[5], 0);
  const int64_t wrong[] = {5, 4, 7};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "cannot become 4",
                             kiln_kernel_params_expand(small, 2, wrong, 3, &p));

  KILN_ASSERT_OK(kiln_kernel_params_concat_part(dims, 3, 1, 10, 5, &p));
  KILN_EXPECT_EQ(p.out_offset, 20);  // 5 * (4)
  KILN_EXPECT_EQ(p.out_strides[3], 40);
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_kernel_params_concat_part(dims, 3, 1, 10, 8, &p));
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_kernel_params_concat_part(dims, 3, 3, 10, 0, &p));
}

KILN_TEST(KernelParamsTest, GemmAndPad) {
  kiln_kernel_gemm_params_t g;
  KILN_ASSERT_OK(kiln_kernel_params_conv1x1_as_gemm(2, 16, 49, 32, 0, 6, &g));
  KILN_EXPECT_EQ(g.m, 32);
  KILN_EXPECT_EQ(g.k, 16);
  KILN_EXPECT_EQ(g.b_batch_stride, 16 * 49);
  KILN_EXPECT_EQ(g.a_batch_stride, 0);
  KILN_EXPECT_EQ(g.bias_row_stride, 1);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_kernel_params_conv1x1_as_gemm(0, 16, 49, 32, 0, 0, &g));
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_kernel_params_matmul(4, 2, 4, 3, 3, 3, 0, 0, 1, &g));
  KILN_ASSERT_OK(kiln_kernel_params_matmul(4, 1, 4, 3, 5, 7, 1, 0, 1, &g));
  KILN_EXPECT_EQ(g.a_row_stride, 1);
  KILN_EXPECT_EQ(g.a_col_stride, 3);
  KILN_EXPECT_EQ(g.a_batch_stride, 0);

  const int64_t dims[] = {1, 3, 4}, pads[] = {0, 1, -1, 0, 2, 3};
  kiln_kernel_pad_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_pad(dims, 3, pads, 1.5f, &p));
  KILN_EXPECT_EQ(p.out_shape[4], 6);
  KILN_EXPECT_EQ(p.out_shape[5], 6);
  KILN_EXPECT_EQ(p.pad_begin[5], -1);
  KILN_EXPECT_EQ(p.count, 36);
  const int64_t crop[] = {0, 0, -3, 0, 0, -2};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "crops below zero",
                             kiln_kernel_params_pad(dims, 3, crop, 0, &p));
}

KILN_TEST(KernelParamsTest, ConvAndPoolBuilders) {
  // ResNet stem: 224x224, 7x7 stride 2 pad 3 -> 112x112.
  kiln_kernel_conv2d_attrs_t conv = {1, 3, 224, 224, 64, 1, 7, 7, 2, 2, 3, 3, 3, 3, 1, 1, 0, 0};
  kiln_kernel_conv2d_params_t p;
  KILN_ASSERT_OK(kiln_kernel_params_conv2d(&conv, 0, 6, &p));
  KILN_EXPECT_EQ(p.out_height, 112);
  KILN_EXPECT_EQ(p.out_width, 112);
  KILN_EXPECT_NEAR(p.beta, 6, 0);
  KILN_EXPECT_FALSE(kiln_kernel_conv2d_is_depthwise(&conv));
  // The stem has 3*7*7 = 147 reduction terms and 64 channels: implicit GEMM.
  KILN_EXPECT_EQ(kiln_kernel_conv2d_choose(&conv), KILN_KERNEL_CONV2D_GEMM);
  kiln_kernel_conv2d_attrs_t pointwise = {1, 32, 56, 56, 64, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1,
                                          0, 0};
  KILN_EXPECT_EQ(kiln_kernel_conv2d_choose(&pointwise), KILN_KERNEL_GEMM);
  pointwise.stride_h = pointwise.stride_w = 2;  // strided 1x1 (ResNet downsample)
  KILN_EXPECT_EQ(kiln_kernel_conv2d_choose(&pointwise), KILN_KERNEL_CONV2D_GEMM);
  kiln_kernel_conv2d_attrs_t narrow = {1, 8, 16, 16, 4, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  KILN_EXPECT_EQ(kiln_kernel_conv2d_choose(&narrow), KILN_KERNEL_CONV2D);
  kiln_kernel_conv2d_attrs_t dw = {1, 32, 112, 112, 32, 32, 3, 3, 2, 2, 0, 0, 1, 1, 1, 1, 0, 0};
  KILN_ASSERT_OK(kiln_kernel_params_conv2d(&dw, 0, 0, &p));
  KILN_EXPECT_EQ(p.out_height, 56);  // (112 + 1 - 3) / 2 + 1
  KILN_EXPECT_TRUE(kiln_kernel_conv2d_is_depthwise(&dw));
  KILN_EXPECT_EQ(kiln_kernel_conv2d_choose(&dw), KILN_KERNEL_DEPTHWISE_CONV2D);
  conv.groups = 2;  // 3 input channels do not split in two
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "do not divide into 2 groups",
                             kiln_kernel_params_conv2d(&conv, 0, 0, &p));
  conv.groups = 1;
  conv.in_height = 3;  // 3 + 6 < 7? no: 9 >= 7 -> 2 rows; shrink pads
  conv.pad_top = conv.pad_bottom = 0;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "is empty",
                             kiln_kernel_params_conv2d(&conv, 0, 0, &p));
  conv.stride_h = 0;
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT, kiln_kernel_params_conv2d(&conv, 0, 0, &p));

  // ConvTranspose 2x upsample: (5 - 1) * 2 + 1 + 3 + 1 - 2 = 11.
  kiln_kernel_conv2d_attrs_t up = {1, 8, 5, 5, 4, 1, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 1, 0};
  KILN_ASSERT_OK(kiln_kernel_params_conv_transpose2d(&up, 0, 0, &p));
  KILN_EXPECT_EQ(p.out_height, 11);
  KILN_EXPECT_EQ(p.out_width, 10);

  kiln_kernel_pool2d_attrs_t pool = {64, 112, 112, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, false, false};
  kiln_kernel_pool2d_params_t q;
  KILN_ASSERT_OK(kiln_kernel_params_pool2d(&pool, &q));
  KILN_EXPECT_EQ(q.out_height, 56);
  pool.ceil_mode = true;
  pool.in_height = 8;
  pool.pad_top = pool.pad_bottom = 0;  // (8 - 3) / 2 rounds up: 3 + 1 = 4
  KILN_ASSERT_OK(kiln_kernel_params_pool2d(&pool, &q));
  KILN_EXPECT_EQ(q.out_height, 4);
  pool.pad_left = 3;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "pad 1 is 3 for a kernel of 3",
                             kiln_kernel_params_pool2d(&pool, &q));
}

KILN_TEST(KernelParamsTest, AxesNormGatherResize) {
  const int64_t dims[] = {2, 3, 4, 5};
  kiln_kernel_reduce_params_t r;
  const int64_t hw[] = {-1, 2, 3};  // duplicates and negatives
  KILN_ASSERT_OK(kiln_kernel_params_axes(dims, 4, hw, 3, &r));
  KILN_EXPECT_EQ(r.outer, 6);
  KILN_EXPECT_EQ(r.size, 20);
  KILN_EXPECT_EQ(r.inner, 1);
  const int64_t middle[] = {1};
  KILN_ASSERT_OK(kiln_kernel_params_axes(dims, 4, middle, 1, &r));
  KILN_EXPECT_EQ(r.outer, 2);
  KILN_EXPECT_EQ(r.size, 3);
  KILN_EXPECT_EQ(r.inner, 20);
  KILN_ASSERT_OK(kiln_kernel_params_axes(dims, 4, NULL, 0, &r));
  KILN_EXPECT_EQ(r.size, 120);
  const int64_t apart[] = {0, 2};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, "not adjacent",
                             kiln_kernel_params_axes(dims, 4, apart, 2, &r));
  const int64_t bad[] = {4};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "axis 4 of rank 4",
                             kiln_kernel_params_axes(dims, 4, bad, 1, &r));

  kiln_kernel_norm_params_t n;
  KILN_ASSERT_OK(kiln_kernel_params_layer_norm(dims, 4, -2, 1e-5f, &n));
  KILN_EXPECT_EQ(n.rows, 6);
  KILN_EXPECT_EQ(n.size, 20);
  KILN_ASSERT_OK(kiln_kernel_params_instance_norm(dims, 4, 1e-5f, &n));
  KILN_EXPECT_EQ(n.rows, 6);
  KILN_EXPECT_EQ(n.channels, 3);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_kernel_params_instance_norm(dims, 2, 1e-5f, &n));

  kiln_kernel_gather_params_t g;
  KILN_ASSERT_OK(kiln_kernel_params_gather(dims, 4, -3, 7, &g));
  KILN_EXPECT_EQ(g.outer, 2);
  KILN_EXPECT_EQ(g.axis_size, 3);
  KILN_EXPECT_EQ(g.inner, 20);
  KILN_EXPECT_EQ(g.index_count, 7);

  kiln_kernel_resize_params_t z;
  KILN_ASSERT_OK(kiln_kernel_params_resize(dims, 4, 8, 15, 0, 0, &z));
  KILN_EXPECT_EQ(z.planes, 6);
  KILN_EXPECT_NEAR(z.scale_h, 2.0, 0);
  KILN_EXPECT_NEAR(z.scale_w, 3.0, 0);
  KILN_ASSERT_OK(kiln_kernel_params_resize(dims, 4, 8, 15, 2.1f, 3.2f, &z));
  KILN_EXPECT_NEAR(z.scale_w, 3.2, 1e-6);
  KILN_EXPECT_STATUS(KILN_STATUS_UNIMPLEMENTED,
                     kiln_kernel_params_resize(dims, 3, 8, 15, 0, 0, &z));
}
