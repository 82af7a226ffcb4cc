// Elementwise binary op with numpy broadcasting and a fused activation:
// out = act(a OP b). Shapes are right-aligned to rank 6 by the caller; a
// broadcast dimension has stride 0. Grid-stride over the output count;
// grid: (min(ceil(count / WG_X), 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"
#include "activation.glsl"
#include "divide.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_BINARY_OP) const uint OP = 0;
layout(constant_id = KILN_SPEC_BINARY_ACTIVATION) const uint ACTIVATION = 0;

layout(set = 0, binding = 0) readonly buffer ABuffer { STORAGE_T a[]; };
layout(set = 0, binding = 1) readonly buffer BBuffer { STORAGE_T b[]; };
layout(set = 0, binding = 2) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_binary_params_t (kernels_abi.h).
layout(push_constant) uniform Params {
  uint count;
  uint shape[6];
  uint a_strides[6];
  uint b_strides[6];
  float alpha, beta;
} p;

float apply(float x, float z) {
  switch (OP) {
    case KILN_BINARY_ADD: return x + z;
    case KILN_BINARY_SUB: return x - z;
    case KILN_BINARY_MUL: return x * z;
    case KILN_BINARY_DIV: return kiln_div(x, z);
    case KILN_BINARY_POW: return kiln_pow(x, z);
    case KILN_BINARY_MAX: return kiln_max(x, z);
    case KILN_BINARY_MIN: return kiln_min(x, z);
    case KILN_BINARY_SELECT: return floatBitsToUint(z) == KILN_SELECT_KEEP_BITS ? x : z;
    default: return x;
  }
}

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < p.count; index += stride) {
    uint rest = index;
    uint ai = 0, bi = 0;
    for (int d = 5; d >= 0; --d) {
      uint coord = rest % p.shape[d];
      rest /= p.shape[d];
      ai += coord * p.a_strides[d];
      bi += coord * p.b_strides[d];
    }
    y[index] = STORE(kiln_activate(ACTIVATION, apply(LOAD(a[ai]), LOAD(b[bi])), p.alpha, p.beta));
  }
}
