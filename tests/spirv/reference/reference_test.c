// Known-answer tests of the references themselves, mostly from the examples
// in the ONNX operator documentation, so the GPU comparisons rest on
// checked ground. Tolerance 1e-6 (values are printed with 7-8 digits).
#include "kiln/compiler/kernels_codes.h"
#include "kiln_test.h"
#include "reference.h"

static void expect_all_near(const float* got, const float* want, size_t n) {
  for (size_t i = 0; i < n; ++i) KILN_EXPECT_NEAR(got[i], want[i], 1e-6);
}

KILN_TEST(ReferenceTest, Gemm) {
  const float a[] = {1, 2, 3, 4}, b[] = {5, 6, 7, 8}, bias[] = {10, 20};
  float out[4];
  ref_gemm(1, 2, 2, 2, a, true, false, b, true, false, 1, NULL, false, NULL,
           KILN_ACT_NONE, 0, 0, out);
  const float want[] = {19, 22, 43, 50};
  expect_all_near(out, want, 4);
  // A^T B^T with a per-row bias, scale 2, then Relu of (x - 100).
  ref_gemm(1, 2, 2, 2, a, true, true, b, true, true, 2, bias, true, NULL,
           KILN_ACT_NONE, 0, 0, out);
  // A^T = [[1,3],[2,4]], B^T = [[5,7],[6,8]] -> [[23,31],[34,46]].
  const float want_t[] = {56, 72, 88, 112};
  expect_all_near(out, want_t, 4);
}

KILN_TEST(ReferenceTest, Conv2d) {
  float x[9];
  for (int i = 0; i < 9; ++i) x[i] = (float)(i + 1);
  const float w[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  ref_conv2d_t c = {1, 1, 3, 3, 1, 1, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0};
  KILN_ASSERT_EQ(ref_conv2d_out_h(&c), 2);
  float out[4];
  ref_conv2d(&c, x, w, NULL, NULL, KILN_ACT_NONE, 0, 0, out);
  const float want[] = {12, 16, 24, 28};
  expect_all_near(out, want, 4);
}

KILN_TEST(ReferenceTest, ConvTransposeOnnxExample) {
  // ONNX ConvTranspose example: X 1x1x3x3 = 0..8, W 1x2x3x3 of ones.
  float x[9], w[18], out[50];
  for (int i = 0; i < 9; ++i) x[i] = (float)i;
  for (int i = 0; i < 18; ++i) w[i] = 1;
  ref_conv2d_t c = {1, 1, 3, 3, 2, 1, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
  KILN_ASSERT_EQ(ref_conv_transpose2d_out_h(&c), 5);
  ref_conv_transpose2d(&c, x, w, NULL, KILN_ACT_NONE, 0, 0, out);
  const float want[25] = {0, 1, 3,  3,  2,  3, 8,  15, 12, 7,  9, 21, 36,
                          27, 15, 9, 20, 33, 24, 13, 6, 13, 21, 15, 8};
  expect_all_near(out, want, 25);
  expect_all_near(out + 25, want, 25);
}

KILN_TEST(ReferenceTest, ActivationSpotValues) {
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_GELU, 1, 0, 0), 0.8413447, 1e-6);
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_ERF, 0.5, 0, 0), 0.5204999, 1e-6);
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_SOFTPLUS, 0, 0, 0), 0.6931472, 1e-6);
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_HARD_SWISH, 1, 0, 0), 0.6666667, 1e-6);
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_ELU, -1, 1, 0), -0.6321206, 1e-6);
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_HARD_SIGMOID, 1, 0.2, 0.5), 0.7, 1e-6);
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_CLIP, 7, 0, 6), 6, 0);
  KILN_EXPECT_NEAR(ref_activation(KILN_ACT_LEAKY_RELU, -2, 0.1, 0), -0.2, 1e-9);
}

KILN_TEST(ReferenceTest, BinaryBroadcast) {
  const float a[] = {1, 2, 3, 4, 5, 6}, b[] = {10, 20, 30};
  const size_t as[] = {2, 3}, bs[] = {3};
  float out[6];
  ref_binary(KILN_BINARY_SUB, a, as, 2, b, bs, 1, KILN_ACT_NONE, 0, 0, out);
  const float want[] = {-9, -18, -27, -6, -15, -24};
  expect_all_near(out, want, 6);
}

KILN_TEST(ReferenceTest, Pooling) {
  float x[16];
  for (int i = 0; i < 16; ++i) x[i] = (float)(i + 1);
  ref_pool2d_t p = {1, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, false};
  float out[9];
  ref_max_pool2d(&p, x, out);
  const float want_max[] = {6, 8, 14, 16};
  expect_all_near(out, want_max, 4);
  ref_pool2d_t avg = {1, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, true};
  ref_avg_pool2d(&avg, x, out);  // x[0..8] = 1..9
  KILN_EXPECT_NEAR(out[0], 12.0 / 9.0, 1e-6);
  KILN_EXPECT_NEAR(out[4], 5.0, 1e-6);
  avg.count_include_pad = false;
  ref_avg_pool2d(&avg, x, out);
  KILN_EXPECT_NEAR(out[0], 3.0, 1e-6);
  // ceil_mode: 4x4 with 2x2 windows at stride 3 gives 2x2, the second
  // windows cut to one row / column.
  ref_pool2d_t ceil = {1, 4, 4, 2, 2, 3, 3, 0, 0, 0, 0, 1, 1, false, true};
  KILN_ASSERT_EQ(ref_pool2d_out_h(&ceil), 2);
  ref_max_pool2d(&ceil, x, out);
  const float want_ceil[] = {6, 8, 14, 16};
  expect_all_near(out, want_ceil, 4);
}

KILN_TEST(ReferenceTest, SoftmaxAndNorm) {
  const float x[] = {1, 2, 3};
  float out[4];
  ref_softmax(false, 1, 3, 1, x, out);
  const float want[] = {0.09003057f, 0.24472847f, 0.66524096f};
  expect_all_near(out, want, 3);
  ref_softmax(true, 1, 3, 1, x, out);
  KILN_EXPECT_NEAR(out[2], -0.40760596, 1e-6);
  const float y[] = {1, 2, 3, 4}, ones[] = {1, 1, 1, 1}, zeros[] = {0, 0, 0, 0};
  ref_layer_norm(1, 4, y, ones, zeros, 0, out);
  const float want_norm[] = {-1.3416408f, -0.4472136f, 0.4472136f, 1.3416408f};
  expect_all_near(out, want_norm, 4);
  ref_reduce(KILN_REDUCE_MEAN, 1, 4, 1, y, out);
  KILN_EXPECT_NEAR(out[0], 2.5, 1e-6);
}

KILN_TEST(ReferenceTest, PadOnnxExamples) {
  const float x[] = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f};
  const size_t shape[] = {3, 2};
  const int64_t pads[] = {0, 2, 0, 0};
  float out[12];
  ref_pad(x, shape, 2, pads, KILN_PAD_REFLECT, 0, out);
  const float want_reflect[] = {1.0f, 1.2f, 1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f,
                                4.5f, 5.7f, 4.5f, 5.7f};
  expect_all_near(out, want_reflect, 12);
  ref_pad(x, shape, 2, pads, KILN_PAD_EDGE, 0, out);
  const float want_edge[] = {1.0f, 1.0f, 1.0f, 1.2f, 2.3f, 2.3f, 2.3f, 3.4f,
                             4.5f, 4.5f, 4.5f, 5.7f};
  expect_all_near(out, want_edge, 12);
  ref_pad(x, shape, 2, pads, KILN_PAD_CONSTANT, 0, out);
  const float want_constant[] = {0, 0, 1.0f, 1.2f, 0, 0, 2.3f, 3.4f, 0, 0, 4.5f, 5.7f};
  expect_all_near(out, want_constant, 12);
}

KILN_TEST(ReferenceTest, ResizeOnnxExamples) {
  const float x[] = {1, 2, 3, 4};
  float out[24];
  // resize_upsample_scales_nearest: scales (2, 3), half_pixel, prefer floor.
  ref_resize(x, 1, 2, 2, 4, 6, 2, 3, KILN_RESIZE_NEAREST, KILN_RESIZE_COORD_HALF_PIXEL,
             KILN_RESIZE_NEAREST_ROUND_PREFER_FLOOR, out);
  const float want_nearest[] = {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4};
  expect_all_near(out, want_nearest, 24);
  // resize_upsample_scales_linear: scales (2, 2), half_pixel.
  ref_resize(x, 1, 2, 2, 4, 4, 2, 2, KILN_RESIZE_LINEAR, KILN_RESIZE_COORD_HALF_PIXEL, 0, out);
  const float want_linear[] = {1, 1.25f, 1.75f, 2, 1.5f, 1.75f, 2.25f, 2.5f,
                               2.5f, 2.75f, 3.25f, 3.5f, 3, 3.25f, 3.75f, 4};
  expect_all_near(out, want_linear, 16);
}

KILN_TEST(ReferenceTest, GatherTransposeSlice) {
  const float data[] = {1.0f, 1.2f, 2.3f, 3.4f, 4.5f, 5.7f};
  const size_t shape[] = {3, 2};
  const int32_t indices[] = {0, 1, 1, 2};
  float out[8];
  ref_gather(data, shape, 2, 0, indices, 4, out);
  const float want[] = {1.0f, 1.2f, 2.3f, 3.4f, 2.3f, 3.4f, 4.5f, 5.7f};
  expect_all_near(out, want, 8);
  const size_t perm[] = {1, 0};
  ref_transpose(data, shape, 2, perm, out);
  const float want_t[] = {1.0f, 2.3f, 4.5f, 1.2f, 3.4f, 5.7f};
  expect_all_near(out, want_t, 6);
  const int64_t starts[] = {2, 1}, steps[] = {-1, 1};
  const size_t out_shape[] = {3, 1};
  ref_slice(data, shape, 2, starts, steps, out_shape, out);
  const float want_s[] = {5.7f, 3.4f, 1.2f};
  expect_all_near(out, want_s, 3);
}
