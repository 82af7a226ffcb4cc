// GGUF q4_0: blocks of 32 elements, 18 bytes each: d (fp16), then 16
// bytes whose low nibbles are elements 0..15 and high nibbles 16..31;
// value = (q - 8) * d. Quantized as ggml's reference quantizer does: d is
// the element of largest magnitude divided by -8 (so it maps to q = 0),
// q = min(15, (int8)(x / d + 8.5)).
#include <math.h>

#include "kiln/compiler/quant.h"

#define KILN_Q4_0_BLOCK 32
#define KILN_Q4_0_BYTES 18

static uint8_t kiln_q4_0_code(float x, float id) {
  int v = (int)(int8_t)(x * id + 8.5f);
  return (uint8_t)(v > 15 ? 15 : (v < 0 ? 0 : v));
}

void kiln_quant_q4_0_pack_row(const float* w, uint64_t k, uint8_t* out) {
  for (uint64_t b = 0; b < k / KILN_Q4_0_BLOCK; ++b) {
    const float* x = w + b * KILN_Q4_0_BLOCK;
    uint8_t* y = out + b * KILN_Q4_0_BYTES;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < KILN_Q4_0_BLOCK; ++j) {
      if (amax < fabsf(x[j])) {
        amax = fabsf(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t dh = kiln_quant_f32_to_f16(d);
    y[0] = (uint8_t)(dh & 0xff);
    y[1] = (uint8_t)(dh >> 8);
    for (int j = 0; j < KILN_Q4_0_BLOCK / 2; ++j) {
      y[2 + j] = (uint8_t)(kiln_q4_0_code(x[j], id) |
                           (kiln_q4_0_code(x[j + KILN_Q4_0_BLOCK / 2], id) << 4));
    }
  }
}

void kiln_quant_q4_0_unpack_row(const uint8_t* q, uint64_t k, float* out) {
  for (uint64_t b = 0; b < k / KILN_Q4_0_BLOCK; ++b) {
    const uint8_t* y = q + b * KILN_Q4_0_BYTES;
    const float d = kiln_quant_f16_to_f32((uint16_t)(y[0] | (y[1] << 8)));
    float* o = out + b * KILN_Q4_0_BLOCK;
    for (int j = 0; j < KILN_Q4_0_BLOCK / 2; ++j) {
      o[j] = (float)((y[2 + j] & 0xf) - 8) * d;
      o[j + KILN_Q4_0_BLOCK / 2] = (float)((y[2 + j] >> 4) - 8) * d;
    }
  }
}
