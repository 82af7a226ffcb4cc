// Winograd F(2x2, 3x3), step 3 of 3 (lower_winograd.c): the 16 products
// M[e][co][t] = sum_c U[e][co][c] V[e][c][t] (gemm, batch e; layout of
// winograd_input.comp's V with C_out rows) of each output tile, transformed
// back to its 2x2 outputs Y = A^T m A, with the conv's epilogue:
//   y[b][co][2 th + i][2 tw + j] = act(Y[i][j] + bias[co] + residual[...])
// for the outputs inside OH x OW (a tile of an odd size is cut).
//   A^T = [1 1 1 0; 0 1 -1 -1]
// Push constants: conv2d's (conv_params.glsl; alpha and beta are the
// activation's). Grid: linear over C_out * T, grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "kernels_codes.h"
#include "activation.glsl"
#include "conv_params.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_CONV_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_CONV_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_CONV_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;

layout(set = 0, binding = 0) readonly buffer ProductBuffer { float m[]; };
layout(set = 0, binding = 1) readonly buffer BiasBuffer { float bias[]; };  // [C_out]
layout(set = 0, binding = 2) readonly buffer ResidualBuffer { float residual[]; };  // like y
layout(set = 0, binding = 3) writeonly buffer OutputBuffer { float y[]; };

void main() {
  const uint TH = (p.out_height + 1) / 2, TW = (p.out_width + 1) / 2;
  const uint tiles = TH * TW;
  const uint T = p.batch * tiles;
  const uint T4 = (T + 3) / 4 * 4;
  const uint CO = p.out_channels;
  const uint count = CO * T;
  const uint plane = CO * T4;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < count; index += stride) {
    const uint co = index / T;
    const uint t = index - co * T;
    const uint b = t / tiles;
    const uint r = t - b * tiles;
    const uint th = r / TW;
    const uint tw = r - th * TW;
    float s[2][4];  // A^T m
    uint at = co * T4 + t;
    [[unroll]] for (uint j = 0; j < 4; ++j) {
      const float m0 = m[at + j * plane], m1 = m[at + (4 + j) * plane];
      const float m2 = m[at + (8 + j) * plane], m3 = m[at + (12 + j) * plane];
      s[0][j] = m0 + m1 + m2;
      s[1][j] = m1 - m2 - m3;
    }
    const float add = HAS_BIAS ? bias[co] : 0.0;
    const uint oh0 = 2 * th, ow0 = 2 * tw;
    const uint out0 = ((b * CO + co) * p.out_height + oh0) * p.out_width + ow0;
    [[unroll]] for (uint i = 0; i < 2; ++i) {  // (A^T m) A
      const float row[2] = {s[i][0] + s[i][1] + s[i][2], s[i][1] - s[i][2] - s[i][3]};
      [[unroll]] for (uint j = 0; j < 2; ++j) {
        if (oh0 + i < p.out_height && ow0 + j < p.out_width) {
          const uint o = out0 + i * p.out_width + j;
          float v = row[j] + add;
          if (HAS_RESIDUAL) v += residual[o];
          y[o] = kiln_activate(ACTIVATION, v, p.alpha, p.beta);
        }
      }
    }
  }
}
