// LayerNorm / InstanceNorm over rows of `size` contiguous values:
// y = (x - mean) / sqrt(var + epsilon) * scale[k] + bias[k], with k = r for
// LayerNorm (the normalized axes flattened) and k = row % channels for
// InstanceNorm (rows are the (n, c) planes). Two-pass variance of values
// shifted by the row's first element: inputs like 1000 +- 0.01 keep their
// small deviations exact (x - shift), so mean and variance lose no digits
// to the offset. Rows whose loops would pass KILN_KERNEL_MAX_LOOP_ITERATIONS
// run as rows_split.comp.
// With KILN_NORM_RESIDUAL (the norm_residual kernel) the row is x + r of a
// residual binding 4 (a residual Add fused into the LayerNorm after it).
// One workgroup per row, workgroup-stride; grid: (min(rows, 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
// After the layout: the helper sizes its scratch by gl_WorkGroupSize.
#include "workgroup_reduce.glsl"
layout(constant_id = KILN_SPEC_NORM_KIND) const uint KIND = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer ScaleBuffer { STORAGE_T scale[]; };
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias[]; };
layout(set = 0, binding = 3) writeonly buffer OutBuffer { STORAGE_T y[]; };
#ifdef KILN_NORM_RESIDUAL
layout(set = 0, binding = 4) readonly buffer ResidualBuffer { STORAGE_T residual[]; };
float kiln_x(uint i) { return LOAD(x[i]) + LOAD(residual[i]); }
#else
float kiln_x(uint i) { return LOAD(x[i]); }
#endif

// Mirrors kiln_kernel_norm_params_t.
layout(push_constant) uniform Params {
  uint rows, size, channels;
  float epsilon;
} p;

void main() {
  for (uint row = gl_WorkGroupID.x; row < p.rows; row += gl_NumWorkGroups.x) {
    uint base = row * p.size;
    float shift = kiln_x(base);
    float s = 0.0;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      s += kiln_x(base + r) - shift;
    }
    float mean = kiln_workgroup_reduce(KILN_COMBINE_SUM, s) / float(p.size);
    float q = 0.0;
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      float d = (kiln_x(base + r) - shift) - mean;
      q += d * d;
    }
    float var = kiln_workgroup_reduce(KILN_COMBINE_SUM, q) / float(p.size);
    float inv_std = inversesqrt(var + p.epsilon);
    for (uint r = gl_LocalInvocationID.x; r < p.size; r += gl_WorkGroupSize.x) {
      uint k = (KIND == KILN_NORM_INSTANCE) ? row % p.channels : r;
      y[base + r] = STORE(((kiln_x(base + r) - shift) - mean) * inv_std * LOAD(scale[k]) + LOAD(bias[k]));
    }
  }
}
