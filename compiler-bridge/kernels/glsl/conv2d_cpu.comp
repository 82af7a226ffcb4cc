// Direct 2-D convolution for CPU Vulkan devices (llvmpipe): same ABI as
// conv2d.comp. Each invocation computes 8 neighbouring output pixels (in
// flattened OH*OW order) for 8 output channels, held in sixteen vec4s, so
// every weight load serves 8 pixels and every input load 8 channels
// (16 loads per 64 multiply-adds; 4 pixels took 12 per 32). CO_BLOCK must be
// 8 and TILE_W 8 (config.c); grid: (ceil(ceil(OH*OW / 8) / WG_X),
// ceil(C_out / 8), N). A channel block that straddles groups is computed
// one channel at a time.
// Inputs (bindings 0-3) are uniform texel buffers of vec4 f32 (samplerBuffer,
// texelFetch): llvmpipe gathers a texel for all 8 lanes without a branch,
// where a storage-buffer load loops over the lanes (4.6x cheaper per vec4
// load in a lavapipe micro-benchmark). The bridge marks these bindings
// `texel` (kiln_kernel_spirv_t.texel_bindings); the output stays storage.
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "activation.glsl"

layout(local_size_x_id = 0, local_size_y_id = 1, local_size_z = 1) in;  // y: 1 (conv2d_gemm's ABI)
layout(constant_id = KILN_SPEC_CONV_CO_BLOCK) const uint CO_BLOCK = 8;
layout(constant_id = KILN_SPEC_CONV_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_CONV_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_CONV_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
layout(constant_id = KILN_SPEC_CONV_TILE_W) const uint TILE_W = 4;
// The paths built in (KILN_CONV_CPU_* bits; llvmpipe runs every unused loop
// body once per invocation, masked): the bridge builds each dispatch's
// layout alone; a layout that needs a path left out writes NaN.
layout(constant_id = KILN_SPEC_CONV_CPU_PATHS) const uint PATHS = KILN_CONV_CPU_ALL;
bool built(uint path) { return (PATHS & path) != 0; }

layout(set = 0, binding = 0) uniform samplerBuffer x_t;
layout(set = 0, binding = 1) uniform samplerBuffer w_t;  // [C_out, C_in/groups, KH, KW]
layout(set = 0, binding = 2) uniform samplerBuffer bias_t;
layout(set = 0, binding = 3) uniform samplerBuffer residual_t;
// vec4 array; scalar element i is y4[i >> 2][i & 3] (a plain scalar store).
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { vec4 y4[]; };

#include "conv_params.glsl"

// Scalar element i of a vec4 texel buffer.
float x_ld(uint i) { return texelFetch(x_t, int(i >> 2))[i & 3]; }
float x_ld(int i) { return x_ld(uint(i)); }
float w_ld(uint i) { return texelFetch(w_t, int(i >> 2))[i & 3]; }
float w_ld(int i) { return w_ld(uint(i)); }
float bias_ld(uint i) { return texelFetch(bias_t, int(i >> 2))[i & 3]; }
float bias_ld(int i) { return bias_ld(uint(i)); }
float residual_ld(uint i) { return texelFetch(residual_t, int(i >> 2))[i & 3]; }
float residual_ld(int i) { return residual_ld(uint(i)); }

vec4 activate4(vec4 v) {
  for (uint e = 0; e < 4; ++e) v[e] = kiln_activate(ACTIVATION, v[e], p.alpha, p.beta);
  return v;
}

// Stores channel co's 4 pixels pix0..pix0+3 (those < pixels), bias added:
// one vec4 store when they are whole and aligned (pixels % 4 == 0), else
// a scalar loop (zero trips otherwise: llvmpipe runs both sides of a
// branch, and each storage store is a loop over lanes).
void store4(uint n, uint co, uint pix0, uint pixels, vec4 v) {
  if (co >= p.out_channels || pix0 >= pixels) return;
  const uint base = (n * p.out_channels + co) * pixels + pix0;
  const bool whole = (pixels & 3) == 0;
  if (whole) {
    if (HAS_RESIDUAL) v += texelFetch(residual_t, int(base >> 2));
    y4[base >> 2] = activate4(v);
  }
  const uint scalar_count = whole || !built(KILN_CONV_CPU_SCALAR_STORE) ? 0 : min(4, pixels - pix0);
  for (uint t = 0; t < scalar_count; ++t) {
    float o = v[t];
    if (HAS_RESIDUAL) o += residual_ld(base + t);
    y4[(base + t) >> 2][(base + t) & 3] = kiln_activate(ACTIVATION, o, p.alpha, p.beta);
  }
}

// Channel co's 8 pixels pix0..pix0+7: one bias load for both halves.
void store8(uint n, uint co, uint pix0, uint pixels, vec4 va, vec4 vb) {
  if (co >= p.out_channels) return;
  if (HAS_BIAS) {
    const float b = bias_ld(co);
    va += b;
    vb += b;
  }
  store4(n, co, pix0, pixels, va);
  store4(n, co, pix0 + 4, pixels, vb);
}

// Input coordinates of 4 pixels pix0..pix0+3 (clamped past the end).
void pixel_origins(uint pix0, uint pixels, out ivec4 ih0, out ivec4 iw0) {
  for (uint t = 0; t < 4; ++t) {
    uint pix = min(pix0 + t, pixels - 1);
    ih0[t] = int((pix / p.out_width) * p.stride_h) - int(p.pad_top);
    iw0[t] = int((pix % p.out_width) * p.stride_w) - int(p.pad_left);
  }
}

// Input values of 4 pixels at tap offset (dh, dw) of channel plane x_plane;
// zero where the tap falls in the padding.
vec4 tap4(ivec4 ih0, ivec4 iw0, int dh, int dw, uint x_plane) {
  const ivec4 in_h = ivec4(p.in_height), in_w = ivec4(p.in_width);
  const ivec4 ih = ih0 + dh, iw = iw0 + dw;
  const bvec4 ok = bvec4(uvec4(greaterThanEqual(ih, ivec4(0))) & uvec4(lessThan(ih, in_h)) &
                         uvec4(greaterThanEqual(iw, ivec4(0))) & uvec4(lessThan(iw, in_w)));
  const uvec4 at = uvec4(clamp(ih, ivec4(0), in_h - 1) * in_w + clamp(iw, ivec4(0), in_w - 1)) +
                   x_plane;
  return mix(vec4(0), vec4(x_ld(at.x), x_ld(at.y), x_ld(at.z), x_ld(at.w)), ok);
}

// Elements sh..sh+3 of the 8 values a|b.
vec4 shift4(vec4 a, vec4 b, uint sh) {
  return sh == 0 ? a : sh == 1 ? vec4(a.yzw, b.x) : sh == 2 ? vec4(a.zw, b.xy)
                                                           : vec4(a.w, b.xyz);
}

// Columns first + [0, 4) that lie inside the row.
bvec4 cols_ok(int first) {
  const ivec4 col = ivec4(first) + ivec4(0, 1, 2, 3);
  return bvec4(uvec4(greaterThanEqual(col, ivec4(0))) &
               uvec4(lessThan(col, ivec4(int(p.in_width)))));
}

// Weights at + [0, 3) (one kernel row) from two texels.
vec3 w_row3(uint at) {
  const uint q = at >> 2;
  return shift4(texelFetch(w_t, int(q)), texelFetch(w_t, int(q + 1)), at & 3).xyz;
}

void main() {
  if (CO_BLOCK != 8 || TILE_W != 8) {
    // The tile below is 8 x 8; any other (a module config.c did not
    // make): NaN over the channels and pixels the grid gave this
    // invocation (at most 64 of each), never an output left unwritten.
    const uint pixels = p.out_height * p.out_width;
    const uint pix0 = gl_GlobalInvocationID.x * TILE_W, co0 = gl_WorkGroupID.y * CO_BLOCK;
    const uint channels = min(CO_BLOCK, 64u), pxs = min(TILE_W, 64u);
    for (uint i = 0; i < channels * pxs; ++i) {
      const uint co = co0 + i / pxs, pix = pix0 + i % pxs;
      const uint at = (gl_WorkGroupID.z * p.out_channels + co) * pixels + pix;
      if (co < p.out_channels && pix < pixels) y4[at >> 2][at & 3] = uintBitsToFloat(0x7fc00000u);
    }
    return;
  }
  const uint pixels = p.out_height * p.out_width;
  const uint pix0 = gl_GlobalInvocationID.x * TILE_W;
  const uint n = gl_WorkGroupID.z;
  const uint co0 = gl_WorkGroupID.y * CO_BLOCK;
  if (pix0 >= pixels || co0 >= p.out_channels) return;
  const uint cog = p.out_channels / p.groups;
  const uint cig = p.in_channels / p.groups;
  const uint khw = p.kernel_h * p.kernel_w;
  const uint plane = p.in_height * p.in_width;
  const uint co_last = min(co0 + CO_BLOCK, p.out_channels) - 1;
  const uint ci_end = kiln_ci_end(cig), kh_end = kiln_kh_end();

  // Top-left input coordinates of pixels pix0 + [0, 4) (a) and + [4, 8) (b).
  ivec4 ih0a, iw0a, ih0b, iw0b;
  pixel_origins(pix0, pixels, ih0a, iw0a);
  pixel_origins(pix0 + 4, pixels, ih0b, iw0b);

  // The whole block in one group: share each input value across 8
  // channels, and each weight across 8 pixels (16 loads per 64 MACs).
  const bool shared_group = co0 / cog == co_last / cog;
  const uint x_base = (n * p.in_channels + (co0 / cog) * cig) * plane;
  uint wc[8];
  for (uint j = 0; j < 8; ++j) wc[j] = min(co0 + j, co_last) * cig * khw;
  // c<channel><half>: pixels 0..3 (a) and 4..7 (b).
  vec4 c0a = vec4(0), c1a = vec4(0), c2a = vec4(0), c3a = vec4(0);
  vec4 c4a = vec4(0), c5a = vec4(0), c6a = vec4(0), c7a = vec4(0);
  vec4 c0b = vec4(0), c1b = vec4(0), c2b = vec4(0), c3b = vec4(0);
  vec4 c4b = vec4(0), c5b = vec4(0), c6b = vec4(0), c7b = vec4(0);
  // 3-wide kernels at stride 1 or 2 with the 8 pixels in one output row
  // (out_width % 8 == 0): each kernel row of each input channel reads the
  // input row as six texels shifted into place (not 24 gathers) and each
  // channel's 3 weights as two texels (not 3); 22 loads per 3 taps, not 48.
  const bool row8 = p.kernel_w == 3 && p.dilation_w == 1 &&
                    (p.stride_w == 1 || p.stride_w == 2) && (p.out_width & 7) == 0;
  const uint row8_end = (shared_group && row8) ? ci_end : 0;
  const uint shared_end = (shared_group && !row8) ? ci_end : 0;
  {
    const bool s1 = p.stride_w == 1;
    const uint oh = pix0 / p.out_width;
    const int iw0 = int((pix0 % p.out_width) * p.stride_w) - int(p.pad_left);
    const bvec4 ok0 = cols_ok(iw0), ok1 = cols_ok(iw0 + 4), ok2 = cols_ok(iw0 + 8);
    const bvec4 ok3 = cols_ok(iw0 + 12), ok4 = cols_ok(iw0 + 16);
    const int x_last4 = textureSize(x_t) - 1;
    for (uint ci = p.ci_begin; built(KILN_CONV_CPU_ROW8) && ci < row8_end; ++ci) {
      for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
        const int ih = int(oh * p.stride_h + kh * p.dilation_h) - int(p.pad_top);
        const bool row_ok = ih >= 0 && ih < int(p.in_height);
        const int start = int(x_base + ci * plane) +
                          clamp(ih, 0, int(p.in_height) - 1) * int(p.in_width) + iw0;
        const int q = start >> 2;
        const uint sh = uint(start & 3);
        const vec4 q0 = texelFetch(x_t, clamp(q, 0, x_last4));
        const vec4 q1 = texelFetch(x_t, clamp(q + 1, 0, x_last4));
        const vec4 q2 = texelFetch(x_t, clamp(q + 2, 0, x_last4));
        const vec4 q3 = texelFetch(x_t, clamp(q + 3, 0, x_last4));
        const vec4 q4 = texelFetch(x_t, clamp(q + 4, 0, x_last4));
        const vec4 q5 = texelFetch(x_t, clamp(q + 5, 0, x_last4));
        // Selects, not multiplies: a padding column's Inf must not become NaN.
        const bvec4 r = bvec4(row_ok);
        const vec4 r0 = mix(vec4(0), shift4(q0, q1, sh), bvec4(uvec4(ok0) & uvec4(r)));
        const vec4 r1 = mix(vec4(0), shift4(q1, q2, sh), bvec4(uvec4(ok1) & uvec4(r)));
        const vec4 r2 = mix(vec4(0), shift4(q2, q3, sh), bvec4(uvec4(ok2) & uvec4(r)));
        const vec4 r3 = mix(vec4(0), shift4(q3, q4, sh), bvec4(uvec4(ok3) & uvec4(r)));
        const vec4 r4 = mix(vec4(0), shift4(q4, q5, sh), bvec4(uvec4(ok4) & uvec4(r)));
        // Input of tap kw for pixels 0..3 (a) and 4..7 (b): column t*s + kw.
        const vec4 x0a = s1 ? r0 : vec4(r0.xz, r1.xz);
        const vec4 x1a = s1 ? vec4(r0.yzw, r1.x) : vec4(r0.yw, r1.yw);
        const vec4 x2a = s1 ? vec4(r0.zw, r1.xy) : vec4(r0.z, r1.x, r1.z, r2.x);
        const vec4 x0b = s1 ? r1 : vec4(r2.xz, r3.xz);
        const vec4 x1b = s1 ? vec4(r1.yzw, r2.x) : vec4(r2.yw, r3.yw);
        const vec4 x2b = s1 ? vec4(r1.zw, r2.xy) : vec4(r2.z, r3.x, r3.z, r4.x);
        const uint w_off = (ci * p.kernel_h + kh) * 3;
#define KILN_CONV_ROW(j)                                       \
        {                                                      \
          const vec3 wj = w_row3(wc[j] + w_off);               \
          c##j##a += x0a * wj.x + x1a * wj.y + x2a * wj.z;     \
          c##j##b += x0b * wj.x + x1b * wj.y + x2b * wj.z;     \
        }
        KILN_CONV_ROW(0) KILN_CONV_ROW(1) KILN_CONV_ROW(2) KILN_CONV_ROW(3)
        KILN_CONV_ROW(4) KILN_CONV_ROW(5) KILN_CONV_ROW(6) KILN_CONV_ROW(7)
      }
    }
  }
  for (uint ci = p.ci_begin; built(KILN_CONV_CPU_TAPS) && ci < shared_end; ++ci) {
    const uint x_plane = x_base + ci * plane;
    for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
      const int dh = int(kh * p.dilation_h);
      for (uint kw = 0; kw < p.kernel_w; ++kw) {
        const int dw = int(kw * p.dilation_w);
        const vec4 xa = tap4(ih0a, iw0a, dh, dw, x_plane);
        const vec4 xb = tap4(ih0b, iw0b, dh, dw, x_plane);
        const uint w_off = (ci * p.kernel_h + kh) * p.kernel_w + kw;
#define KILN_CONV_CHANNEL(j)                       \
        {                                          \
          const float wj = w_ld(wc[j] + w_off);    \
          c##j##a += xa * wj;                      \
          c##j##b += xb * wj;                      \
        }
        KILN_CONV_CHANNEL(0) KILN_CONV_CHANNEL(1) KILN_CONV_CHANNEL(2) KILN_CONV_CHANNEL(3)
        KILN_CONV_CHANNEL(4) KILN_CONV_CHANNEL(5) KILN_CONV_CHANNEL(6) KILN_CONV_CHANNEL(7)
      }
    }
  }
  const uint needed = (row8_end > p.ci_begin ? KILN_CONV_CPU_ROW8 : 0) |
                      (shared_end > p.ci_begin ? KILN_CONV_CPU_TAPS : 0) |
                      (shared_group ? 0 : KILN_CONV_CPU_OWN) |
                      ((pixels & 3) == 0 ? 0 : KILN_CONV_CPU_SCALAR_STORE);
  const bool complete = (needed & ~PATHS) == 0;
  // One store8 in a loop rather than eight inlined copies (llvmpipe
  // compiles each texel fetch and storage store into a long sequence).
  const uint shared_stores = shared_group ? 8 : 0;
  for (uint j = 0; j < shared_stores; ++j) {
    const vec4 va = j == 0 ? c0a : j == 1 ? c1a : j == 2 ? c2a : j == 3 ? c3a
                  : j == 4 ? c4a : j == 5 ? c5a : j == 6 ? c6a : c7a;
    const vec4 vb = j == 0 ? c0b : j == 1 ? c1b : j == 2 ? c2b : j == 3 ? c3b
                  : j == 4 ? c4b : j == 5 ? c5b : j == 6 ? c6b : c7b;
    store8(n, co0 + j, pix0, pixels, va, vb);
  }

  // The block straddles groups: one channel at a time, each from its group.
  const uint own_count = shared_group ? 0 : co_last + 1 - co0;
  for (uint j = 0; built(KILN_CONV_CPU_OWN) && j < own_count; ++j) {
    const uint co = co0 + j;
    const uint xb = (n * p.in_channels + (co / cog) * cig) * plane;
    vec4 acc_a = vec4(0), acc_b = vec4(0);
    for (uint ci = p.ci_begin; ci < ci_end; ++ci) {
      for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
        const int dh = int(kh * p.dilation_h);
        for (uint kw = 0; kw < p.kernel_w; ++kw) {
          const int dw = int(kw * p.dilation_w);
          const float wv = w_ld((co * cig + ci) * khw + kh * p.kernel_w + kw);
          acc_a += tap4(ih0a, iw0a, dh, dw, xb + ci * plane) * wv;
          acc_b += tap4(ih0b, iw0b, dh, dw, xb + ci * plane) * wv;
        }
      }
    }
    store8(n, co, pix0, pixels, acc_a, acc_b);
  }
  // A layout that needs a path this pipeline was built without: NaN over
  // the whole block, after the epilogue (an activation may map NaN to a
  // number); one masked pass otherwise.
  const uint nan_count = complete ? 0 : 64;
  for (uint i = 0; i < nan_count; ++i) {
    const uint co = co0 + i / 8, pix = pix0 + i % 8;
    const uint at = (n * p.out_channels + co) * pixels + pix;
    if (co < p.out_channels && pix < pixels) y4[at >> 2][at & 3] = uintBitsToFloat(0x7fc00000u);
  }
}
