// Reduction along one axis of a tensor viewed as [outer, size, inner]:
// y[o, c, i] = REDUCE_OP over r in chunk c of x[o, r, i] (sum, mean, max,
// min; max/min propagate NaN). Chunks of `chunk` values (0: the whole axis)
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

void main() {
  const uint combine = (OP == KILN_REDUCE_MAX) ? KILN_COMBINE_MAX
                     : (OP == KILN_REDUCE_MIN) ? KILN_COMBINE_MIN : KILN_COMBINE_SUM;
  const float identity = (OP == KILN_REDUCE_MAX) ? uintBitsToFloat(0xff800000u)
                       : (OP == KILN_REDUCE_MIN) ? uintBitsToFloat(0x7f800000u) : 0.0;
  const uint chunk = p.chunk == 0 ? p.size : p.chunk;
  const uint chunks = (p.size + chunk - 1) / chunk;
  const float divisor = p.divisor == 0.0 ? float(p.size) : p.divisor;
  const uint outputs = p.outer * chunks * p.inner;
  for (uint out_index = gl_WorkGroupID.x; out_index < outputs; out_index += gl_NumWorkGroups.x) {
    uint i = out_index % p.inner, oc = out_index / p.inner;
    uint c = oc % chunks, o = oc / chunks;
    uint base = o * p.size * p.inner + i;
    uint end = min(p.size, (c + 1) * chunk);
    float acc = identity;
    for (uint r = c * chunk + gl_LocalInvocationID.x; r < end; r += gl_WorkGroupSize.x) {
      acc = kiln_combine(combine, acc, LOAD(x[base + r * p.inner]));
    }
    acc = kiln_workgroup_reduce(combine, acc);
    if (gl_LocalInvocationID.x == 0) {
      y[out_index] = STORE((OP == KILN_REDUCE_MEAN) ? acc / divisor : acc);
    }
  }
}
