// Depthwise 2-D convolution for CPU Vulkan devices (llvmpipe): same ABI as
// depthwise_conv2d.comp. Each invocation computes 8 neighbouring outputs of
// one output row (TILE_W must be 8: config.c), items (n, c, oh, ow block)
// grid-stride; kiln_kernel_grid_linear divides the dispatch count by 8 for
// this variant. llvmpipe pays a per-lane loop for every storage load and
// runs both sides of every branch, so the 3x3 path (stride 1 or 2, no
// horizontal dilation; block3) reads each input row as six aligned vec4s,
// shifts them into place with selects and handles both strides in one
// body, 16 outputs per item at stride 1; other kernels take a plain
// per-output loop.
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

// Columns iw0 + [0, 4) .. + [16, 20) that lie inside the row.
bvec4 cols_ok(int first, int in_w) {
  const ivec4 col = ivec4(first) + ivec4(0, 1, 2, 3);
  return bvec4(uvec4(greaterThanEqual(col, ivec4(0))) & uvec4(lessThan(col, ivec4(in_w))));
}

// 3x3 kernels, stride 1 or 2: one item is 16 outputs of a row at stride 1
// (columns +0..+17) or 8 at stride 2 (columns +0..+16), both read as six
// aligned texels per input row and shifted into place with selects (both
// strides in one body: llvmpipe runs both sides of a branch). The nine
// weights are three texels. Loads per output: 1.3 (stride 1), 2.6 (stride
// 2), from 3 with 8 outputs and scalar weights.
void block3(uint nc, uint co, uint oh, uint ow0, uint x_base, uint w_base) {
  const bool s1 = p.stride_w == 1;
  const int iw0 = int(ow0 * p.stride_w) - int(p.pad_left);
  const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
  const int x_last4 = textureSize(x4_t) - 1;
  const int in_w = int(p.in_width);
  // Selects, not multiplies: a neighbouring row's Inf must not become NaN.
  const bvec4 ok0 = cols_ok(iw0, in_w), ok1 = cols_ok(iw0 + 4, in_w);
  const bvec4 ok2 = cols_ok(iw0 + 8, in_w), ok3 = cols_ok(iw0 + 12, in_w);
  const bvec4 ok4 = cols_ok(iw0 + 16, in_w);
  // Weights w_base + [0, 9): texels from w_base's, shifted by w_base & 3.
  const uint wq = w_base >> 2, wsh = w_base & 3;
  const vec4 wt0 = texelFetch(w_t, int(wq)), wt1 = texelFetch(w_t, int(wq + 1));
  const vec4 wt2 = texelFetch(w_t, int(wq + 2));
  const vec4 wa = shift4(wt0, wt1, wsh), wb = shift4(wt1, wt2, wsh);
  const float w8 = wt2[wsh];
  vec4 acc0 = vec4(0), acc1 = vec4(0), acc2 = vec4(0), acc3 = vec4(0);
  for (uint kh = 0; kh < 3; ++kh) {
    const int ih = ih0 + int(kh * p.dilation_h);
    if (ih < 0 || ih >= int(p.in_height)) continue;
    // Element index of column iw0 (negative at the very start is fine:
    // >> floors, & 3 gives the matching shift, texels are clamped).
    const int start = int(x_base) + ih * in_w + iw0;
    const int q = start >> 2;
    const uint sh = uint(start & 3);
    vec4 q0 = texelFetch(x4_t, clamp(q, 0, x_last4));
    vec4 q1 = texelFetch(x4_t, clamp(q + 1, 0, x_last4));
    vec4 q2 = texelFetch(x4_t, clamp(q + 2, 0, x_last4));
    vec4 q3 = texelFetch(x4_t, clamp(q + 3, 0, x_last4));
    vec4 q4 = texelFetch(x4_t, clamp(q + 4, 0, x_last4));
    vec4 q5 = texelFetch(x4_t, clamp(q + 5, 0, x_last4));
    vec4 r0 = mix(vec4(0), shift4(q0, q1, sh), ok0);
    vec4 r1 = mix(vec4(0), shift4(q1, q2, sh), ok1);
    vec4 r2 = mix(vec4(0), shift4(q2, q3, sh), ok2);
    vec4 r3 = mix(vec4(0), shift4(q3, q4, sh), ok3);
    vec4 r4 = mix(vec4(0), shift4(q4, q5, sh), ok4);
    const float w0 = kh == 0 ? wa.x : kh == 1 ? wa.w : wb.z;
    const float w1 = kh == 0 ? wa.y : kh == 1 ? wb.x : wb.w;
    const float w2 = kh == 0 ? wa.z : kh == 1 ? wb.y : w8;
    // Stride 1: outputs t use columns t, t+1, t+2.
    vec4 o0 = r0 * w0 + vec4(r0.yzw, r1.x) * w1 + vec4(r0.zw, r1.xy) * w2;
    vec4 o1 = r1 * w0 + vec4(r1.yzw, r2.x) * w1 + vec4(r1.zw, r2.xy) * w2;
    vec4 o2 = r2 * w0 + vec4(r2.yzw, r3.x) * w1 + vec4(r2.zw, r3.xy) * w2;
    vec4 o3 = r3 * w0 + vec4(r3.yzw, r4.x) * w1 + vec4(r3.zw, r4.xy) * w2;
    // Stride 2: outputs t use columns 2t, 2t+1, 2t+2.
    vec4 e0 = vec4(r0.xz, r1.xz) * w0 + vec4(r0.yw, r1.yw) * w1 +
              vec4(r0.z, r1.x, r1.z, r2.x) * w2;
    vec4 e1 = vec4(r2.xz, r3.xz) * w0 + vec4(r2.yw, r3.yw) * w1 +
              vec4(r2.z, r3.x, r3.z, r4.x) * w2;
    acc0 += s1 ? o0 : e0;
    acc1 += s1 ? o1 : e1;
    acc2 += o2;
    acc3 += o3;
  }
  if (HAS_BIAS) {
    const float b = bias_ld(co);
    acc0 += b;
    acc1 += b;
    acc2 += b;
    acc3 += b;
  }
  const uint count = min(s1 ? 16 : 8, p.out_width - ow0);
  const uint out0 = (nc * p.out_height + oh) * p.out_width + ow0;
  // Rows of a multiple of 4 outputs: whole vec4s (straight-line); other
  // widths: a scalar loop that runs zero times when unused.
  const bool v4 = (p.out_width & 3) == 0;
  if (v4) {
    const uint o4 = out0 >> 2;
    vec4 o = acc0;
    if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4));
    y4[o4] = activate4(o);
    if (count > 4) {
      o = acc1;
      if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4 + 1));
      y4[o4 + 1] = activate4(o);
    }
    if (count > 8) {
      o = acc2;
      if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4 + 2));
      y4[o4 + 2] = activate4(o);
    }
    if (count > 12) {
      o = acc3;
      if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4 + 3));
      y4[o4 + 3] = activate4(o);
    }
  }
  const uint scalar_count = v4 ? 0 : count;
  for (uint t = 0; t < scalar_count; ++t) {
    const uint e = t & 3;
    store_out(out0 + t, t < 4 ? acc0[e] : t < 8 ? acc1[e] : t < 12 ? acc2[e] : acc3[e]);
  }
}

void main() {
  if (TW != 8) return;  // the grid is sized for 8 outputs per item
  const uint blocks_w = (p.out_width + TW - 1) / TW;
  const uint items = p.batch * p.out_channels * p.out_height * blocks_w;
  // block3's items: 16 outputs at stride 1 (the grid, sized for 8, leaves
  // the spare invocations idle).
  const uint tile3 = p.stride_w == 1 ? 16 : 8;
  const uint blocks3 = (p.out_width + tile3 - 1) / tile3;
  const uint items3 = p.batch * p.out_channels * p.out_height * blocks3;
  const uint multiplier = p.out_channels / p.in_channels;
  const uint plane = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  // The vec4 window reads whole blocks, clamped to the binding: only safe
  // when the input tensor ends on a block boundary.
  const bool wide3 = p.kernel_w == 3 && p.kernel_h == 3 && p.dilation_w == 1 &&
                     (p.stride_w == 1 || p.stride_w == 2) &&
                     ((p.batch * p.in_channels * plane) & 3) == 0;
  // Each path is its own loop: the path not taken costs one masked
  // iteration rather than one per item.
  for (uint item = gl_GlobalInvocationID.x; wide3 && item < items3; item += stride) {
    const uint ow0 = (item % blocks3) * tile3;
    const uint oh = (item / blocks3) % p.out_height;
    const uint nc = item / (blocks3 * p.out_height);
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
