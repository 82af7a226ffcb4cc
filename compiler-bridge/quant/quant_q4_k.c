// GGUF q4_K: superblocks of 256 elements, 144 bytes each: d (fp16), dmin
// (fp16), 12 bytes of 6-bit scales sc[8] and mins m[8] (one per 32-element
// sub-block), 128 bytes of nibbles; value = d * sc[j] * q - dmin * m[j].
// Scale packing (ggml's get_scale_min_k4): for j < 4, sc[j] = s[j] & 63
// and m[j] = s[j + 4] & 63; for j >= 4, sc[j] = (s[j + 4] & 15) |
// (s[j - 4] >> 6) << 4 and m[j] = (s[j + 4] >> 4) | (s[j] >> 6) << 4.
// Nibbles: byte 32 * p + l holds sub-block 2p element l in its low nibble
// and sub-block 2p + 1 element l in its high nibble.
// The quantizer is a plain min/max one (not ggml's iterative search): the
// layout is ggml's, the chosen codes may differ from llama-quantize's.
#include <math.h>
#include <string.h>

#include "kiln/compiler/quant.h"

#define KILN_Q4_K_BLOCK 256
#define KILN_Q4_K_BYTES 144

static int kiln_q4_k_nearest(float x, int lo, int hi) {
  int v = (int)lroundf(x);
  return v < lo ? lo : (v > hi ? hi : v);
}

// ceil(x) in 0..63 (fp16 rounding of d may ask for 64: clipped).
static int kiln_q4_k_ceil(float x) {
  int v = (int)ceilf(x - 1e-6f * x);
  return v < 0 ? 0 : (v > 63 ? 63 : v);
}

static void kiln_q4_k_scale_min(const uint8_t* s, int j, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// Mins first (rounded up to 6 bits of dmin, so x + min >= 0), then each
// sub-block's scale covering [-min, max] (rounded up to 6 bits of d, so
// no code clips); codes round to nearest: error <= (scale + d) / 2.
static void kiln_q4_k_pack_block(const float* x, uint8_t* y) {
  float lo[8], hi[8], max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    lo[j] = 0.0f;
    hi[j] = 0.0f;
    for (int l = 0; l < 32; ++l) {
      lo[j] = fminf(lo[j], x[32 * j + l]);
      hi[j] = fmaxf(hi[j], x[32 * j + l]);
    }
    max_min = fmaxf(max_min, -lo[j]);
  }
  const uint16_t mh = kiln_quant_f32_to_f16(max_min / 63.0f);
  const float dmin = kiln_quant_f16_to_f32(mh);
  int lm[8], ls[8];
  float scale[8], max_scale = 0.0f;
  for (int j = 0; j < 8; ++j) {
    lm[j] = dmin > 0.0f ? kiln_q4_k_ceil(-lo[j] / dmin) : 0;
    scale[j] = (hi[j] + dmin * (float)lm[j]) / 15.0f;
    max_scale = fmaxf(max_scale, scale[j]);
  }
  const uint16_t dh = kiln_quant_f32_to_f16(max_scale / 63.0f);
  const float d = kiln_quant_f16_to_f32(dh);
  for (int j = 0; j < 8; ++j) ls[j] = d > 0.0f ? kiln_q4_k_ceil(scale[j] / d) : 0;
  uint8_t* s = y + 4;
  memset(s, 0, 12);
  for (int j = 0; j < 8; ++j) {
    if (j < 4) {
      s[j] = (uint8_t)ls[j];
      s[j + 4] = (uint8_t)lm[j];
    } else {
      s[j + 4] = (uint8_t)((ls[j] & 15) | ((lm[j] & 15) << 4));
      s[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
      s[j] |= (uint8_t)((lm[j] >> 4) << 6);
    }
  }
  y[0] = (uint8_t)(dh & 0xff);
  y[1] = (uint8_t)(dh >> 8);
  y[2] = (uint8_t)(mh & 0xff);
  y[3] = (uint8_t)(mh >> 8);
  uint8_t codes[KILN_Q4_K_BLOCK];
  for (int j = 0; j < 8; ++j) {
    const float dq = d * (float)ls[j], dm = dmin * (float)lm[j];
    for (int l = 0; l < 32; ++l) {
      codes[32 * j + l] =
          (uint8_t)(dq > 0.0f ? kiln_q4_k_nearest((x[32 * j + l] + dm) / dq, 0, 15) : 0);
    }
  }
  for (int p = 0; p < 4; ++p) {
    for (int l = 0; l < 32; ++l) {
      y[16 + 32 * p + l] = (uint8_t)(codes[64 * p + l] | (codes[64 * p + 32 + l] << 4));
    }
  }
}

void kiln_quant_q4_k_pack_row(const float* w, uint64_t k, uint8_t* out) {
  for (uint64_t b = 0; b < k / KILN_Q4_K_BLOCK; ++b) {
    kiln_q4_k_pack_block(w + b * KILN_Q4_K_BLOCK, out + b * KILN_Q4_K_BYTES);
  }
}

void kiln_quant_q4_k_unpack_row(const uint8_t* q, uint64_t k, float* out) {
  for (uint64_t b = 0; b < k / KILN_Q4_K_BLOCK; ++b) {
    const uint8_t* y = q + b * KILN_Q4_K_BYTES;
    const float d = kiln_quant_f16_to_f32((uint16_t)(y[0] | (y[1] << 8)));
    const float dmin = kiln_quant_f16_to_f32((uint16_t)(y[2] | (y[3] << 8)));
    float* o = out + b * KILN_Q4_K_BLOCK;
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      kiln_q4_k_scale_min(y + 4, j, &sc, &m);
      const uint8_t* nib = y + 16 + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) {
        int code = (j & 1) ? (nib[l] >> 4) : (nib[l] & 15);
        o[32 * j + l] = d * (float)sc * (float)code - dmin * (float)m;
      }
    }
  }
}
