// Max / average 2-D pooling over NCHW planes (POOL_OP spec constant). Average
// divides by the window positions inside the input, or, with
// count_include_pad, inside the padded input (both counted in closed form).
// Max propagates NaN. Global pooling is the reduce kernel. A window tile
// (tile_h0.., tile_w0..; tile_h 0: the whole window) bounds the window loops
// (KILN_KERNEL_MAX_LOOP_ITERATIONS); tiles after the first combine into y
// (max, or + partial sum / divisor). Grid: (min(ceil(planes*OH*OW / WG_X),
// 65535), 1, 1), grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "minmax.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_POOL_OP) const uint OP = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_pool2d_params_t.
layout(push_constant) uniform Params {
  uint planes, in_height, in_width, out_height, out_width;
  uint kernel_h, kernel_w, stride_h, stride_w;
  uint pad_top, pad_left, pad_bottom, pad_right;
  uint dilation_h, dilation_w, count_include_pad;
  uint tile_h0, tile_w0, tile_h, tile_w;
} p;

// Taps k in [0, taps) with lo <= first + k * step < hi.
uint kiln_taps_within(int first, uint taps, uint step, int lo, int hi) {
  int s = int(step);
  int k_lo = lo <= first ? 0 : (lo - first + s - 1) / s;
  int k_hi = hi <= first ? 0 : min(int(taps), (hi - first + s - 1) / s);
  return uint(max(k_hi - k_lo, 0));
}

void main() {
  const uint pixels = p.out_height * p.out_width;
  const uint total = p.planes * pixels;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint kh_end = p.tile_h == 0 ? p.kernel_h : min(p.kernel_h, p.tile_h0 + p.tile_h);
  const uint kw_end = p.tile_w == 0 ? p.kernel_w : min(p.kernel_w, p.tile_w0 + p.tile_w);
  const bool first_tile = p.tile_h0 == 0 && p.tile_w0 == 0;
  for (uint index = gl_GlobalInvocationID.x; index < total; index += stride) {
    uint ow = index % p.out_width;
    uint oh = (index / p.out_width) % p.out_height;
    uint plane = index / pixels;
    uint base = plane * p.in_height * p.in_width;
    int ih0 = int(oh * p.stride_h) - int(p.pad_top);
    int iw0 = int(ow * p.stride_w) - int(p.pad_left);
    float acc = (OP == KILN_POOL_MAX) ? uintBitsToFloat(0xff800000u) : 0.0;
    for (uint kh = p.tile_h0; kh < kh_end; ++kh) {
      int ih = ih0 + int(kh * p.dilation_h);
      if (ih < 0 || ih >= int(p.in_height)) continue;
      for (uint kw = p.tile_w0; kw < kw_end; ++kw) {
        int iw = iw0 + int(kw * p.dilation_w);
        if (iw < 0 || iw >= int(p.in_width)) continue;
        float v = LOAD(x[base + uint(ih) * p.in_width + uint(iw)]);
        acc = (OP == KILN_POOL_MAX) ? kiln_max_nan(acc, v) : acc + v;
      }
    }
    if (OP == KILN_POOL_AVG) {
      uint divisor;
      if (p.count_include_pad != 0) {
        divisor = kiln_taps_within(ih0, p.kernel_h, p.dilation_h, -int(p.pad_top),
                                   int(p.in_height + p.pad_bottom)) *
                  kiln_taps_within(iw0, p.kernel_w, p.dilation_w, -int(p.pad_left),
                                   int(p.in_width + p.pad_right));
      } else {
        divisor = kiln_taps_within(ih0, p.kernel_h, p.dilation_h, 0, int(p.in_height)) *
                  kiln_taps_within(iw0, p.kernel_w, p.dilation_w, 0, int(p.in_width));
      }
      acc = divisor > 0 ? acc / float(divisor) : 0.0;
      if (!first_tile) acc += LOAD(y[index]);
    } else if (!first_tile) {
      acc = kiln_max_nan(LOAD(y[index]), acc);
    }
    y[index] = STORE(acc);
  }
}
