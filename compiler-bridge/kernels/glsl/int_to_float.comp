// ONNX Cast of integer token data (an attention mask fed as an int64 or
// int32 graph input) to fp32: `count` values, read as INT_WORDS 32-bit words
// each (2: int64 as lo/hi words, no shaderInt64 needed). Values in int32
// convert as C does; beyond, hi and lo round apart (within 1e-6 relative).
// Grid: linear, grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_CAST_INT_WORDS) const uint INT_WORDS = 1;

layout(set = 0, binding = 0) readonly buffer InBuffer { int x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_copy_params_t.
layout(push_constant) uniform Params { uint count; } p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint i = gl_GlobalInvocationID.x; i < p.count; i += stride) {
    int lo = x[i * INT_WORDS];
    int hi = INT_WORDS == 1 ? (lo >> 31) : x[i * INT_WORDS + 1];
    // In int32 range (hi is lo's sign): convert lo alone, exactly as C
    // does; hi * 2^32 + uint(lo) would cancel catastrophically for -1.
    y[i] = STORE(hi == (lo >> 31) ? float(lo) : float(hi) * 4294967296.0 + float(uint(lo)));
  }
}
