// Depthwise 2-D convolution for CPU Vulkan devices (llvmpipe): same ABI as
// depthwise_conv2d.comp. Each invocation computes TW neighbouring outputs
// of one output row, so a 3-wide kernel reads each input row once per TW
// outputs (llvmpipe pays a per-lane loop for every storage load). Items are
// (n, c, oh, ow block), grid-stride; kiln_kernel_grid_linear divides the
// dispatch count by TW for this variant. Kernels other than 3 wide with
// stride 1 or 2 take the plain per-output loop.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_CONV_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_CONV_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_CONV_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
layout(constant_id = KILN_SPEC_CONV_TILE_W) const uint TW = 8;

layout(set = 0, binding = 0) readonly buffer InputBuffer { float x[]; };
layout(set = 0, binding = 1) readonly buffer WeightBuffer { float w[]; };  // [C_out, 1, KH, KW]
layout(set = 0, binding = 2) readonly buffer BiasBuffer { float bias[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { float residual[]; };
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { float y[]; };

#include "conv_params.glsl"

void store_out(uint index, uint co, float acc) {
  if (HAS_BIAS) acc += bias[co];
  if (HAS_RESIDUAL) acc += residual[index];
  y[index] = kiln_activate(ACTIVATION, acc, p.alpha, p.beta);
}

// One block of TW outputs with a 3-wide kernel at horizontal stride 1 or
// 2. llvmpipe runs both sides of every branch, so the two strides share one
// body: it loads the 2*TW+1 input columns stride 2 needs and picks with a
// select (constant array indices either way).
void block3(uint nc, uint co, uint oh, uint ow0, uint x_base, uint w_base) {
  const bool s1 = p.stride_w == 1;
  float acc[TW];
  for (uint t = 0; t < TW; ++t) acc[t] = 0.0;
  const int iw0 = int(ow0 * p.stride_w) - int(p.pad_left);
  const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
  for (uint kh = 0; kh < p.kernel_h; ++kh) {
    const int ih = ih0 + int(kh * p.dilation_h);
    if (ih < 0 || ih >= int(p.in_height)) continue;
    const uint row = x_base + uint(ih) * p.in_width;
    float xr[2 * TW + 1];
    for (uint r = 0; r < 2 * TW + 1; ++r) {
      int iw = iw0 + int(r);
      bool inside = iw >= 0 && iw < int(p.in_width);
      float v = x[row + uint(clamp(iw, 0, int(p.in_width) - 1))];
      xr[r] = inside ? v : 0.0;
    }
    const uint wr = w_base + kh * 3;
    const float w0 = w[wr], w1 = w[wr + 1], w2 = w[wr + 2];
    for (uint t = 0; t < TW; ++t) {
      float x0 = s1 ? xr[t] : xr[2 * t];
      float x1 = s1 ? xr[t + 1] : xr[2 * t + 1];
      float x2 = s1 ? xr[t + 2] : xr[2 * t + 2];
      acc[t] += x0 * w0 + x1 * w1 + x2 * w2;
    }
  }
  const uint out_row = (nc * p.out_height + oh) * p.out_width;
  for (uint t = 0; t < TW; ++t) {
    if (ow0 + t < p.out_width) store_out(out_row + ow0 + t, co, acc[t]);
  }
}

void main() {
  const uint blocks_w = (p.out_width + TW - 1) / TW;
  const uint items = p.batch * p.out_channels * p.out_height * blocks_w;
  const uint multiplier = p.out_channels / p.in_channels;
  const uint plane = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const bool wide3 = p.kernel_w == 3 && p.dilation_w == 1 &&
                     (p.stride_w == 1 || p.stride_w == 2);
  // Each path is its own loop: the path not taken costs one masked
  // iteration rather than one per item.
  for (uint item = gl_GlobalInvocationID.x; wide3 && item < items; item += stride) {
    const uint ow0 = (item % blocks_w) * TW;
    const uint oh = (item / blocks_w) % p.out_height;
    const uint nc = item / (blocks_w * p.out_height);
    const uint co = nc % p.out_channels;
    const uint n = nc / p.out_channels;
    block3(nc, co, oh, ow0, (n * p.in_channels + co / multiplier) * plane,
           co * p.kernel_h * p.kernel_w);
  }
  for (uint item = gl_GlobalInvocationID.x; !wide3 && item < items; item += stride) {
    const uint ow0 = (item % blocks_w) * TW;
    const uint oh = (item / blocks_w) % p.out_height;
    const uint nc = item / (blocks_w * p.out_height);
    const uint co = nc % p.out_channels;
    const uint n = nc / p.out_channels;
    const uint x_base = (n * p.in_channels + co / multiplier) * plane;
    const uint w_base = co * p.kernel_h * p.kernel_w;
    for (uint t = 0; t < TW; ++t) {
      const uint ow = ow0 + t;
      if (ow >= p.out_width) break;
      const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
      const int iw0 = int(ow * p.stride_w) - int(p.pad_left);
      float acc = 0.0;
      for (uint kh = 0; kh < p.kernel_h; ++kh) {
        int ih = ih0 + int(kh * p.dilation_h);
        if (ih < 0 || ih >= int(p.in_height)) continue;
        for (uint kw = 0; kw < p.kernel_w; ++kw) {
          int iw = iw0 + int(kw * p.dilation_w);
          if (iw < 0 || iw >= int(p.in_width)) continue;
          acc += x[x_base + uint(ih) * p.in_width + uint(iw)] *
                 w[w_base + kh * p.kernel_w + kw];
        }
      }
      store_out((nc * p.out_height + oh) * p.out_width + ow, co, acc);
    }
  }
}
