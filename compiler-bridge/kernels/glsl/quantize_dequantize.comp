// DequantizeLinear(QuantizeLinear(x)) with the same parameters, fp32 in and
// out (kiln.QuantizeDequantize, the QDQ pass's fusion): exactly ONNX's
// float32 arithmetic: x / scale correctly rounded (kiln_div; OpFDiv alone
// may be 2.5 ULP off and move a tie), round half to even, + zero point,
// saturate, then (q - zp) * scale. NaN gives qmin as the C reference does.
// Per tensor (channels 1) or per axis: element i's channel is
// (i / inner) % channels. Grid: linear, grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "divide.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer XBuffer { float x[]; };
layout(set = 0, binding = 1) readonly buffer ScaleBuffer { float s[]; };
layout(set = 0, binding = 2) readonly buffer ZeroBuffer { float z[]; };
layout(set = 0, binding = 3) writeonly buffer YBuffer { float y[]; };

// Mirrors kiln_kernel_quantize_params_t.
layout(push_constant) uniform Params {
  uint count, inner, channels, has_zero_point;
  float qmin, qmax;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    uint c = p.channels == 1u ? 0u : (i / p.inner) % p.channels;
    float scale = s[c];
    float zp = p.has_zero_point != 0u ? z[c] : 0.0;
    float q = kiln_div(x[i], scale);
    float v = isnan(q) ? p.qmin : clamp(roundEven(q) + zp, p.qmin, p.qmax);
    precise float d = (v - zp) * scale;
    y[i] = d;
  }
}
