// Depthwise 2-D convolution for CPU Vulkan devices (llvmpipe): same ABI as
// depthwise_conv2d.comp. Each invocation computes 8 neighbouring outputs of
// one output row (TILE_W must be 8: config.c), items (n, c, oh, ow block)
// grid-stride; kiln_kernel_grid_linear divides the dispatch count by 8 for
// this variant. llvmpipe pays a per-lane loop for every storage load and
// runs both sides of every branch, so the 3x3 path (stride 1 or 2, no
// dilation; column3) reads each input row as six aligned vec4s once per
// segment of 8 output rows (a sliding window), shifts them into place with
// selects and handles both strides in one body, 16 outputs per row at
// stride 1; other kernels take a plain per-output loop.
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
// The paths built in (KILN_CONV_CPU_WIDE3 / _TAPS; llvmpipe runs an unused
// loop's body once per invocation, masked): the bridge builds each
// dispatch's path alone. A layout whose path was left out runs the other
// one and writes NaN.
layout(constant_id = KILN_SPEC_CONV_CPU_PATHS) const uint PATHS = KILN_CONV_CPU_ALL;
bool built(uint path) { return (PATHS & path) != 0; }

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

// `ok` false: NaN instead (after the activation, which may map NaN to a number).
void store_out(uint index, float acc, bool ok) {
  if (HAS_RESIDUAL) acc += texelFetch(residual4_t, int(index >> 2))[index & 3];
  const float value = kiln_activate(ACTIVATION, acc, p.alpha, p.beta);
  y4[index >> 2][index & 3] = ok ? value : uintBitsToFloat(0x7fc00000u);
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

// Columns iw0 + [0, 20) of one input row, zero outside the input.
struct Row {
  vec4 v0, v1, v2, v3, v4;
};

struct Window {
  int x_base, iw0, x_last4;
  bvec4 ok0, ok1, ok2, ok3, ok4;
};

// Row ih as six aligned texels shifted into place (selects, not
// multiplies: a neighbouring row's Inf must not become NaN).
Row load_row(Window w, int ih) {
  const int in_w = int(p.in_width);
  const bool row_ok = ih >= 0 && ih < int(p.in_height);
  // Element index of column iw0 (negative at the very start is fine: >>
  // floors, & 3 gives the matching shift, texels are clamped).
  const int start = w.x_base + clamp(ih, 0, int(p.in_height) - 1) * in_w + w.iw0;
  const int q = start >> 2;
  const uint sh = uint(start & 3);
  const vec4 q0 = texelFetch(x4_t, clamp(q, 0, w.x_last4));
  const vec4 q1 = texelFetch(x4_t, clamp(q + 1, 0, w.x_last4));
  const vec4 q2 = texelFetch(x4_t, clamp(q + 2, 0, w.x_last4));
  const vec4 q3 = texelFetch(x4_t, clamp(q + 3, 0, w.x_last4));
  const vec4 q4 = texelFetch(x4_t, clamp(q + 4, 0, w.x_last4));
  const vec4 q5 = texelFetch(x4_t, clamp(q + 5, 0, w.x_last4));
  const bvec4 r = bvec4(row_ok);
  Row row;
  row.v0 = mix(vec4(0), shift4(q0, q1, sh), bvec4(uvec4(w.ok0) & uvec4(r)));
  row.v1 = mix(vec4(0), shift4(q1, q2, sh), bvec4(uvec4(w.ok1) & uvec4(r)));
  row.v2 = mix(vec4(0), shift4(q2, q3, sh), bvec4(uvec4(w.ok2) & uvec4(r)));
  row.v3 = mix(vec4(0), shift4(q3, q4, sh), bvec4(uvec4(w.ok3) & uvec4(r)));
  row.v4 = mix(vec4(0), shift4(q4, q5, sh), bvec4(uvec4(w.ok4) & uvec4(r)));
  return row;
}

Row pick(bool first, Row a, Row b) {
  Row r;
  r.v0 = first ? a.v0 : b.v0;
  r.v1 = first ? a.v1 : b.v1;
  r.v2 = first ? a.v2 : b.v2;
  r.v3 = first ? a.v3 : b.v3;
  r.v4 = first ? a.v4 : b.v4;
  return r;
}

// Adds one kernel row (weights w0 w1 w2) applied to input row r: outputs
// t use columns t..t+2 at stride 1 (acc0..acc3: 16 outputs), 2t..2t+2 at
// stride 2 (acc0, acc1: 8 outputs). Both are computed (one body, no
// branch); the unused ones are dropped.
void add_row(Row r, float w0, float w1, float w2, bool s1, inout vec4 acc0,
             inout vec4 acc1, inout vec4 acc2, inout vec4 acc3) {
  const vec4 r0 = r.v0, r1 = r.v1, r2 = r.v2, r3 = r.v3, r4 = r.v4;
  vec4 o0 = r0 * w0 + vec4(r0.yzw, r1.x) * w1 + vec4(r0.zw, r1.xy) * w2;
  vec4 o1 = r1 * w0 + vec4(r1.yzw, r2.x) * w1 + vec4(r1.zw, r2.xy) * w2;
  vec4 o2 = r2 * w0 + vec4(r2.yzw, r3.x) * w1 + vec4(r2.zw, r3.xy) * w2;
  vec4 o3 = r3 * w0 + vec4(r3.yzw, r4.x) * w1 + vec4(r3.zw, r4.xy) * w2;
  vec4 e0 = vec4(r0.xz, r1.xz) * w0 + vec4(r0.yw, r1.yw) * w1 +
            vec4(r0.z, r1.x, r1.z, r2.x) * w2;
  vec4 e1 = vec4(r2.xz, r3.xz) * w0 + vec4(r2.yw, r3.yw) * w1 +
            vec4(r2.z, r3.x, r3.z, r4.x) * w2;
  acc0 += s1 ? o0 : e0;
  acc1 += s1 ? o1 : e1;
  acc2 += o2;
  acc3 += o3;
}

// Writes `count` outputs out0.. of one row (bias added, residual and
// activation applied; NaN where !ok).
void store_row(uint out0, uint count, vec4 acc0, vec4 acc1, vec4 acc2, vec4 acc3, bool ok) {
  const vec4 missing = vec4(uintBitsToFloat(0x7fc00000u));
  // Rows of a multiple of 4 outputs: whole vec4s (straight-line); other
  // widths: a scalar loop that runs zero times when unused.
  const bool v4 = (p.out_width & 3) == 0;
  if (v4) {
    const uint o4 = out0 >> 2;
    vec4 o = acc0;
    if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4));
    y4[o4] = ok ? activate4(o) : missing;
    if (count > 4) {
      o = acc1;
      if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4 + 1));
      y4[o4 + 1] = ok ? activate4(o) : missing;
    }
    if (count > 8) {
      o = acc2;
      if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4 + 2));
      y4[o4 + 2] = ok ? activate4(o) : missing;
    }
    if (count > 12) {
      o = acc3;
      if (HAS_RESIDUAL) o += texelFetch(residual4_t, int(o4 + 3));
      y4[o4 + 3] = ok ? activate4(o) : missing;
    }
  }
  const uint scalar_count = v4 ? 0 : count;
  for (uint t = 0; t < scalar_count; ++t) {
    const uint e = t & 3;
    store_out(out0 + t, t < 4 ? acc0[e] : t < 8 ? acc1[e] : t < 12 ? acc2[e] : acc3[e], ok);
  }
}

// Stride 1 across / down, as the 3x3 path is built (KILN_CONV_CPU_STRIDE1/2:
// built for one stride, the other's arithmetic and row loads are compiled out).
bool stride1_w() {
  return built(KILN_CONV_CPU_STRIDE1) && (!built(KILN_CONV_CPU_STRIDE2) || p.stride_w == 1);
}
bool stride1_h() {
  return built(KILN_CONV_CPU_STRIDE1) && (!built(KILN_CONV_CPU_STRIDE2) || p.stride_h == 1);
}

// 3x3 kernels, stride 1 or 2 (both axes), no vertical dilation: one item
// is a segment of up to SEG3 output rows of a column 16 outputs wide at
// stride 1 (8 at stride 2), walked top to bottom with a sliding window of
// input rows, so each input row is loaded once per segment (six texels)
// rather than three times; the nine weights are three texels. Loads per
// output: about 0.5 at stride 1 and 1.7 at stride 2 (3 when each item was
// 8 outputs of one row with scalar weights).
void column3(uint nc, uint co, uint ow0, uint oh_begin, uint oh_end, uint x_base,
             uint w_base, bool ok) {
  const bool s1 = stride1_w();
  const bool s1h = stride1_h();
  Window w;
  w.x_base = int(x_base);
  w.iw0 = int(ow0 * p.stride_w) - int(p.pad_left);
  w.x_last4 = textureSize(x4_t) - 1;
  const int in_w = int(p.in_width);
  w.ok0 = cols_ok(w.iw0, in_w);
  w.ok1 = cols_ok(w.iw0 + 4, in_w);
  w.ok2 = cols_ok(w.iw0 + 8, in_w);
  w.ok3 = cols_ok(w.iw0 + 12, in_w);
  w.ok4 = cols_ok(w.iw0 + 16, in_w);
  // Weights w_base + [0, 9): texels from w_base's, shifted by w_base & 3.
  const uint wq = w_base >> 2, wsh = w_base & 3;
  const vec4 wt0 = texelFetch(w_t, int(wq)), wt1 = texelFetch(w_t, int(wq + 1));
  const vec4 wt2 = texelFetch(w_t, int(wq + 2));
  const vec4 wa = shift4(wt0, wt1, wsh), wb = shift4(wt1, wt2, wsh);
  const float w8 = wt2[wsh];
  float bias_v = 0.0;
  if (HAS_BIAS) bias_v = bias_ld(co);
  const uint count = min(s1 ? 16 : 8, p.out_width - ow0);
  // Rows ih0 and ih0 + 1 of the current output row, kept across rows.
  const int top = int(oh_begin * p.stride_h) - int(p.pad_top);
  Row r0 = load_row(w, top), r1 = load_row(w, top + 1);
  for (uint oh = oh_begin; oh < oh_end; ++oh) {
    const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
    const Row r2 = load_row(w, ih0 + 2);
    vec4 acc0 = vec4(bias_v), acc1 = vec4(bias_v), acc2 = vec4(bias_v), acc3 = vec4(bias_v);
    add_row(r0, wa.x, wa.y, wa.z, s1, acc0, acc1, acc2, acc3);
    add_row(r1, wa.w, wb.x, wb.y, s1, acc0, acc1, acc2, acc3);
    add_row(r2, wb.z, wb.w, w8, s1, acc0, acc1, acc2, acc3);
    store_row((nc * p.out_height + oh) * p.out_width + ow0, count, acc0, acc1, acc2, acc3, ok);
    // Next row's window: stride 1 slides by one row; stride 2 by two, which
    // needs row ih0 + 3 (a loop of zero or one trips: llvmpipe would run
    // the load on both sides of a branch).
    Row r3 = r2;
    const uint extra = s1h ? 0 : 1;
    for (uint i = 0; i < extra; ++i) r3 = load_row(w, ih0 + 3);
    r0 = pick(s1h, r1, r2);
    r1 = pick(s1h, r2, r3);
  }
}

void main() {
  if (TW != 8) {
    // The grid is sized for 8 outputs per item; any other TW (a module
    // config.c did not make): NaN over every output, grid-strided (at
    // most 65535 rounds: llvmpipe's loop cap), never one left unwritten.
    const uint total = p.batch * p.out_channels * p.out_height * p.out_width;
    const uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint i = gl_GlobalInvocationID.x;
    for (uint r = 0; r < 65535u && i < total; ++r, i += step) {
      y4[i >> 2][i & 3] = uintBitsToFloat(0x7fc00000u);
    }
    return;
  }
  const uint blocks_w = (p.out_width + TW - 1) / TW;
  const uint items = p.batch * p.out_channels * p.out_height * blocks_w;
  // column3's items: SEG3 output rows of a column 16 outputs wide at
  // stride 1, 8 at stride 2 (grid.c sizes the grid for 128 outputs per
  // invocation; invocations grid-stride over what is left).
  const uint SEG3 = 8;
  const uint tile3 = stride1_w() ? 16 : 8;
  const uint blocks3 = (p.out_width + tile3 - 1) / tile3;
  const uint segs3 = (p.out_height + SEG3 - 1) / SEG3;
  const uint items3 = p.batch * p.out_channels * blocks3 * segs3;
  const uint multiplier = p.out_channels / p.in_channels;
  const uint plane = p.in_height * p.in_width;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  // The vec4 window reads whole blocks, clamped to the binding: only safe
  // when the input tensor ends on a block boundary.
  const bool wide3 = p.kernel_w == 3 && p.kernel_h == 3 && p.dilation_w == 1 &&
                     p.dilation_h == 1 && (p.stride_w == 1 || p.stride_w == 2) &&
                     (p.stride_h == 1 || p.stride_h == 2) &&
                     ((p.batch * p.in_channels * plane) & 3) == 0 &&
                     p.kh_begin == 0 && kiln_kh_end() == 3;
  // Each path is its own loop: the path not taken costs one masked
  // iteration rather than one per item.
  // Taps where built and needed (or 3x3 not built); else the 3x3 path,
  // which writes NaN when the layout is not its own.
  const bool run_taps = built(KILN_CONV_CPU_TAPS) && !(wide3 && built(KILN_CONV_CPU_WIDE3));
  const bool run3 = !run_taps;
  const uint strides = (p.stride_w == 1 || p.stride_h == 1 ? KILN_CONV_CPU_STRIDE1 : 0) |
                       (p.stride_w == 2 || p.stride_h == 2 ? KILN_CONV_CPU_STRIDE2 : 0);
  const bool ok3 = wide3 && (strides & ~PATHS) == 0;
  for (uint item = gl_GlobalInvocationID.x; run3 && item < items3; item += stride) {
    const uint ow0 = (item % blocks3) * tile3;
    const uint oh0 = ((item / blocks3) % segs3) * SEG3;
    const uint nc = item / (blocks3 * segs3);
    const uint co = nc % p.out_channels;
    const uint n = nc / p.out_channels;
    column3(nc, co, ow0, oh0, min(oh0 + SEG3, p.out_height),
            (n * p.in_channels + co / multiplier) * plane, co * 9, ok3);
  }
  for (uint item = gl_GlobalInvocationID.x; run_taps && item < items; item += stride) {
    const uint ow0 = (item % blocks_w) * TW;
    const uint oh = (item / blocks_w) % p.out_height;
    const uint nc = item / (blocks_w * p.out_height);
    const uint co = nc % p.out_channels;
    const uint n = nc / p.out_channels;
    const uint x_base = (n * p.in_channels + co / multiplier) * plane;
    const uint w_base = co * p.kernel_h * p.kernel_w;
    const uint count = min(TW, p.out_width - ow0);
    const uint kh_end = kiln_kh_end();
    for (uint t = 0; t < count; ++t) {
      const uint ow = ow0 + t;
      const int ih0 = int(oh * p.stride_h) - int(p.pad_top);
      const int iw0 = int(ow * p.stride_w) - int(p.pad_left);
      float acc = 0.0;
      for (uint kh = p.kh_begin; kh < kh_end; ++kh) {
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
      store_out((nc * p.out_height + oh) * p.out_width + ow, acc, true);
    }
  }
}
