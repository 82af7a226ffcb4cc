// Data-movement references: each walks output coordinates explicitly.
#include <math.h>
#include <string.h>

#include "kiln/compiler/kernels_codes.h"
#include "reference.h"

static size_t ref_count(const size_t* shape, size_t rank) {
  size_t count = 1;
  for (size_t d = 0; d < rank; ++d) count *= shape[d];
  return count;
}

static void ref_coord(size_t index, const size_t* shape, size_t rank, size_t* coord) {
  for (size_t d = rank; d-- > 0;) {
    coord[d] = index % shape[d];
    index /= shape[d];
  }
}

static size_t ref_offset(const size_t* coord, const size_t* shape, size_t rank) {
  size_t offset = 0;
  for (size_t d = 0; d < rank; ++d) offset = offset * shape[d] + coord[d];
  return offset;
}

void ref_transpose(const float* x, const size_t* shape, size_t rank,
                   const size_t* perm, float* out) {
  size_t out_shape[REF_MAX_RANK], coord[REF_MAX_RANK], in_coord[REF_MAX_RANK];
  for (size_t d = 0; d < rank; ++d) out_shape[d] = shape[perm[d]];
  size_t count = ref_count(shape, rank);
  for (size_t i = 0; i < count; ++i) {
    ref_coord(i, out_shape, rank, coord);
    for (size_t d = 0; d < rank; ++d) in_coord[perm[d]] = coord[d];
    out[i] = x[ref_offset(in_coord, shape, rank)];
  }
}

void ref_slice(const float* x, const size_t* shape, size_t rank,
               const int64_t* starts, const int64_t* steps,
               const size_t* out_shape, float* out) {
  size_t coord[REF_MAX_RANK], in_coord[REF_MAX_RANK];
  size_t count = ref_count(out_shape, rank);
  for (size_t i = 0; i < count; ++i) {
    ref_coord(i, out_shape, rank, coord);
    for (size_t d = 0; d < rank; ++d) {
      in_coord[d] = (size_t)(starts[d] + (int64_t)coord[d] * steps[d]);
    }
    out[i] = x[ref_offset(in_coord, shape, rank)];
  }
}

void ref_concat(const float* const* inputs, const size_t* const* shapes,
                size_t count, size_t rank, size_t axis, float* out) {
  size_t outer = ref_count(shapes[0], axis);
  size_t inner = ref_count(shapes[0] + axis + 1, rank - axis - 1);
  float* dst = out;
  for (size_t o = 0; o < outer; ++o) {
    for (size_t t = 0; t < count; ++t) {
      size_t slab = shapes[t][axis] * inner;
      memcpy(dst, inputs[t] + o * slab, slab * sizeof(float));
      dst += slab;
    }
  }
}

void ref_expand(const float* x, const size_t* shape, size_t rank,
                const size_t* out_shape, float* out) {
  // A binary op against nothing: reuse the broadcasting walk by hand.
  size_t coord[REF_MAX_RANK];
  size_t out_rank = rank;  // callers pass equal ranks after right-aligning
  size_t count = ref_count(out_shape, out_rank);
  for (size_t i = 0; i < count; ++i) {
    ref_coord(i, out_shape, out_rank, coord);
    size_t offset = 0;
    for (size_t d = 0; d < rank; ++d) {
      offset = offset * shape[d] + (shape[d] == 1 ? 0 : coord[d]);
    }
    out[i] = x[offset];
  }
}

void ref_gather(const float* x, const size_t* shape, size_t rank, size_t axis,
                const int32_t* indices, size_t index_count, float* out) {
  size_t outer = ref_count(shape, axis);
  size_t inner = ref_count(shape + axis + 1, rank - axis - 1);
  size_t n = shape[axis];
  for (size_t o = 0; o < outer; ++o) {
    for (size_t j = 0; j < index_count; ++j) {
      long k = indices[j] < 0 ? indices[j] + (long)n : indices[j];
      for (size_t i = 0; i < inner; ++i) {
        out[(o * index_count + j) * inner + i] =
            (k >= 0 && k < (long)n) ? x[(o * n + (size_t)k) * inner + i] : 0.0f;
      }
    }
  }
}

// numpy's "reflect" (no edge repeat), periodic so pads >= dim work too.
static int64_t ref_reflect(int64_t c, int64_t n) {
  if (n == 1) return 0;
  int64_t period = 2 * (n - 1);
  c %= period;
  if (c < 0) c += period;
  return c >= n ? period - c : c;
}

void ref_pad(const float* x, const size_t* shape, size_t rank,
             const int64_t* pads, uint32_t mode, float value, float* out) {
  size_t out_shape[REF_MAX_RANK], coord[REF_MAX_RANK], in_coord[REF_MAX_RANK];
  for (size_t d = 0; d < rank; ++d) {
    out_shape[d] = (size_t)((int64_t)shape[d] + pads[d] + pads[rank + d]);
  }
  size_t count = ref_count(out_shape, rank);
  for (size_t i = 0; i < count; ++i) {
    ref_coord(i, out_shape, rank, coord);
    bool outside = false;
    for (size_t d = 0; d < rank; ++d) {
      int64_t n = (int64_t)shape[d];
      int64_t c = (int64_t)coord[d] - pads[d];
      if (c < 0 || c >= n) {
        if (mode == KILN_PAD_CONSTANT) outside = true;
        else if (mode == KILN_PAD_EDGE) c = c < 0 ? 0 : n - 1;
        else c = ref_reflect(c, n);
      }
      in_coord[d] = outside ? 0 : (size_t)c;
    }
    out[i] = outside ? value : x[ref_offset(in_coord, shape, rank)];
  }
}

static double ref_resize_coord(uint32_t coord, size_t o, double scale,
                               size_t in_size, size_t out_size) {
  switch (coord) {
    case KILN_RESIZE_COORD_ASYMMETRIC: return o / scale;
    case KILN_RESIZE_COORD_ALIGN_CORNERS:
      return out_size == 1 ? 0 : o * (double)(in_size - 1) / (double)(out_size - 1);
    case KILN_RESIZE_COORD_PYTORCH_HALF_PIXEL:
      return out_size > 1 ? (o + 0.5) / scale - 0.5 : 0;
    case KILN_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN: return (o + 0.5) / scale;
    default: return (o + 0.5) / scale - 0.5;
  }
}

static size_t ref_nearest(uint32_t nearest, double c, size_t in_size) {
  double r;
  double frac = c - floor(c);
  switch (nearest) {
    case KILN_RESIZE_NEAREST_FLOOR: r = floor(c); break;
    case KILN_RESIZE_NEAREST_CEIL: r = ceil(c); break;
    case KILN_RESIZE_NEAREST_ROUND_PREFER_CEIL: r = frac == 0.5 ? ceil(c) : round(c); break;
    default: r = frac == 0.5 ? floor(c) : round(c); break;
  }
  if (r < 0) r = 0;
  if (r > (double)(in_size - 1)) r = (double)(in_size - 1);
  return (size_t)r;
}

void ref_resize(const float* x, size_t planes, size_t in_h, size_t in_w,
                size_t out_h, size_t out_w, float scale_h, float scale_w,
                uint32_t mode, uint32_t coord, uint32_t nearest, float* out) {
  for (size_t p = 0; p < planes; ++p) {
    const float* plane = x + p * in_h * in_w;
    for (size_t oh = 0; oh < out_h; ++oh) {
      double ch = ref_resize_coord(coord, oh, scale_h, in_h, out_h);
      for (size_t ow = 0; ow < out_w; ++ow) {
        double cw = ref_resize_coord(coord, ow, scale_w, in_w, out_w);
        double v;
        if (mode == KILN_RESIZE_NEAREST) {
          v = plane[ref_nearest(nearest, ch, in_h) * in_w + ref_nearest(nearest, cw, in_w)];
        } else {
          double h = ch < 0 ? 0 : (ch > in_h - 1.0 ? in_h - 1.0 : ch);
          double w = cw < 0 ? 0 : (cw > in_w - 1.0 ? in_w - 1.0 : cw);
          size_t h0 = (size_t)h, w0 = (size_t)w;
          size_t h1 = h0 + 1 < in_h ? h0 + 1 : h0, w1 = w0 + 1 < in_w ? w0 + 1 : w0;
          double fh = h - h0, fw = w - w0;
          v = (1 - fh) * ((1 - fw) * plane[h0 * in_w + w0] + fw * plane[h0 * in_w + w1]) +
              fh * ((1 - fw) * plane[h1 * in_w + w0] + fw * plane[h1 * in_w + w1]);
        }
        out[(p * out_h + oh) * out_w + ow] = (float)v;
      }
    }
  }
}
