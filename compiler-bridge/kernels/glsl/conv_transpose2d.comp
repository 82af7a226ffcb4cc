// Transposed 2-D convolution (ONNX ConvTranspose), NCHW, groups, strides,
// pads, dilations, fused act(conv + bias + residual). Gather form: each
// output value sums the inputs whose scatter lands on it, so no atomics.
// Weight layout [C_in, C_out/groups, KH, KW]. Pads are the "begin" pads;
// output_padding only affects the output shape the caller passes.
// Grid: (min(ceil(N*C_out*OH*OW / WG_X), 65535), 1, 1), grid-stride.
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
layout(set = 0, binding = 1) readonly buffer WeightBuffer { STORAGE_T w[]; };
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias[]; };
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_T residual[]; };
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { STORAGE_T y[]; };

#include "conv_params.glsl"

void main() {
  const uint pixels = p.out_height * p.out_width;
  const uint total = p.batch * p.out_channels * pixels;
  const uint cog = p.out_channels / p.groups;
  const uint cig = p.in_channels / p.groups;
  const uint plane = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  const uint ci_end = kiln_ci_end(cig), kh_end = kiln_kh_end();
  for (uint index = gl_GlobalInvocationID.x; index < total; index += stride) {
    uint ow = index % p.out_width;
    uint oh = (index / p.out_width) % p.out_height;
    uint nc = index / pixels;
    uint co = nc % p.out_channels;
    uint n = nc / p.out_channels;
    uint g = co / cog, col = co % cog;
    float acc = 0.0;
    for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
      int th = int(oh + p.pad_top) - int(kh * p.dilation_h);
      if (th < 0 || th % int(p.stride_h) != 0) continue;
      uint ih = uint(th) / p.stride_h;
      if (ih >= p.in_height) continue;
      for (uint kw = 0; kw < p.kernel_w; ++kw) {
        int tw = int(ow + p.pad_left) - int(kw * p.dilation_w);
        if (tw < 0 || tw % int(p.stride_w) != 0) continue;
        uint iw = uint(tw) / p.stride_w;
        if (iw >= p.in_width) continue;
        for (uint c = p.ci_begin; c < ci_end; ++c) {
          uint ci = g * cig + c;
          acc += LOAD(x[(n * p.in_channels + ci) * plane + ih * p.in_width + iw]) *
                 LOAD(w[((ci * cog + col) * p.kernel_h + kh) * p.kernel_w + kw]);
        }
      }
    }
    if (HAS_BIAS) acc += LOAD(bias[co]);
    if (HAS_RESIDUAL) acc += LOAD(residual[index]);
    y[index] = STORE(kiln_activate(ACTIVATION, acc, p.alpha, p.beta));
  }
}
