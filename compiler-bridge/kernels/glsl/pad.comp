// ONNX Pad (constant / reflect / edge) on a tensor right-aligned to rank 6.
// pad_begin may be negative (cropping). Reflect repeats periodically like
// numpy, so even pads >= the dimension are defined. count must be the
// product of out_shape. Grid: (min(ceil(count / WG_X), 65535), 1, 1),
// grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_PAD_MODE) const uint MODE = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_pad_params_t.
layout(push_constant) uniform Params {
  uint count;
  uint out_shape[6];
  uint in_shape[6];
  int pad_begin[6];
  float value;
} p;

void main() {
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < p.count; index += stride) {
    uint rest = index;
    uint src = 0, in_stride = 1;
    bool outside = false;
    for (int d = 5; d >= 0; --d) {
      int n = int(p.in_shape[d]);
      // The divisions are this kernel's cost: none for dims of 1 (a
      // uniform test) nor for dim 0, whose coordinate is what is left of
      // an index below count.
      uint o = 0;
      if (d == 0) {
        o = rest;
      } else if (p.out_shape[d] != 1) {
        const uint next = rest / p.out_shape[d];
        o = rest - next * p.out_shape[d];
        rest = next;
      }
      int c = int(o) - p.pad_begin[d];
      if (c < 0 || c >= n) {
        if (MODE == KILN_PAD_CONSTANT) {
          outside = true;
        } else if (MODE == KILN_PAD_EDGE) {
          c = clamp(c, 0, n - 1);
        } else if (n == 1) {
          c = 0;
        } else {
          // Periodic reflection (numpy "reflect"), so pads >= dim work too.
          // It is even in c, and GLSL's % is undefined for negatives.
          int period = 2 * (n - 1);
          c = abs(c) % period;
          if (c >= n) c = period - c;
        }
      }
      src += uint(c) * in_stride;
      in_stride *= uint(n);
    }
    y[index] = STORE(outside ? p.value : LOAD(x[src]));
  }
}
