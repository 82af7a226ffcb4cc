// The windows of a 2-D conv's input as the columns of its GEMM (im2col),
// for gemm_coopmat (lower_linear.c): with P = OH * OW and rows of P8 =
// P rounded up to 8 (so every row starts uvec4-aligned),
//   cols[b][c][i][j][p] = x[b][c][oh*sh + i*dh - pt][ow*sw + j*dw - pl]
// at p = oh * OW + ow < P; zero where the window leaves x (the conv's
// zero pad, so x is read unpadded) and at p in [P, P8).
// Each invocation writes 8 values of a row (one uvec4 at fp16, two vec4
// at fp32), five divisions for the 8: a zero pad plus a rank-6 strided
// copy of one value per invocation spent five divisions on each value
// (ResNet-50 batch 32 f16 on an H100: 2.4 ms a call, docs/precision.md).
// Push constants: conv2d's (conv_params.glsl; out_channels, groups and the
// epilogue fields unused). Grid: linear over batch * in_channels *
// kernel_h * kernel_w * P8 / 8, grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "storage.glsl"
#include "conv_params.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
#ifdef KILN_FP16_STORAGE
layout(set = 0, binding = 1) writeonly buffer OutBuffer { uvec4 y8[]; };
#else
layout(set = 0, binding = 1) writeonly buffer OutBuffer { vec4 y4[]; };
#endif

void main() {
  const uint P = p.out_height * p.out_width;
  const uint runs = (P + 7) / 8;  // runs of 8 in a row
  const uint taps = p.kernel_h * p.kernel_w;
  const uint count = p.batch * p.in_channels * taps * runs;
  const uint plane_size = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < count; index += stride) {
    const uint row = index / runs;  // (b * C + c) * taps + i * KW + j
    const uint n0 = (index - row * runs) * 8;
    const uint plane = row / taps;  // b * C + c
    const uint tap = row - plane * taps;
    const uint i = tap / p.kernel_w;
    const uint j = tap - i * p.kernel_w;
    const uint base = plane * plane_size;
    const int dy = int(i * p.dilation_h) - int(p.pad_top);
    const int dx = int(j * p.dilation_w) - int(p.pad_left);
    uint oh = n0 / p.out_width;
    uint ow = n0 - oh * p.out_width;
    float v[8];
    [[unroll]] for (uint e = 0; e < 8; ++e) {
      const int ih = int(oh * p.stride_h) + dy;
      const int iw = int(ow * p.stride_w) + dx;
      // Unsigned compares take the negative coordinates too.
      const bool inside = n0 + e < P && uint(ih) < p.in_height && uint(iw) < p.in_width;
      v[e] = inside ? LOAD(x[base + uint(ih) * p.in_width + uint(iw)]) : 0.0;
      if (++ow == p.out_width) {
        ow = 0;
        ++oh;
      }
    }
#ifdef KILN_FP16_STORAGE
    y8[index] = uvec4(packHalf2x16(vec2(v[0], v[1])), packHalf2x16(vec2(v[2], v[3])),
                      packHalf2x16(vec2(v[4], v[5])), packHalf2x16(vec2(v[6], v[7])));
#else
    y4[2 * index] = vec4(v[0], v[1], v[2], v[3]);
    y4[2 * index + 1] = vec4(v[4], v[5], v[6], v[7]);
#endif
  }
}
