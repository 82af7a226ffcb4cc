// Reduction along one axis of a tensor viewed as [outer, size, inner]:
// y[o, c, i] = REDUCE_OP over r in chunk c of x[o, r, i] (sum, mean, max,
// min, and the sum family of kernels_codes.h; max/min propagate NaN). Chunks of `chunk` values (0: the whole axis)
// bound each invocation's loop (KILN_KERNEL_MAX_LOOP_ITERATIONS); a long
// axis is reduced in two dispatches: chunk partials, then the partials
// (kiln_lower_reduce). Mean divides by `divisor` (0: size). Adjacent ONNX
// axes fold into one `size`; global pooling is outer = N*C, size = H*W,
// inner = 1. One workgroup per output value, workgroup-stride; grid:
// (min(outer*chunks*inner, 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
// After the layout: the helper sizes its scratch by gl_WorkGroupSize.
#include "workgroup_reduce.glsl"
layout(constant_id = KILN_SPEC_REDUCE_OP) const uint OP = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_reduce_params_t.
layout(push_constant) uniform Params {
  uint outer, size, inner, chunk;
  float divisor;
} p;

// What one value contributes to the sum family.
float kiln_reduce_element(float v) {
  if (OP == KILN_REDUCE_SUM_ABS) return abs(v);
  if (OP == KILN_REDUCE_SUM_SQUARE || OP == KILN_REDUCE_L2) return v * v;
  return v;
}

// The sum's final transform (NaN stays NaN; log(0) = -inf, log(<0) = NaN).
float kiln_reduce_final(float acc, float divisor) {
  if (OP == KILN_REDUCE_MEAN) return acc / divisor;
  if (OP == KILN_REDUCE_L2 || OP == KILN_REDUCE_SQRT_SUM) {
    return acc < 0.0 ? uintBitsToFloat(0x7fc00000u) : sqrt(acc);
  }
  if (OP == KILN_REDUCE_LOG_SUM) {
    return isnan(acc) ? acc : acc < 0.0 ? uintBitsToFloat(0x7fc00000u)
                            : acc == 0.0 ? uintBitsToFloat(0xff800000u) : log(acc);
  }
  return acc;
}

// log(sum exp(x)) over rows [begin, end) (stride `inner` from `base`): the
// max first, then the shifted sum (two loops of the chunk, within the row
// kernels' three-loop budget). An infinite max is the result; NaN stays.
float kiln_log_sum_exp(uint base, uint begin, uint end) {
  float m = uintBitsToFloat(0xff800000u);
  for (uint r = begin + gl_LocalInvocationID.x; r < end; r += gl_WorkGroupSize.x) {
    m = kiln_combine(KILN_COMBINE_MAX, m, LOAD(x[base + r * p.inner]));
  }
  m = kiln_workgroup_reduce(KILN_COMBINE_MAX, m);
  float shift = isinf(m) ? 0.0 : m;
  float s = 0.0;
  for (uint r = begin + gl_LocalInvocationID.x; r < end; r += gl_WorkGroupSize.x) {
    s += exp(LOAD(x[base + r * p.inner]) - shift);
  }
  s = kiln_workgroup_reduce(KILN_COMBINE_SUM, s);
  return isinf(m) ? m : shift + log(s);
}

void main() {
  const uint combine = (OP == KILN_REDUCE_MAX) ? KILN_COMBINE_MAX
                     : (OP == KILN_REDUCE_MIN) ? KILN_COMBINE_MIN
                     : (OP == KILN_REDUCE_PROD) ? KILN_COMBINE_PROD : KILN_COMBINE_SUM;
  const float identity = (OP == KILN_REDUCE_MAX) ? uintBitsToFloat(0xff800000u)
                       : (OP == KILN_REDUCE_MIN) ? uintBitsToFloat(0x7f800000u)
                       : (OP == KILN_REDUCE_PROD) ? 1.0 : 0.0;
  const uint chunk = p.chunk == 0 ? p.size : p.chunk;
  const uint chunks = (p.size + chunk - 1) / chunk;
  const float divisor = p.divisor == 0.0 ? float(p.size) : p.divisor;
  const uint outputs = p.outer * chunks * p.inner;
  for (uint out_index = gl_WorkGroupID.x; out_index < outputs; out_index += gl_NumWorkGroups.x) {
    uint i = out_index % p.inner, oc = out_index / p.inner;
    uint c = oc % chunks, o = oc / chunks;
    uint base = o * p.size * p.inner + i;
    uint end = min(p.size, (c + 1) * chunk);
    if (OP == KILN_REDUCE_LOG_SUM_EXP) {
      float r = kiln_log_sum_exp(base, c * chunk, end);
      if (gl_LocalInvocationID.x == 0) y[out_index] = STORE(r);
      continue;
    }
    float acc = identity;
    for (uint r = c * chunk + gl_LocalInvocationID.x; r < end; r += gl_WorkGroupSize.x) {
      acc = kiln_combine(combine, acc, kiln_reduce_element(LOAD(x[base + r * p.inner])));
    }
    acc = kiln_workgroup_reduce(combine, acc);
    if (gl_LocalInvocationID.x == 0) y[out_index] = STORE(kiln_reduce_final(acc, divisor));
  }
}
