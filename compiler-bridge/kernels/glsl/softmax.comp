// Softmax (or LogSoftmax with LOG) along one axis of a tensor viewed as
// [outer, size, inner]; max-subtracted for stability (a NaN or +inf in a
// row makes the row NaN, as in PyTorch). One workgroup per (outer, inner)
// row, workgroup-stride; grid: (min(outer*inner, 65535), 1, 1). Rows whose
// loops would pass KILN_KERNEL_MAX_LOOP_ITERATIONS run as rows_split.comp.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
// After the layout: the helper sizes its scratch by gl_WorkGroupSize.
#include "workgroup_reduce.glsl"
layout(constant_id = KILN_SPEC_SOFTMAX_LOG) const bool LOG = false;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_softmax_params_t.
layout(push_constant) uniform Params { uint outer, size, inner; } p;

void main() {
  const uint rows = p.outer * p.inner;
  for (uint row = gl_WorkGroupID.x; row < rows; row += gl_NumWorkGroups.x) {
    uint o = row / p.inner, i = row % p.inner;
    uint base = o * p.size * p.inner + i;
    float m = uintBitsToFloat(0xff800000u);
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      m = kiln_max_nan(m, LOAD(x[base + r * p.inner]));
    }
    m = kiln_workgroup_reduce(KILN_COMBINE_MAX, m);
    float s = 0.0;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      s += exp(LOAD(x[base + r * p.inner]) - m);
    }
    s = kiln_workgroup_reduce(KILN_COMBINE_SUM, s);
    float log_s = log(s), inv_s = 1.0 / s;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      float d = LOAD(x[base + r * p.inner]) - m;
      y[base + r * p.inner] = STORE(LOG ? d - log_s : exp(d) * inv_s);
    }
  }
}
