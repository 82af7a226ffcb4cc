// Convolution references, straight from the ONNX Conv / ConvTranspose
// definitions (ConvTranspose in its scatter form, unlike the kernel).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reference.h"

static void* calloc_or_die(size_t count) {
  void* p = calloc(count ? count : 1, sizeof(double));
  if (!p) {
    fprintf(stderr, "reference: out of memory\n");
    abort();
  }
  return p;
}

size_t ref_conv2d_out_h(const ref_conv2d_t* c) {
  size_t span = c->dilation_h * (c->kernel_h - 1) + 1;
  return (c->in_h + c->pad_top + c->pad_bottom - span) / c->stride_h + 1;
}

size_t ref_conv2d_out_w(const ref_conv2d_t* c) {
  size_t span = c->dilation_w * (c->kernel_w - 1) + 1;
  return (c->in_w + c->pad_left + c->pad_right - span) / c->stride_w + 1;
}

void ref_conv2d(const ref_conv2d_t* c, const float* x, const float* w,
                const float* bias, const float* residual, uint32_t act,
                float alpha, float beta, float* out) {
  size_t oh_n = ref_conv2d_out_h(c), ow_n = ref_conv2d_out_w(c);
  size_t cig = c->in_channels / c->groups, cog = c->out_channels / c->groups;
  for (size_t n = 0; n < c->batch; ++n) {
    for (size_t co = 0; co < c->out_channels; ++co) {
      size_t g = co / cog;
      for (size_t oh = 0; oh < oh_n; ++oh) {
        for (size_t ow = 0; ow < ow_n; ++ow) {
          double sum = bias ? bias[co] : 0;
          for (size_t ci = 0; ci < cig; ++ci) {
            for (size_t kh = 0; kh < c->kernel_h; ++kh) {
              long ih = (long)(oh * c->stride_h + kh * c->dilation_h) - (long)c->pad_top;
              if (ih < 0 || ih >= (long)c->in_h) continue;
              for (size_t kw = 0; kw < c->kernel_w; ++kw) {
                long iw = (long)(ow * c->stride_w + kw * c->dilation_w) - (long)c->pad_left;
                if (iw < 0 || iw >= (long)c->in_w) continue;
                double xv = x[((n * c->in_channels + g * cig + ci) * c->in_h + (size_t)ih) *
                                  c->in_w + (size_t)iw];
                double wv = w[((co * cig + ci) * c->kernel_h + kh) * c->kernel_w + kw];
                sum += xv * wv;
              }
            }
          }
          size_t o = ((n * c->out_channels + co) * oh_n + oh) * ow_n + ow;
          if (residual) sum += residual[o];
          out[o] = (float)ref_activation(act, sum, alpha, beta);
        }
      }
    }
  }
}

void ref_conv_columns(const ref_conv2d_t* c, const float* x, float* out) {
  const size_t oh_n = ref_conv2d_out_h(c), ow_n = ref_conv2d_out_w(c);
  const size_t row = (oh_n * ow_n + 7) / 8 * 8;
  for (size_t n = 0; n < c->batch; ++n) {
    for (size_t ci = 0; ci < c->in_channels; ++ci) {
      for (size_t kh = 0; kh < c->kernel_h; ++kh) {
        for (size_t kw = 0; kw < c->kernel_w; ++kw) {
          float* dst = out + (((n * c->in_channels + ci) * c->kernel_h + kh) * c->kernel_w + kw) *
                                 row;
          memset(dst, 0, row * sizeof(float));
          for (size_t oh = 0; oh < oh_n; ++oh) {
            for (size_t ow = 0; ow < ow_n; ++ow) {
              long ih = (long)(oh * c->stride_h + kh * c->dilation_h) - (long)c->pad_top;
              long iw = (long)(ow * c->stride_w + kw * c->dilation_w) - (long)c->pad_left;
              if (ih < 0 || iw < 0 || ih >= (long)c->in_h || iw >= (long)c->in_w) continue;
              dst[oh * ow_n + ow] =
                  x[((n * c->in_channels + ci) * c->in_h + (size_t)ih) * c->in_w + (size_t)iw];
            }
          }
        }
      }
    }
  }
}

size_t ref_conv_transpose2d_out_h(const ref_conv2d_t* c) {
  return c->stride_h * (c->in_h - 1) + c->output_pad_h +
         (c->kernel_h - 1) * c->dilation_h + 1 - c->pad_top - c->pad_bottom;
}

size_t ref_conv_transpose2d_out_w(const ref_conv2d_t* c) {
  return c->stride_w * (c->in_w - 1) + c->output_pad_w +
         (c->kernel_w - 1) * c->dilation_w + 1 - c->pad_left - c->pad_right;
}

void ref_conv_transpose2d(const ref_conv2d_t* c, const float* x, const float* w,
                          const float* bias, uint32_t act, float alpha,
                          float beta, float* out) {
  size_t oh_n = ref_conv_transpose2d_out_h(c), ow_n = ref_conv_transpose2d_out_w(c);
  size_t cig = c->in_channels / c->groups, cog = c->out_channels / c->groups;
  size_t total = c->batch * c->out_channels * oh_n * ow_n;
  double* acc = (double*)calloc_or_die(total);
  for (size_t n = 0; n < c->batch; ++n) {
    for (size_t ci = 0; ci < c->in_channels; ++ci) {
      size_t g = ci / cig;
      for (size_t ih = 0; ih < c->in_h; ++ih) {
        for (size_t iw = 0; iw < c->in_w; ++iw) {
          double xv = x[((n * c->in_channels + ci) * c->in_h + ih) * c->in_w + iw];
          for (size_t col = 0; col < cog; ++col) {
            size_t co = g * cog + col;
            for (size_t kh = 0; kh < c->kernel_h; ++kh) {
              long oh = (long)(ih * c->stride_h + kh * c->dilation_h) - (long)c->pad_top;
              if (oh < 0 || oh >= (long)oh_n) continue;
              for (size_t kw = 0; kw < c->kernel_w; ++kw) {
                long ow = (long)(iw * c->stride_w + kw * c->dilation_w) - (long)c->pad_left;
                if (ow < 0 || ow >= (long)ow_n) continue;
                double wv = w[((ci * cog + col) * c->kernel_h + kh) * c->kernel_w + kw];
                acc[((n * c->out_channels + co) * oh_n + (size_t)oh) * ow_n + (size_t)ow] +=
                    xv * wv;
              }
            }
          }
        }
      }
    }
  }
  for (size_t i = 0; i < total; ++i) {
    size_t co = (i / (oh_n * ow_n)) % c->out_channels;
    double v = acc[i] + (bias ? bias[co] : 0);
    out[i] = (float)ref_activation(act, v, alpha, beta);
  }
  free(acc);
}
