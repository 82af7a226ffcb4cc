// ArgMax / ArgMin over the middle axis of an [outer, size, inner] view: one
// invocation per (outer, inner) output scans its `size` values and writes
// the int64 index as (lo, hi) 32-bit words (no shaderInt64 needed). Ties go
// to the first index, or the last with SELECT_LAST; NaN counts as larger
// than everything (numpy), so the first NaN wins. The bridge keeps size and
// the grid-stride passes within KILN_KERNEL_MAX_LOOP_ITERATIONS.
// Grid: linear over outer * inner, grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_ARG_MIN) const uint ARG_MIN = 0;
layout(constant_id = KILN_SPEC_ARG_SELECT_LAST) const uint SELECT_LAST = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { uint y[]; };

// Mirrors kiln_kernel_reduce_params_t (chunk and divisor unused).
layout(push_constant) uniform Params {
  uint outer, size, inner, chunk;
  float divisor;
} p;

bool better(float v, float b) {
  if (isnan(b)) return false;
  if (isnan(v)) return true;
  if (SELECT_LAST != 0) return ARG_MIN != 0 ? v <= b : v >= b;
  return ARG_MIN != 0 ? v < b : v > b;
}

void main() {
  const uint count = p.outer * p.inner;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < count; i += stride) {
    uint base = (i / p.inner) * p.size * p.inner + i % p.inner;
    float best = LOAD(x[base]);
    uint at = 0;
    for (uint r = 1; r < p.size; ++r) {
      float v = LOAD(x[base + r * p.inner]);
      if (better(v, best)) {
        best = v;
        at = r;
      }
    }
    y[2 * i] = at;
    y[2 * i + 1] = 0u;
  }
}
