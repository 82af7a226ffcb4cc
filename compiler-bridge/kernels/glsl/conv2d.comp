// Direct 2-D convolution, NCHW, any groups/strides/pads/dilations, with the
// fused epilogue act(conv + bias + residual). Each invocation computes one
// output pixel for CO_BLOCK output channels, so every input value loaded is
// reused CO_BLOCK times; weights are shared by the whole workgroup (cache
// broadcast). Grid: (ceil(OH*OW / WG_X), ceil(C_out / CO_BLOCK), N).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;  // y: 1 (conv2d_gemm's ABI)
layout(constant_id = KILN_SPEC_CONV_CO_BLOCK) const uint CO_BLOCK = 4;
layout(constant_id = KILN_SPEC_CONV_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_CONV_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_CONV_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;

layout(set = 0, binding = 0) readonly buffer InputBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) readonly buffer WeightBuffer { STORAGE_T w[]; };  // [C_out, C_in/groups, KH, KW]
layout(set = 0, binding = 2) readonly buffer BiasBuffer { STORAGE_T bias[]; };  // [C_out]
layout(set = 0, binding = 3) readonly buffer ResidualBuffer { STORAGE_T residual[]; };  // like the output
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { STORAGE_T y[]; };

#include "conv_params.glsl"

void main() {
  const uint pixels = p.out_height * p.out_width;
  const uint pix = gl_GlobalInvocationID.x;
  if (pix >= pixels) return;
  const uint n = gl_WorkGroupID.z;
  const uint co0 = gl_WorkGroupID.y * CO_BLOCK;
  if (co0 >= p.out_channels) return;
  const uint oh = pix / p.out_width, ow = pix % p.out_width;
  const uint cog = p.out_channels / p.groups;
  const uint cig = p.in_channels / p.groups;
  const uint khw = p.kernel_h * p.kernel_w;
  const uint plane = p.in_height * p.in_width;
  const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
  const int iw0 = int(ow * p.stride_w) - int(p.pad_left);
  const uint co_last = min(co0 + CO_BLOCK, p.out_channels) - 1;
  const uint ci_end = kiln_ci_end(cig), kh_end = kiln_kh_end();

  float acc[CO_BLOCK];
  for (uint j = 0; j < CO_BLOCK; ++j) acc[j] = 0.0;

  if (co0 / cog == co_last / cog) {
    // The whole block is in one group: share each input value.
    const uint x_base = (n * p.in_channels + (co0 / cog) * cig) * plane;
    for (uint ci = p.ci_begin; ci < ci_end; ++ci) {
      for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
        int ih = ih0 + int(kh * p.dilation_h);
        if (ih < 0 || ih >= int(p.in_height)) continue;
        for (uint kw = 0; kw < p.kernel_w; ++kw) {
          int iw = iw0 + int(kw * p.dilation_w);
          if (iw < 0 || iw >= int(p.in_width)) continue;
          float xv = LOAD(x[x_base + ci * plane + uint(ih) * p.in_width + uint(iw)]);
          uint w_off = (ci * p.kernel_h + kh) * p.kernel_w + kw;
          for (uint j = 0; j < CO_BLOCK; ++j) {
            uint co = min(co0 + j, co_last);
            acc[j] += xv * LOAD(w[co * cig * khw + w_off]);
          }
        }
      }
    }
  } else {
    // The block straddles groups: each channel reads its own group.
    for (uint j = 0; j < CO_BLOCK; ++j) {
      uint co = co0 + j;
      if (co > co_last) break;
      const uint x_base = (n * p.in_channels + (co / cog) * cig) * plane;
      for (uint ci = p.ci_begin; ci < ci_end; ++ci) {
        for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
          int ih = ih0 + int(kh * p.dilation_h);
          if (ih < 0 || ih >= int(p.in_height)) continue;
          for (uint kw = 0; kw < p.kernel_w; ++kw) {
            int iw = iw0 + int(kw * p.dilation_w);
            if (iw < 0 || iw >= int(p.in_width)) continue;
            acc[j] += LOAD(x[x_base + ci * plane + uint(ih) * p.in_width + uint(iw)]) *
                      LOAD(w[(co * cig + ci) * khw + kh * p.kernel_w + kw]);
          }
        }
      }
    }
  }

  for (uint j = 0; j < CO_BLOCK; ++j) {
    uint co = co0 + j;
    if (co > co_last) break;
    uint out_index = (n * p.out_channels + co) * pixels + pix;
    float v = acc[j];
    if (HAS_BIAS) v += LOAD(bias[co]);
    if (HAS_RESIDUAL) v += LOAD(residual[out_index]);
    y[out_index] = STORE(kiln_activate(ACTIVATION, v, p.alpha, p.beta));
  }
}
