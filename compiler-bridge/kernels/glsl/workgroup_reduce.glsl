// Workgroup-wide sum / max / min / product of one float per invocation, returned to
// every invocation. Include it after the local_size layout: before it,
// gl_WorkGroupSize is the constant (1,1,1), not the specialized size.
// Shared-memory tree by default; with KILN_SUBGROUP the
// variant reduces within subgroups first (needs subgroup arithmetic), which
// cuts barriers from log2(WG) to two. Works for any workgroup size.
// MAX / MIN propagate NaN (minmax.glsl); the subgroup path checks NaN with
// a separate subgroupMax, since subgroupMax/Min leave NaN undefined.
#ifndef KILN_WORKGROUP_REDUCE_GLSL_
#define KILN_WORKGROUP_REDUCE_GLSL_

#define KILN_COMBINE_SUM 0
#define KILN_COMBINE_MAX 1
#define KILN_COMBINE_MIN 2
#define KILN_COMBINE_PROD 3

#ifdef KILN_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

#include "minmax.glsl"

shared float kiln_scratch[gl_WorkGroupSize.x];

float kiln_combine(uint op, float a, float b) {
  return op == KILN_COMBINE_SUM ? a + b
         : op == KILN_COMBINE_PROD ? a * b
         : (op == KILN_COMBINE_MAX ? kiln_max_nan(a, b) : kiln_min_nan(a, b));
}

#ifdef KILN_SUBGROUP
float kiln_subgroup_combine(uint op, float v) {
  if (op == KILN_COMBINE_SUM) return subgroupAdd(v);
  if (op == KILN_COMBINE_PROD) return subgroupMul(v);
  bool any_nan = subgroupMax(isnan(v) ? 1.0 : 0.0) > 0.0;
  float r = op == KILN_COMBINE_MAX ? subgroupMax(v) : subgroupMin(v);
  return any_nan ? uintBitsToFloat(0x7fc00000u) : r;
}
#endif

float kiln_workgroup_reduce(uint op, float v) {
  const uint tid = gl_LocalInvocationID.x;
#ifdef KILN_SUBGROUP
  v = kiln_subgroup_combine(op, v);
  if (subgroupElect()) kiln_scratch[gl_SubgroupID] = v;
  barrier();
  if (tid == 0) {
    float r = kiln_scratch[0];
    for (uint s = 1; s < gl_NumSubgroups; ++s) r = kiln_combine(op, r, kiln_scratch[s]);
    kiln_scratch[0] = r;
  }
  barrier();
#else
  kiln_scratch[tid] = v;
  barrier();
  for (uint s = 1; s < gl_WorkGroupSize.x; s <<= 1) {
    if ((tid & (2 * s - 1)) == 0 && tid + s < gl_WorkGroupSize.x) {
      kiln_scratch[tid] = kiln_combine(op, kiln_scratch[tid], kiln_scratch[tid + s]);
    }
    barrier();
  }
#endif
  float result = kiln_scratch[0];
  barrier();  // scratch is reused by the next call
  return result;
}

#endif  // KILN_WORKGROUP_REDUCE_GLSL_
