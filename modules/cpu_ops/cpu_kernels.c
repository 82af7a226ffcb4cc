// Host TopK, NonZero and NonMaxSuppression (see cpu_kernels.h).
#include "cpu_kernels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// Whether value a (index ia) goes before b (index ib): larger (or smaller)
// first, NaN largest, ties by the lower index.
static bool kiln_cpu_before(float a, int64_t ia, float b, int64_t ib, bool largest) {
  bool na = isnan(a), nb = isnan(b);
  if (na != nb) return largest ? na : nb;
  if (!na && a != b) return largest ? a > b : a < b;
  return ia < ib;
}

// Merge sort of indices (stable, O(n log n), no recursion limits to worry
// about beyond log2(n) depth).
static void kiln_cpu_sort(const float* x, size_t stride, int64_t* items, int64_t* tmp,
                          size_t n, bool largest) {
  for (size_t width = 1; width < n; width *= 2) {
    for (size_t lo = 0; lo < n; lo += 2 * width) {
      size_t mid = lo + width < n ? lo + width : n;
      size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      size_t a = lo, b = mid, o = lo;
      while (a < mid && b < hi) {
        int64_t ia = items[a], ib = items[b];
        if (kiln_cpu_before(x[(size_t)ib * stride], ib, x[(size_t)ia * stride], ia, largest)) {
          tmp[o++] = items[b++];
        } else {
          tmp[o++] = items[a++];
        }
      }
      while (a < mid) tmp[o++] = items[a++];
      while (b < hi) tmp[o++] = items[b++];
    }
    memcpy(items, tmp, n * sizeof(*items));
  }
}

void kiln_cpu_topk(const float* x, size_t outer, size_t n, size_t inner, size_t k,
                   bool largest, float* values, int64_t* indices, int64_t* scratch) {
  // scratch: n items + n merge space.
  int64_t* items = scratch;
  int64_t* tmp = scratch + n;
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      const float* row = x + o * n * inner + i;
      for (size_t r = 0; r < n; ++r) items[r] = (int64_t)r;
      kiln_cpu_sort(row, inner, items, tmp, n, largest);
      for (size_t r = 0; r < k; ++r) {
        size_t at = (o * k + r) * inner + i;
        values[at] = row[(size_t)items[r] * inner];
        indices[at] = items[r];
      }
    }
  }
}

size_t kiln_cpu_element_size(kiln_cpu_element_t element) {
  switch (element) {
    case KILN_CPU_ELEMENT_F32:
    case KILN_CPU_ELEMENT_I32:
      return 4;
    case KILN_CPU_ELEMENT_I64:
      return 8;
    case KILN_CPU_ELEMENT_U8:
      return 1;
    default:
      return 0;
  }
}

static bool kiln_cpu_is_nonzero(const void* x, kiln_cpu_element_t element, size_t i) {
  switch (element) {
    case KILN_CPU_ELEMENT_F32:
      return ((const float*)x)[i] != 0.0f;  // NaN is nonzero, -0 is zero
    case KILN_CPU_ELEMENT_I64:
      return ((const int64_t*)x)[i] != 0;
    case KILN_CPU_ELEMENT_I32:
      return ((const int32_t*)x)[i] != 0;
    default:
      return ((const uint8_t*)x)[i] != 0;
  }
}

size_t kiln_cpu_nonzero_count(const void* x, kiln_cpu_element_t element, size_t count) {
  size_t found = 0;
  for (size_t i = 0; i < count; ++i) found += kiln_cpu_is_nonzero(x, element, i);
  return found;
}

void kiln_cpu_nonzero(const void* x, kiln_cpu_element_t element, const int64_t* dims,
                      size_t rank, size_t found, int64_t* out) {
  size_t count = 1;
  for (size_t d = 0; d < rank; ++d) count *= (size_t)dims[d];
  size_t j = 0;
  for (size_t i = 0; i < count && j < found; ++i) {
    if (!kiln_cpu_is_nonzero(x, element, i)) continue;
    size_t rest = i;
    for (size_t d = rank; d-- > 0;) {
      out[d * found + j] = (int64_t)(rest % (size_t)dims[d]);
      rest /= (size_t)dims[d];
    }
    ++j;
  }
}

// Corners (y1, x1, y2, x2) with y1 <= y2, x1 <= x2.
static void kiln_cpu_corners(const float* box, bool center, float out[4]) {
  if (center) {  // (x_center, y_center, width, height)
    out[0] = box[1] - box[3] / 2;
    out[1] = box[0] - box[2] / 2;
    out[2] = box[1] + box[3] / 2;
    out[3] = box[0] + box[2] / 2;
    return;
  }
  out[0] = fminf(box[0], box[2]);
  out[1] = fminf(box[1], box[3]);
  out[2] = fmaxf(box[0], box[2]);
  out[3] = fmaxf(box[1], box[3]);
}

// onnxruntime's test: suppressed when IoU > threshold; empty boxes never are.
static bool kiln_cpu_suppress(const float* a, const float* b, bool center, float threshold) {
  float p[4], q[4];
  kiln_cpu_corners(a, center, p);
  kiln_cpu_corners(b, center, q);
  float ymin = fmaxf(p[0], q[0]), xmin = fmaxf(p[1], q[1]);
  float ymax = fminf(p[2], q[2]), xmax = fminf(p[3], q[3]);
  float inter = fmaxf(ymax - ymin, 0.0f) * fmaxf(xmax - xmin, 0.0f);
  if (inter <= 0) return false;
  float area_a = (p[2] - p[0]) * (p[3] - p[1]);
  float area_b = (q[2] - q[0]) * (q[3] - q[1]);
  float uni = area_a + area_b - inter;
  if (area_a <= 0 || area_b <= 0 || uni <= 0) return false;
  return inter / uni > threshold;
}

size_t kiln_cpu_nms(const float* boxes, const float* scores, size_t batches, size_t spatial,
                    size_t classes, size_t max_per_class, float iou_threshold,
                    bool has_score_threshold, float score_threshold, bool center_point_box,
                    int64_t* out, size_t capacity, int64_t* order, int64_t* selected) {
  size_t rows = 0;
  if (max_per_class == 0) return 0;
  for (size_t b = 0; b < batches; ++b) {
    const float* batch_boxes = boxes + b * spatial * 4;
    for (size_t c = 0; c < classes; ++c) {
      const float* s = scores + (b * classes + c) * spatial;
      size_t candidates = 0;
      for (size_t i = 0; i < spatial; ++i) {
        if (!has_score_threshold || s[i] > score_threshold) order[candidates++] = (int64_t)i;
      }
      // Highest score first, ties by the lower box index (stable).
      kiln_cpu_sort(s, 1, order, selected, candidates, true);
      size_t kept = 0;
      for (size_t i = 0; i < candidates && kept < max_per_class; ++i) {
        const float* box = batch_boxes + (size_t)order[i] * 4;
        bool drop = false;
        for (size_t j = 0; j < kept && !drop; ++j) {
          drop = kiln_cpu_suppress(batch_boxes + (size_t)selected[j] * 4, box,
                                   center_point_box, iou_threshold);
        }
        if (drop) continue;
        selected[kept++] = order[i];
        if (rows < capacity) {
          out[rows * 3 + 0] = (int64_t)b;
          out[rows * 3 + 1] = (int64_t)c;
          out[rows * 3 + 2] = order[i];
          ++rows;
        }
      }
    }
  }
  return rows;
}

size_t kiln_cpu_elementwise_arity(kiln_cpu_elementwise_t op) {
  return op == KILN_CPU_NOT || op == KILN_CPU_COPY ? 1 : op == KILN_CPU_WHERE ? 3 : 2;
}

// a <op> b for one element kind; NaN compares false (Equal too).
static bool kiln_cpu_compare(kiln_cpu_elementwise_t op, const void* a, const void* b,
                             kiln_cpu_element_t element, size_t ia, size_t ib) {
  int order = 0;  // -1, 0, 1; 2: unordered (NaN)
  if (element == KILN_CPU_ELEMENT_F32) {
    float x = ((const float*)a)[ia], y = ((const float*)b)[ib];
    order = isnan(x) || isnan(y) ? 2 : x < y ? -1 : x > y;
  } else if (element == KILN_CPU_ELEMENT_I64) {
    int64_t x = ((const int64_t*)a)[ia], y = ((const int64_t*)b)[ib];
    order = x < y ? -1 : x > y;
  } else if (element == KILN_CPU_ELEMENT_I32) {
    int32_t x = ((const int32_t*)a)[ia], y = ((const int32_t*)b)[ib];
    order = x < y ? -1 : x > y;
  } else {
    uint8_t x = ((const uint8_t*)a)[ia] != 0, y = ((const uint8_t*)b)[ib] != 0;
    order = x < y ? -1 : x > y;
  }
  if (order == 2) return false;
  switch (op) {
    case KILN_CPU_EQUAL: return order == 0;
    case KILN_CPU_LESS: return order < 0;
    case KILN_CPU_GREATER: return order > 0;
    case KILN_CPU_LESS_OR_EQUAL: return order <= 0;
    default: return order >= 0;
  }
}

void kiln_cpu_elementwise(kiln_cpu_elementwise_t op, const kiln_cpu_broadcast_t* shape,
                          kiln_cpu_element_t element, const void* const operands[3],
                          void* out) {
  size_t count = 1;
  for (size_t d = 0; d < shape->rank; ++d) count *= (size_t)shape->dims[d];
  int64_t coords[8] = {0};
  size_t offsets[3] = {0, 0, 0};
  const size_t size = kiln_cpu_element_size(element);
  const uint8_t* const* in = (const uint8_t* const*)operands;
  for (size_t i = 0; i < count; ++i) {
    uint8_t* bool_out = (uint8_t*)out + i;
    switch (op) {
      case KILN_CPU_NOT:
        *bool_out = in[0][offsets[0]] == 0;
        break;
      case KILN_CPU_AND:
      case KILN_CPU_OR:
      case KILN_CPU_XOR: {
        bool a = in[0][offsets[0]] != 0, b = in[1][offsets[1]] != 0;
        *bool_out = op == KILN_CPU_AND ? (a && b) : op == KILN_CPU_OR ? (a || b) : (a != b);
        break;
      }
      case KILN_CPU_COPY:
        memcpy((uint8_t*)out + i * size, in[0] + offsets[0] * size, size);
        break;
      case KILN_CPU_WHERE:
        memcpy((uint8_t*)out + i * size,
               in[0][offsets[0]] ? in[1] + offsets[1] * size : in[2] + offsets[2] * size, size);
        break;
      default:
        *bool_out = kiln_cpu_compare(op, in[0], in[1], element, offsets[0], offsets[1]);
        break;
    }
    // Odometer over out's dims, moving each operand by its strides.
    for (size_t d = shape->rank; d-- > 0;) {
      for (size_t k = 0; k < 3; ++k) offsets[k] += (size_t)shape->strides[k][d];
      if (++coords[d] < shape->dims[d]) break;
      for (size_t k = 0; k < 3; ++k) {
        offsets[k] -= (size_t)(shape->strides[k][d] * shape->dims[d]);
      }
      coords[d] = 0;
    }
  }
}
