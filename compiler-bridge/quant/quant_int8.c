// kiln int8 rows: per row (output channel) a little-endian fp32 scale,
// then k int8 q; value = q * scale, scale = max|x| / 127 (symmetric,
// round half away from zero). k is a multiple of 32 (the kernel's step),
// so every row starts 4-byte aligned.
#include <math.h>
#include <string.h>

#include "kiln/compiler/quant.h"

void kiln_quant_int8_pack_row(const float* w, uint64_t k, uint8_t* out) {
  float amax = 0.0f;
  for (uint64_t j = 0; j < k; ++j) amax = fmaxf(amax, fabsf(w[j]));
  const float scale = amax / 127.0f;
  const float inv = scale != 0.0f ? 1.0f / scale : 0.0f;
  uint32_t bits;
  memcpy(&bits, &scale, sizeof(bits));
  for (int i = 0; i < 4; ++i) out[i] = (uint8_t)(bits >> (8 * i));
  for (uint64_t j = 0; j < k; ++j) {
    float v = roundf(w[j] * inv);
    out[4 + j] = (uint8_t)(int8_t)(v > 127.0f ? 127.0f : (v < -127.0f ? -127.0f : v));
  }
}

void kiln_quant_int8_unpack_row(const uint8_t* q, uint64_t k, float* out) {
  uint32_t bits = (uint32_t)q[0] | ((uint32_t)q[1] << 8) | ((uint32_t)q[2] << 16) |
                  ((uint32_t)q[3] << 24);
  float scale;
  memcpy(&scale, &bits, sizeof(scale));
  for (uint64_t j = 0; j < k; ++j) out[j] = (float)(int8_t)q[4 + j] * scale;
}
