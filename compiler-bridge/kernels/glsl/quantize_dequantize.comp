// ONNX quantization arithmetic on fp32 buffers, MODE (KILN_QUANT_*):
//   QDQ         DequantizeLinear(QuantizeLinear(x)) with the same parameters
//               (kiln.QuantizeDequantize, a fused QDQ pair);
//   QUANTIZE    QuantizeLinear, the integer result stored as fp32 (exact);
//   DEQUANTIZE  DequantizeLinear of such integer values;
//   REQUANTIZE  round(x * m + zp), saturated, for x an exact integer sum
//               (QLinearConv / QLinearMatMul; m in the scale binding; the
//               zero point is added before rounding, as ONNX's reference).
// Exactly ONNX's arithmetic: x / scale correctly rounded (kiln_div; OpFDiv
// alone may be 2.5 ULP off and move a tie), round half to even, + zero
// point, saturate, (q - zp) * scale in one rounding. REQUANTIZE rounds the
// exact product as numpy's float64 does: the fp32 product plus its fma
// residual decide a product that rounded onto a .5. NaN gives qmin as the C
// reference does. Per tensor (channels 1) or per axis: element i's channel
// is (i / inner) % channels. Grid: linear, grid-stride.
// The quantize_dequantize_f16 build (KILN_FP16_STORAGE): x and y fp16, the
// scale and zero point still fp32; each value is widened to fp32 (exact)
// and the arithmetic above runs on it, y rounded to fp16 once. Only the QDQ
// pair runs there (QOperator chains keep their integer tensors fp32:
// pass_precision.c).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "divide.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_QUANT_MODE) const uint MODE = KILN_QUANT_QDQ;

layout(set = 0, binding = 0) readonly buffer XBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer ScaleBuffer { float s[]; };
layout(set = 0, binding = 2) readonly buffer ZeroBuffer { float z[]; };
layout(set = 0, binding = 3) writeonly buffer YBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_quantize_params_t.
layout(push_constant) uniform Params {
  uint count, inner, channels, has_zero_point;
  float qmin, qmax;
} p;

// round_half_even(a * b + zp) - zp of the exact product, zp an integer:
// numpy's QLinearMatMul / QLinearConv add the zero point before rounding,
// so an exact tie goes to the even value of the sum (|a * b| < 2^22 where
// it matters; larger values saturate anyway).
float kiln_round_product(float a, float b, float zp) {
  precise float prod = a * b;
  precise float err = fma(a, b, -prod);
  float r = roundEven(prod);
  if (abs(prod - r) == 0.5) {
    r = err > 0.0 ? prod + 0.5 : err < 0.0 ? prod - 0.5 : roundEven(prod + zp) - zp;
  }
  return r;
}

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    uint c = p.channels == 1u ? 0u : (i / p.inner) % p.channels;
    float scale = s[c];
    float zp = p.has_zero_point != 0u ? z[c] : 0.0;
    const float xi = LOAD(x[i]);
    if (MODE == KILN_QUANT_DEQUANTIZE) {
      precise float d = (xi - zp) * scale;
      y[i] = STORE(d);
      continue;
    }
    float q = MODE == KILN_QUANT_REQUANTIZE ? kiln_round_product(xi, scale, zp)
                                            : roundEven(kiln_div(xi, scale));
    float v = isnan(q) ? p.qmin : clamp(q + zp, p.qmin, p.qmax);
    if (MODE == KILN_QUANT_QDQ) {
      precise float d = (v - zp) * scale;
      y[i] = STORE(d);
    } else {
      y[i] = STORE(v);
    }
  }
}
