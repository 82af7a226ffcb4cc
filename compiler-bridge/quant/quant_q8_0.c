// GGUF q8_0: blocks of 32 elements, 34 bytes each: d (fp16, little
// endian), then 32 int8 q; value = q * d. Quantized as ggml's reference
// quantizer does: d = max|x| / 127, q = round(x / d).
#include <math.h>
#include <string.h>

#include "kiln/compiler/quant.h"

#define KILN_Q8_0_BLOCK 32
#define KILN_Q8_0_BYTES 34

void kiln_quant_q8_0_pack_row(const float* w, uint64_t k, uint8_t* out) {
  for (uint64_t b = 0; b < k / KILN_Q8_0_BLOCK; ++b) {
    const float* x = w + b * KILN_Q8_0_BLOCK;
    uint8_t* y = out + b * KILN_Q8_0_BYTES;
    float amax = 0.0f;
    for (int j = 0; j < KILN_Q8_0_BLOCK; ++j) amax = fmaxf(amax, fabsf(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t dh = kiln_quant_f32_to_f16(d);
    y[0] = (uint8_t)(dh & 0xff);
    y[1] = (uint8_t)(dh >> 8);
    for (int j = 0; j < KILN_Q8_0_BLOCK; ++j) {
      y[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
    }
  }
}

void kiln_quant_q8_0_unpack_row(const uint8_t* q, uint64_t k, float* out) {
  for (uint64_t b = 0; b < k / KILN_Q8_0_BLOCK; ++b) {
    const uint8_t* y = q + b * KILN_Q8_0_BYTES;
    const float d = kiln_quant_f16_to_f32((uint16_t)(y[0] | (y[1] << 8)));
    for (int j = 0; j < KILN_Q8_0_BLOCK; ++j) {
      out[b * KILN_Q8_0_BLOCK + j] = (float)(int8_t)y[2 + j] * d;
    }
  }
}
