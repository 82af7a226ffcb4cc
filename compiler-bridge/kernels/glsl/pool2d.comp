// Max / average 2-D pooling over NCHW planes (POOL_OP spec constant). Average
// divides by the window positions inside the input, or, with
// count_include_pad, inside the padded input. Global pooling is the reduce
// kernel. Grid: (min(ceil(planes*OH*OW / WG_X), 65535), 1, 1), grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_POOL_OP) const uint OP = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_pool2d_params_t.
layout(push_constant) uniform Params {
  uint planes, in_height, in_width, out_height, out_width;
  uint kernel_h, kernel_w, stride_h, stride_w;
  uint pad_top, pad_left, pad_bottom, pad_right;
  uint dilation_h, dilation_w, count_include_pad;
} p;

void main() {
  const uint pixels = p.out_height * p.out_width;
  const uint total = p.planes * pixels;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < total; index += stride) {
    uint ow = index % p.out_width;
    uint oh = (index / p.out_width) % p.out_height;
    uint plane = index / pixels;
    uint base = plane * p.in_height * p.in_width;
    int ih0 = int(oh * p.stride_h) - int(p.pad_top);
    int iw0 = int(ow * p.stride_w) - int(p.pad_left);
    float acc = (OP == KILN_POOL_MAX) ? uintBitsToFloat(0xff800000u) : 0.0;
    uint inside = 0, padded = 0;
    for (uint kh = 0; kh < p.kernel_h; ++kh) {
      int ih = ih0 + int(kh * p.dilation_h);
      bool row_in = ih >= 0 && ih < int(p.in_height);
      bool row_pad = ih < int(p.in_height + p.pad_bottom);
      for (uint kw = 0; kw < p.kernel_w; ++kw) {
        int iw = iw0 + int(kw * p.dilation_w);
        if (row_pad && iw < int(p.in_width + p.pad_right)) ++padded;
        if (!row_in || iw < 0 || iw >= int(p.in_width)) continue;
        float v = LOAD(x[base + uint(ih) * p.in_width + uint(iw)]);
        acc = (OP == KILN_POOL_MAX) ? max(acc, v) : acc + v;
        ++inside;
      }
    }
    if (OP == KILN_POOL_AVG) {
      uint divisor = p.count_include_pad != 0 ? padded : inside;
      acc = divisor > 0 ? acc / float(divisor) : 0.0;
    }
    y[index] = STORE(acc);
  }
}
