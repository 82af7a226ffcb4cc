// DynamicQuantizeLinear's parameters (uint8) from the reduced minimum and
// maximum of x, exactly as ONNX (and kiln's reference) computes them in
// float32: the range always includes 0, scale = (max - min) / 255 (1 / 255
// for an all-zero x), zero point = round_half_even(clamp(0 - min / scale,
// 0, 255)), the divisions correctly rounded (kiln_div). One invocation;
// the reductions run before it (ReduceMin / ReduceMax, pass_qinteger.c).
// NaN min or max: the range is taken as 0 and the scale written is NaN.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "divide.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer MinBuffer { float x_min[]; };
layout(set = 0, binding = 1) readonly buffer MaxBuffer { float x_max[]; };
layout(set = 0, binding = 2) writeonly buffer ScaleBuffer { float scale[]; };
layout(set = 0, binding = 3) writeonly buffer ZeroBuffer { float zero_point[]; };

// Mirrors kiln_kernel_dynamic_quantize_params_t.
layout(push_constant) uniform Params { uint qmax; } p;

void main() {
  if (gl_GlobalInvocationID.x != 0u) return;
  // -0 and +0 both give +0, as the reference's strict comparisons do.
  const float lo = x_min[0] < 0.0 ? x_min[0] : 0.0;
  const float hi = x_max[0] > 0.0 ? x_max[0] : 0.0;
  precise float range = hi - lo;
  const float s = kiln_div(range == 0.0 ? 1.0 : range, float(p.qmax));
  precise float initial = 0.0 - kiln_div(lo, s);
  const float clamped = initial < 0.0 ? 0.0 : initial > float(p.qmax) ? float(p.qmax) : initial;
  // A NaN in x (the reductions propagate it): a NaN scale, as the
  // reference gives, so the outputs are NaN rather than quietly finite.
  scale[0] = isnan(x_min[0]) || isnan(x_max[0]) ? uintBitsToFloat(0x7fc00000u) : s;
  zero_point[0] = roundEven(clamped);
}
