// Elementwise unary op: y = op(x; alpha, beta), op from kernels_codes.h
// (KILN_ACT_*). Grid: (min(ceil(count / WG_X), 65535), 1, 1), grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"
#include "activation.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_UNARY_OP) const uint OP = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_unary_params_t.
layout(push_constant) uniform Params {
  uint count;
  float alpha, beta;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    y[i] = STORE(kiln_activate(OP, LOAD(x[i]), p.alpha, p.beta));
  }
}
