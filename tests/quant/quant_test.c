// The quantized weight layouts against hand-computed GGUF blocks (bytes
// and values worked out in the comments), and pack -> unpack round trips
// within each layout's step.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/quant.h"
#include "kiln_test.h"

KILN_TEST(QuantTest, Q8_0BlockBytes) {
  // max|x| = 127 gives d = 1.0 (fp16 0x3c00) and q = x.
  float x[32], back[32];
  x[0] = -127;
  for (int j = 1; j < 32; ++j) x[j] = (float)j;
  uint8_t q[34];
  KILN_ASSERT_OK(kiln_quant_pack(KILN_QUANT_Q8_0, x, 1, 32, q));
  KILN_EXPECT_EQ(q[0], 0x00);
  KILN_EXPECT_EQ(q[1], 0x3c);
  KILN_EXPECT_EQ(q[2], 0x81);  // -127
  for (int j = 1; j < 32; ++j) KILN_EXPECT_EQ(q[2 + j], j);
  KILN_ASSERT_OK(kiln_quant_unpack(KILN_QUANT_Q8_0, q, 1, 32, back));
  for (int j = 0; j < 32; ++j) KILN_EXPECT_EQ(back[j], x[j]);
}

KILN_TEST(QuantTest, Q4_0BlockBytes) {
  // The first largest magnitude is -8: d = -8 / -8 = 1 (0x3c00), code
  // x + 8; element j in byte j's low nibble, element 16 + j in its high.
  float x[32], back[32];
  for (int j = 0; j < 16; ++j) {
    x[j] = (float)(j - 8);
    x[16 + j] = (float)(7 - j);
  }
  uint8_t q[18];
  KILN_ASSERT_OK(kiln_quant_pack(KILN_QUANT_Q4_0, x, 1, 32, q));
  KILN_EXPECT_EQ(q[0], 0x00);
  KILN_EXPECT_EQ(q[1], 0x3c);
  for (int j = 0; j < 16; ++j) KILN_EXPECT_EQ(q[2 + j], j | ((15 - j) << 4));
  KILN_ASSERT_OK(kiln_quant_unpack(KILN_QUANT_Q4_0, q, 1, 32, back));
  for (int j = 0; j < 32; ++j) KILN_EXPECT_EQ(back[j], x[j]);
  // A positive maximum: x[5] = 4 gives d = -0.5 (0xb800); 4 -> code 0,
  // 0 -> code 8.
  memset(x, 0, sizeof(x));
  x[5] = 4;
  KILN_ASSERT_OK(kiln_quant_pack(KILN_QUANT_Q4_0, x, 1, 32, q));
  KILN_EXPECT_EQ(q[0], 0x00);
  KILN_EXPECT_EQ(q[1], 0xb8);
  KILN_EXPECT_EQ(q[2 + 5], 0x80);
  KILN_EXPECT_EQ(q[2 + 6], 0x88);
  KILN_ASSERT_OK(kiln_quant_unpack(KILN_QUANT_Q4_0, q, 1, 32, back));
  for (int j = 0; j < 32; ++j) KILN_EXPECT_EQ(back[j], x[j]);
}

KILN_TEST(QuantTest, Q4_KHandBuiltSuperblock) {
  // d = 1 (0x3c00), dmin = 0.5 (0x3800); sc = 1 2 3 4 17 33 50 63,
  // m = 0 1 2 3 20 40 0 63, packed as ggml's get_scale_min_k4 reads them:
  // s[0..3] = sc[0..3] | (sc[4..7] >> 4) << 6, s[4..7] = m[0..3] |
  // (m[4..7] >> 4) << 6, s[8..11] = (sc[4..7] & 15) | (m[4..7] & 15) << 4.
  uint8_t q[144] = {0x00, 0x3c, 0x00, 0x38, 0x41, 0x82, 0xc3, 0xc4, 0x40, 0x81,
                    0x02, 0xc3, 0x41, 0x81, 0x02, 0xff};
  memset(q + 16, 0x5a, 128);  // low nibble 10 (even sub-blocks), high 5 (odd)
  // d * sc * code - dmin * m per sub-block.
  const float want[8] = {10, 9.5f, 29, 18.5f, 160, 145, 500, 283.5f};
  float back[256];
  KILN_ASSERT_OK(kiln_quant_unpack(KILN_QUANT_Q4_K, q, 1, 256, back));
  for (int i = 0; i < 256; ++i) KILN_EXPECT_EQ(back[i], want[i / 32]);
  // Repacking those values: each sub-block within half its step, which is
  // at most its range (max - min(0, min) + dmin) / 15 plus d (6-bit scales
  // rounded up).
  uint8_t again[144];
  float back2[256];
  KILN_ASSERT_OK(kiln_quant_pack(KILN_QUANT_Q4_K, back, 1, 256, again));
  KILN_ASSERT_OK(kiln_quant_unpack(KILN_QUANT_Q4_K, again, 1, 256, back2));
  const float d = kiln_quant_f16_to_f32((uint16_t)(again[0] | (again[1] << 8)));
  const float dmin = kiln_quant_f16_to_f32((uint16_t)(again[2] | (again[3] << 8)));
  for (int i = 0; i < 256; ++i) {
    const float range = want[i / 32] + dmin;  // every value >= 0: min(0, min) = 0
    KILN_EXPECT_NEAR(back2[i], back[i], (range / 15 + d) / 2 + 1e-3);
  }
}

KILN_TEST(QuantTest, Int8RowBytes) {
  float x[32], back[32];
  for (int j = 0; j < 32; ++j) x[j] = (float)(j - 16) * 0.5f;  // max|x| = 8
  uint8_t q[36];
  KILN_ASSERT_OK(kiln_quant_pack(KILN_QUANT_INT8, x, 1, 32, q));
  float scale;
  memcpy(&scale, q, 4);
  KILN_EXPECT_EQ(scale, 8.0f / 127.0f);
  KILN_EXPECT_EQ((int8_t)q[4], -127);
  KILN_EXPECT_EQ((int8_t)q[4 + 16], 0);
  KILN_ASSERT_OK(kiln_quant_unpack(KILN_QUANT_INT8, q, 1, 32, back));
  for (int j = 0; j < 32; ++j) KILN_EXPECT_NEAR(back[j], x[j], scale / 2 + 1e-6);
}

// Pack -> unpack of uniform [-1, 1) rows: the error stays under each
// layout's step (q8_0/int8: half of max/127; q4_0: max/8; q4_K: one
// sub-block step, range / 15, plus the 6-bit scale rounding).
KILN_TEST(QuantTest, RoundTripErrorWithinStep) {
  const uint64_t rows = 3, k = 512;
  float* w = malloc(rows * k * sizeof(float));
  float* back = malloc(rows * k * sizeof(float));
  uint8_t* q = malloc(rows * (4 + k * 2));
  KILN_ASSERT_TRUE(w && back && q);
  srand(7);
  for (uint64_t i = 0; i < rows * k; ++i) w[i] = (float)rand() / RAND_MAX * 2.0f - 1.0f;
  const kiln_quant_layout_t layouts[4] = {KILN_QUANT_INT8, KILN_QUANT_Q8_0, KILN_QUANT_Q4_0,
                                          KILN_QUANT_Q4_K};
  const double bound[4] = {1.0 / 254 + 1e-6, 1.0 / 254 + 1e-3, 1.0 / 8 + 1e-3, 2.0 / 15};
  for (int l = 0; l < 4; ++l) {
    KILN_ASSERT_OK(kiln_quant_pack(layouts[l], w, rows, k, q));
    KILN_ASSERT_OK(kiln_quant_unpack(layouts[l], q, rows, k, back));
    double worst = 0;
    for (uint64_t i = 0; i < rows * k; ++i) worst = fmax(worst, fabs(back[i] - w[i]));
    KILN_EXPECT_LE(worst, bound[l]);
  }
  KILN_EXPECT_EQ_U64(kiln_quant_row_bytes(KILN_QUANT_Q8_0, k), 16 * 34);
  KILN_EXPECT_EQ_U64(kiln_quant_row_bytes(KILN_QUANT_Q4_0, k), 16 * 18);
  KILN_EXPECT_EQ_U64(kiln_quant_row_bytes(KILN_QUANT_Q4_K, k), 2 * 144);
  KILN_EXPECT_EQ_U64(kiln_quant_row_bytes(KILN_QUANT_INT8, k), 4 + 512);
  free(w);
  free(back);
  free(q);
}

KILN_TEST(QuantTest, RefusesBadInput) {
  float x[256] = {0};
  uint8_t q[400];
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "multiple of 32",
                             kiln_quant_pack(KILN_QUANT_Q4_0, x, 1, 48, q));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "multiple of 256",
                             kiln_quant_pack(KILN_QUANT_Q4_K, x, 1, 128, q));
  x[3] = NAN;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "element 3 is not finite",
                             kiln_quant_pack(KILN_QUANT_Q8_0, x, 1, 32, q));
  kiln_quant_layout_t layout;
  KILN_ASSERT_OK(kiln_quant_layout_parse("Q4_K", &layout));
  KILN_EXPECT_EQ(layout, KILN_QUANT_Q4_K);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "q5_0",
                             kiln_quant_layout_parse("q5_0", &layout));
  KILN_EXPECT_EQ_U64(kiln_quant_row_bytes(KILN_QUANT_Q8_0, 33), 0);
}
