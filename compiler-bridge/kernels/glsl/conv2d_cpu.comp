// Direct 2-D convolution for CPU Vulkan devices (llvmpipe): same ABI as
// conv2d.comp. Each invocation computes 4 neighbouring output pixels (in
// flattened OH*OW order) for 8 output channels, held in eight vec4s, so
// every weight load serves 4 pixels and every input load 8 channels
// (llvmpipe pays a per-lane loop for each storage load). CO_BLOCK must be
// 8 and TILE_W 4 (config.c); grid: (ceil(ceil(OH*OW / 4) / WG_X),
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

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_CONV_CO_BLOCK) const uint CO_BLOCK = 8;
layout(constant_id = KILN_SPEC_CONV_ACTIVATION) const uint ACTIVATION = 0;
layout(constant_id = KILN_SPEC_CONV_HAS_BIAS) const bool HAS_BIAS = false;
layout(constant_id = KILN_SPEC_CONV_HAS_RESIDUAL) const bool HAS_RESIDUAL = false;
layout(constant_id = KILN_SPEC_CONV_TILE_W) const uint TILE_W = 4;

layout(set = 0, binding = 0) uniform samplerBuffer x_t;
layout(set = 0, binding = 1) uniform samplerBuffer w_t;  // [C_out, C_in/groups, KH, KW]
layout(set = 0, binding = 2) uniform samplerBuffer bias_t;
layout(set = 0, binding = 3) uniform samplerBuffer residual_t;
layout(set = 0, binding = 4) writeonly buffer OutputBuffer { float y[]; };

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

// Stores channel co's 4 pixels pix0..pix0+3 (those < pixels).
void store4(uint n, uint co, uint pix0, uint pixels, vec4 v) {
  if (co >= p.out_channels) return;
  const uint base = (n * p.out_channels + co) * pixels + pix0;
  if (HAS_BIAS) v += bias_ld(co);
  for (uint t = 0; t < 4; ++t) {
    if (pix0 + t >= pixels) break;
    float o = v[t];
    if (HAS_RESIDUAL) o += residual_ld(base + t);
    y[base + t] = kiln_activate(ACTIVATION, o, p.alpha, p.beta);
  }
}

void main() {
  if (CO_BLOCK != 8 || TILE_W != 4) return;  // the tile below is 8 x 4
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

  // Top-left input coordinate of each of the 4 pixels (clamped past the end).
  ivec4 ih0, iw0;
  for (uint t = 0; t < 4; ++t) {
    uint pix = min(pix0 + t, pixels - 1);
    ih0[t] = int((pix / p.out_width) * p.stride_h) - int(p.pad_top);
    iw0[t] = int((pix % p.out_width) * p.stride_w) - int(p.pad_left);
  }
  const ivec4 in_h = ivec4(p.in_height), in_w = ivec4(p.in_width);

  // The whole block in one group: share each input value across 8 channels.
  const bool shared_group = co0 / cog == co_last / cog;
  const uint x_base = (n * p.in_channels + (co0 / cog) * cig) * plane;
  uint wc[8];
  for (uint j = 0; j < 8; ++j) wc[j] = min(co0 + j, co_last) * cig * khw;
  vec4 c0 = vec4(0), c1 = vec4(0), c2 = vec4(0), c3 = vec4(0);
  vec4 c4 = vec4(0), c5 = vec4(0), c6 = vec4(0), c7 = vec4(0);
  const uint shared_cig = shared_group ? cig : 0;
  for (uint ci = 0; ci < shared_cig; ++ci) {
    for (uint kh = 0; kh < p.kernel_h; ++kh) {
      const ivec4 ih = ih0 + int(kh * p.dilation_h);
      const bvec4 row_ok = bvec4(uvec4(greaterThanEqual(ih, ivec4(0))) &
                                 uvec4(lessThan(ih, in_h)));
      const ivec4 ihc = clamp(ih, ivec4(0), in_h - 1);
      for (uint kw = 0; kw < p.kernel_w; ++kw) {
        const ivec4 iw = iw0 + int(kw * p.dilation_w);
        const bvec4 ok = bvec4(uvec4(row_ok) & uvec4(greaterThanEqual(iw, ivec4(0))) &
                               uvec4(lessThan(iw, in_w)));
        const uvec4 at = uvec4(ihc * in_w + clamp(iw, ivec4(0), in_w - 1)) +
                         x_base + ci * plane;
        vec4 xv = vec4(x_ld(at.x), x_ld(at.y), x_ld(at.z), x_ld(at.w));
        xv = mix(vec4(0), xv, ok);
        const uint w_off = (ci * p.kernel_h + kh) * p.kernel_w + kw;
        c0 += xv * w_ld(wc[0] + w_off); c1 += xv * w_ld(wc[1] + w_off);
        c2 += xv * w_ld(wc[2] + w_off); c3 += xv * w_ld(wc[3] + w_off);
        c4 += xv * w_ld(wc[4] + w_off); c5 += xv * w_ld(wc[5] + w_off);
        c6 += xv * w_ld(wc[6] + w_off); c7 += xv * w_ld(wc[7] + w_off);
      }
    }
  }
  if (shared_group) {
    store4(n, co0, pix0, pixels, c0); store4(n, co0 + 1, pix0, pixels, c1);
    store4(n, co0 + 2, pix0, pixels, c2); store4(n, co0 + 3, pix0, pixels, c3);
    store4(n, co0 + 4, pix0, pixels, c4); store4(n, co0 + 5, pix0, pixels, c5);
    store4(n, co0 + 6, pix0, pixels, c6); store4(n, co0 + 7, pix0, pixels, c7);
  }

  // The block straddles groups: one channel at a time, each from its group.
  const uint own_count = shared_group ? 0 : co_last + 1 - co0;
  for (uint j = 0; j < own_count; ++j) {
    const uint co = co0 + j;
    const uint xb = (n * p.in_channels + (co / cog) * cig) * plane;
    vec4 acc = vec4(0);
    for (uint ci = 0; ci < cig; ++ci) {
      for (uint kh = 0; kh < p.kernel_h; ++kh) {
        const ivec4 ih = ih0 + int(kh * p.dilation_h);
        for (uint kw = 0; kw < p.kernel_w; ++kw) {
          const ivec4 iw = iw0 + int(kw * p.dilation_w);
          const bvec4 ok = bvec4(uvec4(greaterThanEqual(ih, ivec4(0))) & uvec4(lessThan(ih, in_h)) &
                                 uvec4(greaterThanEqual(iw, ivec4(0))) & uvec4(lessThan(iw, in_w)));
          const uvec4 at = uvec4(clamp(ih, ivec4(0), in_h - 1) * in_w +
                                 clamp(iw, ivec4(0), in_w - 1)) + xb + ci * plane;
          vec4 xv = mix(vec4(0), vec4(x_ld(at.x), x_ld(at.y), x_ld(at.z), x_ld(at.w)), ok);
          acc += xv * w_ld((co * cig + ci) * khw + kh * p.kernel_w + kw);
        }
      }
    }
    store4(n, co, pix0, pixels, acc);
  }
}
