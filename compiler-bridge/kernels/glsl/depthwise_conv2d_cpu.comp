// Depthwise 2-D convolution for CPU Vulkan devices (llvmpipe): same ABI as
// depthwise_conv2d.comp. Each invocation computes 8 neighbouring outputs of
// one output row (TILE_W must be 8: config.c), items (n, c, oh, ow block)
// grid-stride; kiln_kernel_grid_linear divides the dispatch count by 8 for
// this variant. llvmpipe pays a per-lane loop for every storage load and
// runs both sides of every branch, so the 3-wide path (stride 1 or 2, no
// horizontal dilation) reads each input row as five aligned vec4s, shifts
// them into place with selects and handles both strides in one body;
// other kernels take a plain per-output loop.
// Inputs (bindings 0-3) are uniform texel buffers of vec4 f32 (samplerBuffer,
// texelFetch): llvmpipe gathers a texel for all 8 lanes without a branch,
// where a storage-buffer load loops over the lanes (4.6x cheaper per vec4
// load in a lavapipe micro-benchmark). The bridge marks these bindings
// `texel` (kiln_kernel_spirv_t.texel_bindings); the output stays storage.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_CONV_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_CONV_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_CONV_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
layout(constant_id = KILN_SPEC_CONV_TILE_W) const uint TW = 8;

// vec4 arrays; scalar element i is v4[i >> 2][i & 3].
layout(set = 0, binding = 0) uniform samplerBuffer x4_t;
layout(set = 0, binding = 1) uniform samplerBuffer w_t;  // [C_out, 1, KH, KW]
layout(set = 0, binding = 2) uniform samplerBuffer bias_t;
layout(set = 0, binding = 3) uniform samplerBuffer residual4_t;
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { vec4 y4[]; };

#include "conv_params.glsl"

// Scalar element i of a vec4 texel buffer.
float w_ld(uint i) { return texelFetch(w_t, int(i >> 2))[i & 3]; }
float w_ld(int i) { return w_ld(uint(i)); }
float bias_ld(uint i) { return texelFetch(bias_t, int(i >> 2))[i & 3]; }
float bias_ld(int i) { return bias_ld(uint(i)); }

float x_at(uint i) { return texelFetch(x4_t, int(i >> 2))[i & 3]; }

void store_out(uint index, float acc) {
  if (HAS_RESIDUAL) acc += texelFetch(residual4_t, int(index >> 2))[index & 3];
  y4[index >> 2][index & 3] = kiln_activate(ACTIVATION, acc, p.alpha, p.beta);
}

// Elements sh..sh+3 of the 8 values a|b.
vec4 shift4(vec4 a, vec4 b, uint sh) {
  return sh == 0 ? a : sh == 1 ? vec4(a.yzw, b.x) : sh == 2 ? vec4(a.zw, b.xy)
                                                           : vec4(a.w, b.xyz);
}

vec4 activate4(vec4 v) {
  for (uint e = 0; e < 4; ++e) v[e] = kiln_activate(ACTIVATION, v[e], p.alpha, p.beta);
  return v;
}

void block3(uint nc, uint co, uint oh, uint ow0, uint x_base, uint w_base) {
  const bool s1 = p.stride_w == 1;
  const int iw0 = int(ow0 * p.stride_w) - int(p.pad_left);
  const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
  const int x_last4 = textureSize(x4_t) - 1;
  // Column validity of the 17 window columns iw0 + [0, 17).
  const ivec4 col = ivec4(iw0) + ivec4(0, 1, 2, 3);
  const int in_w = int(p.in_width);
  // Selects, not multiplies: a neighbouring row's Inf must not become NaN.
  bvec4 ok0 = bvec4(uvec4(greaterThanEqual(col, ivec4(0))) & uvec4(lessThan(col, ivec4(in_w))));
  bvec4 ok1 = bvec4(uvec4(greaterThanEqual(col + 4, ivec4(0))) & uvec4(lessThan(col + 4, ivec4(in_w))));
  bvec4 ok2 = bvec4(uvec4(greaterThanEqual(col + 8, ivec4(0))) & uvec4(lessThan(col + 8, ivec4(in_w))));
  bvec4 ok3 = bvec4(uvec4(greaterThanEqual(col + 12, ivec4(0))) & uvec4(lessThan(col + 12, ivec4(in_w))));
  bool ok4 = iw0 + 16 >= 0 && iw0 + 16 < in_w;
  vec4 lo = vec4(0), hi = vec4(0);
  for (uint kh = 0; kh < p.kernel_h; ++kh) {
    const int ih = ih0 + int(kh * p.dilation_h);
    if (ih < 0 || ih >= int(p.in_height)) continue;
    // Element index of column iw0 (negative at the very start is fine:
    // >> floors, & 3 gives the matching shift, blocks are clamped).
    const int start = int(x_base) + ih * in_w + iw0;
    const int q = start >> 2;
    const uint sh = uint(start & 3);
    vec4 q0 = texelFetch(x4_t, int(clamp(q, 0, x_last4))), q1 = texelFetch(x4_t, int(clamp(q + 1, 0, x_last4)));
    vec4 q2 = texelFetch(x4_t, int(clamp(q + 2, 0, x_last4))), q3 = texelFetch(x4_t, int(clamp(q + 3, 0, x_last4)));
    vec4 q4 = texelFetch(x4_t, int(clamp(q + 4, 0, x_last4)));
    vec4 r0 = mix(vec4(0), shift4(q0, q1, sh), ok0);
    vec4 r1 = mix(vec4(0), shift4(q1, q2, sh), ok1);
    vec4 r2 = mix(vec4(0), shift4(q2, q3, sh), ok2);
    vec4 r3 = mix(vec4(0), shift4(q3, q4, sh), ok3);
    float r4 = ok4 ? q4[sh] : 0.0;
    const uint wr = w_base + kh * 3;
    const float w0 = w_ld(wr), w1 = w_ld(wr + 1), w2 = w_ld(wr + 2);
    // Stride 1: outputs t use columns t, t+1, t+2.
    vec4 lo1 = r0 * w0 + vec4(r0.yzw, r1.x) * w1 + vec4(r0.zw, r1.xy) * w2;
    vec4 hi1 = r1 * w0 + vec4(r1.yzw, r2.x) * w1 + vec4(r1.zw, r2.xy) * w2;
    // Stride 2: outputs t use columns 2t, 2t+1, 2t+2.
    vec4 lo2 = vec4(r0.xz, r1.xz) * w0 + vec4(r0.yw, r1.yw) * w1 +
               vec4(r0.z, r1.x, r1.z, r2.x) * w2;
    vec4 hi2 = vec4(r2.xz, r3.xz) * w0 + vec4(r2.yw, r3.yw) * w1 +
               vec4(r2.z, r3.x, r3.z, r4) * w2;
    lo += s1 ? lo1 : lo2;
    hi += s1 ? hi1 : hi2;
  }
  if (HAS_BIAS) {
    lo += bias_ld(co);
    hi += bias_ld(co);
  }
  const uint out0 = (nc * p.out_height + oh) * p.out_width + ow0;
  // Rows of a multiple of 4 outputs: whole vec4s (straight-line); other
  // widths: a scalar loop that runs zero times when unused.
  const bool v4 = (p.out_width & 3) == 0;
  if (v4) {
    vec4 o = lo;
    if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(out0 >> 2));
    y4[out0 >> 2] = activate4(o);
    if (ow0 + 4 < p.out_width) {
      o = hi;
      if (HAS_RESIDUAL) o += texelFetch(residual4_t, int((out0 >> 2) + 1));
      y4[(out0 >> 2) + 1] = activate4(o);
    }
  }
  const uint scalar_count = v4 ? 0 : min(TW, p.out_width - ow0);
  for (uint t = 0; t < scalar_count; ++t) {
    store_out(out0 + t, t < 4 ? lo[t & 3] : hi[t & 3]);
  }
}

void main() {
  if (TW != 8) return;  // block3 is written for 8 outputs
  const uint blocks_w = (p.out_width + TW - 1) / TW;
  const uint items = p.batch * p.out_channels * p.out_height * blocks_w;
  const uint multiplier = p.out_channels / p.in_channels;
  const uint plane = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  // The vec4 window reads whole blocks, clamped to the binding: only safe
  // when the input tensor ends on a block boundary.
  const bool wide3 = p.kernel_w == 3 && p.dilation_w == 1 &&
                     (p.stride_w == 1 || p.stride_w == 2) &&
                     ((p.batch * p.in_channels * plane) & 3) == 0;
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
    const uint count = min(TW, p.out_width - ow0);
    for (uint t = 0; t < count; ++t) {
      const uint ow = ow0 + t;
      const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
      const int iw0 = int(ow * p.stride_w) - int(p.pad_left);
      float acc = 0.0;
      for (uint kh = 0; kh < p.kernel_h; ++kh) {
        int ih = ih0 + int(kh * p.dilation_h);
        if (ih < 0 || ih >= int(p.in_height)) continue;
        for (uint kw = 0; kw < p.kernel_w; ++kw) {
          int iw = iw0 + int(kw * p.dilation_w);
          if (iw < 0 || iw >= int(p.in_width)) continue;
          acc += x_at(x_base + uint(ih) * p.in_width + uint(iw)) *
                 w_ld(w_base + kh * p.kernel_w + kw);
        }
      }
      if (HAS_BIAS) acc += bias_ld(co);
      store_out((nc * p.out_height + oh) * p.out_width + ow, acc);
    }
  }
}
