// kiln q4_zp: MatMulNBits' 4-bit blocks repacked for qgemm. Per 32-element
// group, 28 bytes: fp32 scale of elements 0..15, fp32 scale of 16..31,
// uint8 zero point of each half (bytes 8, 9; 10, 11 zero), then 16 bytes
// of codes, element e in byte 12 + e / 2 (low nibble for even e).
// Value = (q - zp) * scale, as onnxruntime dequantizes MatMulNBits.
#include <string.h>

#include "kiln/compiler/quant.h"

#define KILN_Q4_ZP_BYTES 28

static float kiln_q4_zp_f32(const uint8_t* p) {
  uint32_t bits = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
                  ((uint32_t)p[3] << 24);
  float value;
  memcpy(&value, &bits, sizeof(value));
  return value;
}

static void kiln_q4_zp_put_f32(uint8_t* p, float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  for (int i = 0; i < 4; ++i) p[i] = (uint8_t)(bits >> (8 * i));
}

void kiln_quant_q4_zp_unpack_row(const uint8_t* q, uint64_t k, float* out) {
  for (uint64_t g = 0; g < k / 32; ++g) {
    const uint8_t* y = q + g * KILN_Q4_ZP_BYTES;
    for (int e = 0; e < 32; ++e) {
      const int half = e / 16;
      const int code = (y[12 + e / 2] >> (4 * (e & 1))) & 15;
      out[g * 32 + e] = (float)(code - y[8 + half]) * kiln_q4_zp_f32(y + 4 * half);
    }
  }
}

void kiln_quant_q4_zp_from_nbits(const uint8_t* b, const float* scales,
                                 const uint8_t* zero_points, uint64_t n, uint64_t k,
                                 uint64_t block, uint8_t* out) {
  const uint64_t k_blocks = (k + block - 1) / block, zp_row = (k_blocks + 1) / 2;
  for (uint64_t j = 0; j < n; ++j) {
    for (uint64_t g = 0; g < k / 32; ++g) {
      uint8_t* y = out + (j * (k / 32) + g) * KILN_Q4_ZP_BYTES;
      memset(y, 0, KILN_Q4_ZP_BYTES);
      for (int half = 0; half < 2; ++half) {
        const uint64_t bi = (g * 32 + 16 * (uint64_t)half) / block;  // blocks are >= 16
        kiln_q4_zp_put_f32(y + 4 * half, scales[j * k_blocks + bi]);
        y[8 + half] = zero_points
                          ? (uint8_t)((zero_points[j * zp_row + bi / 2] >> (4 * (bi & 1))) & 15)
                          : 8;
      }
      for (int e = 0; e < 32; ++e) {
        const uint64_t at = g * 32 + (uint64_t)e, bi = at / block, off = at % block;
        const int code = (b[(j * k_blocks + bi) * (block / 2) + off / 2] >> (4 * (off & 1))) & 15;
        y[12 + e / 2] |= (uint8_t)(code << (4 * (e & 1)));
      }
    }
  }
}
