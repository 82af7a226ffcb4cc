// Winograd F(2x2, 3x3), step 1 of 3 (lower_winograd.c): each 4x4 input
// patch d of a 3x3 stride-1 conv's image, transformed to V = B^T d B, as
// the B operand of the 16 products (one per element of V) that gemm runs:
//   V[e][c][t] at e * C * T4 + c * T4 + t, e = 4 * row + col,
// t = (b * TH + th) * TW + tw over the TH = ceil(OH / 2) by TW =
// ceil(OW / 2) output tiles of each image, rows of T4 = T rounded up to 4
// (so they start vec4-aligned; the tail is written as zeros). The patch of
// tile (th, tw) starts at x[2 th - pad_top][2 tw - pad_left]; zero where
// it leaves x (the conv's zero pad, so x is read unpadded).
//   B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]
// Push constants: conv2d's (conv_params.glsl; kernel, stride, dilation and
// epilogue fields unused). Grid: linear over C * T, grid-stride.
#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "conv_params.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;

layout(set = 0, binding = 0) readonly buffer InBuffer { float x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { float v[]; };

void main() {
  const uint TH = (p.out_height + 1) / 2, TW = (p.out_width + 1) / 2;
  const uint tiles = TH * TW;
  const uint T = p.batch * tiles;
  const uint T4 = (T + 3) / 4 * 4;
  const uint C = p.in_channels;
  const uint count = C * T;
  const uint plane_size = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < count; index += stride) {
    const uint c = index / T;
    const uint t = index - c * T;
    const uint b = t / tiles;
    const uint r = t - b * tiles;
    const uint th = r / TW;
    const uint tw = r - th * TW;
    const uint base = (b * C + c) * plane_size;
    const int ih0 = int(2 * th) - int(p.pad_top);
    const int iw0 = int(2 * tw) - int(p.pad_left);
    float d[4][4];
    [[unroll]] for (uint i = 0; i < 4; ++i) {
      [[unroll]] for (uint j = 0; j < 4; ++j) {
        // Unsigned compares take the negative coordinates too.
        const uint ih = uint(ih0 + int(i)), iw = uint(iw0 + int(j));
        d[i][j] = ih < p.in_height && iw < p.in_width ? x[base + ih * p.in_width + iw] : 0.0;
      }
    }
    float s[4][4];  // B^T d
    [[unroll]] for (uint j = 0; j < 4; ++j) {
      s[0][j] = d[0][j] - d[2][j];
      s[1][j] = d[1][j] + d[2][j];
      s[2][j] = d[2][j] - d[1][j];
      s[3][j] = d[1][j] - d[3][j];
    }
    const uint plane = C * T4;
    uint at = c * T4 + t;
    [[unroll]] for (uint i = 0; i < 4; ++i) {  // (B^T d) B
      v[at] = s[i][0] - s[i][2];
      v[at + plane] = s[i][1] + s[i][2];
      v[at + 2 * plane] = s[i][2] - s[i][1];
      v[at + 3 * plane] = s[i][1] - s[i][3];
      at += 4 * plane;
    }
    // The last tile of a row zeroes the row's tail (T4 - T <= 3 columns).
    if (t + 1 == T) {
      for (uint e = 0; e < 16; ++e) {
        for (uint z = T; z < T4; ++z) v[e * plane + c * T4 + z] = 0.0;
      }
    }
  }
}
