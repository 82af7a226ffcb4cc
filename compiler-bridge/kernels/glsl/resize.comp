// ONNX Resize on the two spatial axes of NCHW: nearest (with ONNX's rounding
// modes), bilinear or bicubic, under the half_pixel / asymmetric / align_corners /
// pytorch_half_pixel / tf_half_pixel_for_nn coordinate transforms. scale_* are ONNX scales
// (output / input). Grid: (min(ceil(planes*OH*OW / WG_X), 65535), 1, 1).
#version 450
#extension GL_GOOGLE_include_directive : require
#include "kernels_codes.h"
#include "storage.glsl"

layout(local_size_x_id = 0, local_size_y = 1, local_size_z = 1) in;
layout(constant_id = KILN_SPEC_RESIZE_MODE) const uint MODE = 0;
layout(constant_id = KILN_SPEC_RESIZE_COORD) const uint COORD = 0;
layout(constant_id = KILN_SPEC_RESIZE_NEAREST) const uint NEAREST = 0;
layout(constant_id = KILN_SPEC_RESIZE_CUBIC_A) const uint CUBIC_A_BITS = 0xbf400000u;  // -0.75
layout(constant_id = KILN_SPEC_RESIZE_EXCLUDE_OUTSIDE) const uint EXCLUDE_OUTSIDE = 0;

layout(set = 0, binding = 0) readonly buffer InBuffer { STORAGE_T x[]; };
layout(set = 0, binding = 1) writeonly buffer OutBuffer { STORAGE_T y[]; };

// Mirrors kiln_kernel_resize_params_t.
layout(push_constant) uniform Params {
  uint planes, in_height, in_width, out_height, out_width;
  float scale_h, scale_w;
} p;

float source_coord(uint o, float scale, uint in_size, uint out_size) {
  float x = float(o);
  switch (COORD) {
    case KILN_RESIZE_COORD_ASYMMETRIC: return x / scale;
    case KILN_RESIZE_COORD_ALIGN_CORNERS:
      return out_size > 1 ? x * float(in_size - 1) / float(out_size - 1) : 0.0;
    case KILN_RESIZE_COORD_PYTORCH_HALF_PIXEL:
      return out_size > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case KILN_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / scale;
    default: return (x + 0.5) / scale - 0.5;
  }
}

// The nearest modes round at ties (integers for floor/ceil, halves for the
// round modes). The source coordinate is a ratio of small integers, exact
// at a tie, but a GPU's division need not be correctly rounded (NVIDIA gave
// 0.50000006 for (3 + 0.5) / 3.5 - 0.5): a value within a few ULP of a half
// is that half.
float snap_to_tie(float c) {
  float tie = round(c * 2.0) * 0.5;
  return abs(c - tie) <= 4.0 * 1.1920929e-7 * max(abs(c), 1.0) ? tie : c;
}

uint nearest_index(float c, uint in_size) {
  float r;
  c = snap_to_tie(c);
  switch (NEAREST) {
    case KILN_RESIZE_NEAREST_FLOOR: r = floor(c); break;
    case KILN_RESIZE_NEAREST_CEIL: r = ceil(c); break;
    case KILN_RESIZE_NEAREST_ROUND_PREFER_CEIL: r = floor(c + 0.5); break;
    default: r = ceil(c - 0.5); break;  // round half down
  }
  return uint(clamp(r, 0.0, float(in_size - 1)));
}

// Cubic: the source coordinate c is base + t with t in (0, 1] (ONNX prefers
// the left pixel), taps at base - 1 .. base + 2 (`first` is base - 1) with
// ONNX's cubic convolution weights; exclude_outside drops taps outside the
// input and renormalizes. The weights are continuous in c, so a c a few ULP
// off an integer picks other taps with the same result.
vec4 cubic_weights(float c, uint in_size, out int first) {
  float b = ceil(c) - 1.0;
  float t = c - b, u = 1.0 - t;
  float a = uintBitsToFloat(CUBIC_A_BITS);
  vec4 w;
  w.x = ((a * (t + 1.0) - 5.0 * a) * (t + 1.0) + 8.0 * a) * (t + 1.0) - 4.0 * a;
  w.y = ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
  w.z = ((a + 2.0) * u - (a + 3.0)) * u * u + 1.0;
  w.w = ((a * (u + 1.0) - 5.0 * a) * (u + 1.0) + 8.0 * a) * (u + 1.0) - 4.0 * a;
  first = int(b) - 1;
  if (EXCLUDE_OUTSIDE != 0) {
    for (int i = 0; i < 4; ++i) {
      if (first + i < 0 || first + i >= int(in_size)) w[i] = 0.0;
    }
    float total = w.x + w.y + w.z + w.w;
    if (total != 0.0) w /= total;
  }
  return w;
}

float cubic(uint base, float ch, float cw) {
  int h0, w0;
  vec4 wh = cubic_weights(ch, p.in_height, h0);
  vec4 ww = cubic_weights(cw, p.in_width, w0);
  float sum = 0.0;
  for (int i = 0; i < 4; ++i) {
    uint h = uint(clamp(h0 + i, 0, int(p.in_height) - 1));
    float row = 0.0;
    for (int j = 0; j < 4; ++j) {
      uint w = uint(clamp(w0 + j, 0, int(p.in_width) - 1));
      row += ww[j] * LOAD(x[base + h * p.in_width + w]);
    }
    sum += wh[i] * row;
  }
  return sum;
}

void main() {
  const uint pixels = p.out_height * p.out_width;
  const uint total = p.planes * pixels;
  const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
  for (uint index = gl_GlobalInvocationID.x; index < total; index += stride) {
    uint ow = index % p.out_width;
    uint oh = (index / p.out_width) % p.out_height;
    uint base = (index / pixels) * p.in_height * p.in_width;
    float ch = source_coord(oh, p.scale_h, p.in_height, p.out_height);
    float cw = source_coord(ow, p.scale_w, p.in_width, p.out_width);
    if (MODE == KILN_RESIZE_CUBIC) {
      y[index] = STORE(cubic(base, ch, cw));
    } else if (MODE == KILN_RESIZE_NEAREST) {
      y[index] = STORE(LOAD(x[base + nearest_index(ch, p.in_height) * p.in_width +
                   nearest_index(cw, p.in_width)]));
    } else {
      ch = clamp(ch, 0.0, float(p.in_height - 1));
      cw = clamp(cw, 0.0, float(p.in_width - 1));
      uint h0 = uint(floor(ch)), w0 = uint(floor(cw));
      uint h1 = min(h0 + 1, p.in_height - 1), w1 = min(w0 + 1, p.in_width - 1);
      float fh = ch - float(h0), fw = cw - float(w0);
      float top = mix(LOAD(x[base + h0 * p.in_width + w0]), LOAD(x[base + h0 * p.in_width + w1]), fw);
      float bottom = mix(LOAD(x[base + h1 * p.in_width + w0]), LOAD(x[base + h1 * p.in_width + w1]), fw);
      y[index] = STORE(mix(top, bottom, fh));
    }
  }
}
