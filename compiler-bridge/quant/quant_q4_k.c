// GGUF q4_K: superblocks of 256 elements, 144 bytes each: d (fp16), dmin
// (fp16), 12 bytes of 6-bit scales sc[8] and mins m[8] (one per 32-element
// sub-block), 128 bytes of nibbles; value = d * sc[j] * q - dmin * m[j].
// Scale packing (ggml's get_scale_min_k4): for j < 4, sc[j] = s[j] & 63
// and m[j] = s[j + 4] & 63; for j >= 4, sc[j] = (s[j + 4] & 15) |
// (s[j - 4] >> 6) << 4 and m[j] = (s[j + 4] >> 4) | (s[j] >> 6) << 4.
// Nibbles: byte 32 * p + l holds sub-block 2p element l in its low nibble
// and sub-block 2p + 1 element l in its high nibble.
// The quantizer is a plain min/max one (not ggml's iterative search):
// the layout is ggml's, the chosen codes may differ from llama-quantize's.
#include <math.h>
#include <string.h>

#include "kiln/compiler/quant.h"

#define KILN_Q4_K_BLOCK 256
#define KILN_Q4_K_BYTES 144

static int kiln_q4_k_nearest(float x, int lo, int hi) {
  int v = (int)lroundf(x);
  return v < lo ? lo : (v > hi ? hi : v);
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

static void kiln_q4_k_pack_block(const float* x, uint8_t* y) {
  float scale[8], mn[8], max_scale = 0.0f, max_min = 0.0f;
  for (int j = 0; j < 8; ++j) {
    float lo = 0.0f, hi = x[32 * j];
    for (int l = 0; l < 32; ++l) {
      lo = fminf(lo, x[32 * j + l]);
      hi = fmaxf(hi, x[32 * j + l]);
    }
    scale[j] = (hi - lo) / 15.0f;
    mn[j] = -lo;
    max_scale = fmaxf(max_scale, scale[j]);
    max_min = fmaxf(max_min, mn[j]);
  }
  const float inv_scale = max_scale > 0.0f ? 63.0f / max_scale : 0.0f;
  const float inv_min = max_min > 0.0f ? 63.0f / max_min : 0.0f;
  uint8_t* s = y + 4;
  memset(s, 0, 12);
  for (int j = 0; j < 8; ++j) {
    int ls = kiln_q4_k_nearest(inv_scale * scale[j], 0, 63);
    int lm = kiln_q4_k_nearest(inv_min * mn[j], 0, 63);
    if (j < 4) {
      s[j] = (uint8_t)ls;
      s[j + 4] = (uint8_t)lm;
    } else {
      s[j + 4] = (uint8_t)((ls & 15) | ((lm & 15) << 4));
      s[j - 4] |= (uint8_t)((ls >> 4) << 6);
      s[j] |= (uint8_t)((lm >> 4) << 6);
    }
  }
  const uint16_t dh = kiln_quant_f32_to_f16(max_scale / 63.0f);
  const uint16_t mh = kiln_quant_f32_to_f16(max_min / 63.0f);
  y[0] = (uint8_t)(dh & 0xff);
  y[1] = (uint8_t)(dh >> 8);
  y[2] = (uint8_t)(mh & 0xff);
  y[3] = (uint8_t)(mh >> 8);
  const float d = kiln_quant_f16_to_f32(dh), dmin = kiln_quant_f16_to_f32(mh);
  uint8_t codes[KILN_Q4_K_BLOCK];
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    kiln_q4_k_scale_min(s, j, &sc, &m);
    const float dq = d * (float)sc, dm = dmin * (float)m;
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
