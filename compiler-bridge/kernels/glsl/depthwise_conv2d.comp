// Depthwise 2-D convolution (groups == C_in, C_out = C_in * multiplier),
// NCHW, fused act(conv + bias + residual). One invocation per output value,
// grid-stride over N*C_out*OH*OW; grid: (min(ceil(total / WG_X), 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_CONV_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_CONV_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_CONV_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;

layout(set = 0, binding = 0) readonly buffer InputBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer WeightBuffer { STORAGE_T w[]; };  // [C_out, 1, KH, KW]
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_T residual[]; };
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { STORAGE_T y[]; };

#include "conv_params.glsl"

void main() {
  const uint pixels = p.out_height * p.out_width;
  const uint total = p.batch * p.out_channels * pixels;
  const uint multiplier = p.out_channels / p.in_channels;
  const uint plane = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint kh_end = kiln_kh_end();
  for (uint index = gl_GlobalInvocationID.x; index < total; index += stride) {
    uint ow = index % p.out_width;
    uint oh = (index / p.out_width) % p.out_height;
    uint nc = index / pixels;
    uint co = nc % p.out_channels;
    uint n = nc / p.out_channels;
    uint x_base = (n * p.in_channels + co / multiplier) * plane;
    uint w_base = co * p.kernel_h * p.kernel_w;
    int ih0 = int(oh * p.stride_h) - int(p.pad_top);
    int iw0 = int(ow * p.stride_w) - int(p.pad_left);
    float acc = 0.0;
    for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
      int ih = ih0 + int(kh * p.dilation_h);
      if (ih < 0 || ih >= int(p.in_height)) continue;
      for (uint kw = 0; kw < p.kernel_w; ++kw) {
        int iw = iw0 + int(kw * p.dilation_w);
        if (iw < 0 || iw >= int(p.in_width)) continue;
        acc += LOAD(x[x_base + uint(ih) * p.in_width + uint(iw)]) *
               LOAD(w[w_base + kh * p.kernel_w + kw]);
      }
    }
    if (HAS_BIAS) acc += LOAD(bias[co]);
    if (HAS_RESIDUAL) acc += LOAD(residual[index]);
    y[index] = STORE(kiln_activate(ACTIVATION, acc, p.alpha, p.beta));
  }
}
