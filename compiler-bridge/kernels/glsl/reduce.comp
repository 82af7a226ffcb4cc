// Reduction along one axis of a tensor viewed as [outer, size, inner]:
// y[o, i] = REDUCE_OP over r of x[o, r, i] (sum, mean, max, min). Several
// ONNX axes that are adjacent fold into one `size`; global pooling is
// outer = N*C, size = H*W, inner = 1. One workgroup per output value,
// workgroup-stride; grid: (min(outer*inner, 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
// After the layout: the helper sizes its scratch by gl_WorkGroupSize.
#include "workgroup_reduce.glsl"
layout(constant_id = KILN_SPEC_REDUCE_OP) const uint OP = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { float x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { float y[]; };

// Mirrors kiln_kernel_reduce_params_t.
layout(push_constant) uniform Params { uint outer, size, inner; } p;

void main() {
  const uint combine = (OP == KILN_REDUCE_MAX) ? KILN_COMBINE_MAX
                     : (OP == KILN_REDUCE_MIN) ? KILN_COMBINE_MIN : KILN_COMBINE_SUM;
  const float identity = (OP == KILN_REDUCE_MAX) ? uintBitsToFloat(0xff800000u)
                       : (OP == KILN_REDUCE_MIN) ? uintBitsToFloat(0x7f800000u) : 0.0;
  const uint outputs = p.outer * p.inner;
  for (uint out_index = gl_WorkGroupID.x; out_index < outputs; out_index += gl_NumWorkGroups.x) {
    uint o = out_index / p.inner, i = out_index % p.inner;
    uint base = o * p.size * p.inner + i;
    float acc = identity;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      acc = kiln_combine(combine, acc, x[base + r * p.inner]);
    }
    acc = kiln_workgroup_reduce(combine, acc);
    if (gl_LocalInvocationID.x == 0) {
      y[out_index] = (OP == KILN_REDUCE_MEAN) ? acc / float(p.size) : acc;
    }
  }
}
