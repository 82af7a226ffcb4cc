// IEEE half and bfloat16 conversions (round to nearest even): the host
// tools' tensors and the compiler's f16 weights.
#include "kiln/base/half.h"

#include <string.h>

float kiln_f16_to_f32(uint16_t bits) {
  uint32_t sign = (uint32_t)(bits & 0x8000) << 16;
  uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t out;
  if (exponent == 0) {
    if (mantissa == 0) {
      out = sign;
    } else {  // subnormal: renormalize
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400) == 0) {
        mantissa <<= 1;
        exponent--;
      }
      out = sign | (exponent << 23) | ((mantissa & 0x3ff) << 13);
    }
  } else if (exponent == 31) {
    out = sign | 0x7f800000u | (mantissa << 13);
  } else {
    out = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float value;
  memcpy(&value, &out, sizeof(value));
  return value;
}

uint16_t kiln_f32_to_f16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = (uint16_t)((bits >> 16) & 0x8000);
  uint32_t exponent = (bits >> 23) & 0xff;
  uint32_t mantissa = bits & 0x7fffff;
  if (exponent == 0xff) {  // inf or nan (keep nan quiet and non-zero)
    return (uint16_t)(sign | 0x7c00 | (mantissa ? 0x200 : 0));
  }
  int32_t e = (int32_t)exponent - 127 + 15;
  if (e >= 31) return (uint16_t)(sign | 0x7c00);  // overflow to inf
  if (e <= 0) {
    if (e < -10) return sign;  // underflow to zero
    mantissa |= 0x800000;
    uint32_t shift = (uint32_t)(14 - e);
    uint32_t half = mantissa >> shift;
    uint32_t rest = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (rest > halfway || (rest == halfway && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = ((uint32_t)e << 10) | (mantissa >> 13);
  uint32_t rest = mantissa & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) half++;  // may carry into inf: correct
  return (uint16_t)(sign | half);
}

float kiln_bf16_to_f32(uint16_t bits) {
  uint32_t out = (uint32_t)bits << 16;
  float value;
  memcpy(&value, &out, sizeof(value));
  return value;
}

uint16_t kiln_f32_to_bf16(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffff) > 0x7f800000) return (uint16_t)((bits >> 16) | 0x40);
  uint32_t rounding = 0x7fff + ((bits >> 16) & 1);
  return (uint16_t)((bits + rounding) >> 16);
}
