// Rank-6 strided copy: for every coordinate c of `shape`,
//   out[out_offset + sum c*out_strides] = in[in_offset + sum c*in_strides].
// One kernel serves Transpose (permuted input strides), Slice (start in
// in_offset, steps in in_strides, negative allowed), Expand (stride 0),
// Concat (one dispatch per input into its slab of the output) and reshape
// copies. count must be the product of shape (dim 0's coordinate is not
// reduced modulo its size). Grid: (min(ceil(count / WG_X), 65535), 1, 1),
// grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_strided_copy_params_t.
layout(push_constant) uniform Params {
  uint count;
  uint shape[6];
  int in_strides[6];
  uint out_strides[6];
  int in_offset;
  uint out_offset;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < p.count; index += stride) {
    uint rest = index;
    int src = p.in_offset;
    uint dst = p.out_offset;
    // Dims of 1 are skipped (a uniform test: the divisions are what this
    // kernel spends its time on), and dim 0 takes what is left of the
    // index undivided: below count, that is its coordinate. The compiler
    // puts the outermost dim there (lower_data.c).
    for (int d = 5; d > 0; --d) {
      if (p.shape[d] == 1) continue;
      const uint next = rest / p.shape[d];
      const uint coord = rest - next * p.shape[d];
      rest = next;
      src += int(coord) * p.in_strides[d];
      dst += coord * p.out_strides[d];
    }
    src += int(rest) * p.in_strides[0];
    dst += rest * p.out_strides[0];
    y[dst] = x[uint(src)];
  }
}
