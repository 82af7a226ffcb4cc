// ONNX Gather along one axis of data viewed as [outer, axis_size, inner]:
// y[o, j, i] = x[o, idx[j], i]; negative indices count from the end, and an
// index still out of range yields 0 rather than reading out of bounds.
// Indices are int32 (the bridge narrows int64 constants), or, with
// INDEX_WORDS = 2, run-time int64 read as (lo, hi) words without needing
// shaderInt64: a value outside int32 (hi not lo's sign) is out of range.
// A table larger than one storage-buffer range is gathered in parts
// (onnx-emit/lower_big.c, outer = 1): the data binding then holds rows
// [axis_begin, axis_begin + axis_rows) of the axis, each part writes only
// the outputs whose index falls in its rows, and the part with axis_begin 0
// also writes the zeros of out-of-range indices. axis_rows 0 = the whole axis.
// Grid: (min(ceil(outer*index_count*inner / WG_X), 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_GATHER_INDEX_WORDS) const uint INDEX_WORDS = 1;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer IndexBuffer { int indices[]; };
layout(set = 0, binding = 2) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_gather_params_t.
layout(push_constant) uniform Params {
  uint outer, axis_size, inner, index_count, axis_begin, axis_rows;
} p;

void main() {
  const uint total = p.outer * p.index_count * p.inner;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint rows = p.axis_rows == 0 ? p.axis_size : p.axis_rows;
  for (uint index = gl_GlobalInvocationID.x; index < total; index += stride) {
    uint i = index % p.inner;
    uint j = (index / p.inner) % p.index_count;
    uint o = index / (p.inner * p.index_count);
    int k = indices[j * INDEX_WORDS];
    bool valid = INDEX_WORDS == 1 || indices[j * INDEX_WORDS + 1] == (k >> 31);
    if (k < 0) k += int(p.axis_size);
    valid = valid && k >= 0 && k < int(p.axis_size);
    const int row = k - int(p.axis_begin);
    if (valid && row >= 0 && row < int(rows)) {
      y[index] = STORE(LOAD(x[(o * rows + uint(row)) * p.inner + i]));
    } else if (!valid && p.axis_begin == 0) {
      y[index] = STORE(0.0);
    }
  }
}
