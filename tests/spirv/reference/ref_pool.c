// Pooling references (ONNX MaxPool / AveragePool, floor rounding of the
// output size).
#include <math.h>

#include "reference.h"

static size_t ref_pool_out(size_t in, size_t pad_begin, size_t pad_end, size_t kernel,
                           size_t stride, size_t dilation, bool ceil_mode) {
  double span = (double)(in + pad_begin + pad_end) - (double)(dilation * (kernel - 1) + 1);
  double steps = span / (double)stride;
  size_t out = (size_t)(ceil_mode ? ceil(steps) : floor(steps)) + 1;
  // The last window must start inside the input or its begin padding.
  if (ceil_mode && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

size_t ref_pool2d_out_h(const ref_pool2d_t* p) {
  return ref_pool_out(p->in_h, p->pad_top, p->pad_bottom, p->kernel_h, p->stride_h,
                      p->dilation_h, p->ceil_mode);
}

size_t ref_pool2d_out_w(const ref_pool2d_t* p) {
  return ref_pool_out(p->in_w, p->pad_left, p->pad_right, p->kernel_w, p->stride_w,
                      p->dilation_w, p->ceil_mode);
}

static void ref_pool2d(const ref_pool2d_t* p, const float* x, bool is_max, float* out) {
  size_t oh_n = ref_pool2d_out_h(p), ow_n = ref_pool2d_out_w(p);
  for (size_t c = 0; c < p->planes; ++c) {
    for (size_t oh = 0; oh < oh_n; ++oh) {
      for (size_t ow = 0; ow < ow_n; ++ow) {
        double best = -INFINITY, sum = 0;
        size_t inside = 0, padded = 0;
        for (size_t kh = 0; kh < p->kernel_h; ++kh) {
          long ih = (long)(oh * p->stride_h + kh * p->dilation_h) - (long)p->pad_top;
          for (size_t kw = 0; kw < p->kernel_w; ++kw) {
            long iw = (long)(ow * p->stride_w + kw * p->dilation_w) - (long)p->pad_left;
            if (ih < (long)(p->in_h + p->pad_bottom) && iw < (long)(p->in_w + p->pad_right)) {
              ++padded;
            }
            if (ih < 0 || iw < 0 || ih >= (long)p->in_h || iw >= (long)p->in_w) continue;
            double v = x[(c * p->in_h + (size_t)ih) * p->in_w + (size_t)iw];
            if (v > best) best = v;
            sum += v;
            ++inside;
          }
        }
        size_t divisor = p->count_include_pad ? padded : inside;
        out[(c * oh_n + oh) * ow_n + ow] =
            (float)(is_max ? best : (divisor ? sum / (double)divisor : 0));
      }
    }
  }
}

void ref_max_pool2d(const ref_pool2d_t* p, const float* x, float* out) {
  ref_pool2d(p, x, true, out);
}

void ref_avg_pool2d(const ref_pool2d_t* p, const float* x, float* out) {
  ref_pool2d(p, x, false, out);
}
