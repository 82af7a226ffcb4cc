// Reduction, softmax and normalization references in double.
#include <math.h>

#include "kiln/compiler/kernels_codes.h"
#include "reference.h"

void ref_reduce(uint32_t op, size_t outer, size_t size, size_t inner,
                const float* x, float* out) {
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      double acc = op == KILN_REDUCE_MAX ? -INFINITY
                   : op == KILN_REDUCE_MIN ? INFINITY : op == KILN_REDUCE_PROD ? 1 : 0;
      double m = -INFINITY;
      for (size_t r = 0; r < size; ++r) {
        double v = x[(o * size + r) * inner + i];
        if (v > m) m = v;
      }
      for (size_t r = 0; r < size; ++r) {
        double v = x[(o * size + r) * inner + i];
        if (op == KILN_REDUCE_MAX) acc = v > acc ? v : acc;
        else if (op == KILN_REDUCE_MIN) acc = v < acc ? v : acc;
        else if (op == KILN_REDUCE_SUM_ABS) acc += fabs(v);
        else if (op == KILN_REDUCE_SUM_SQUARE || op == KILN_REDUCE_L2) acc += v * v;
        else if (op == KILN_REDUCE_LOG_SUM_EXP) acc += exp(v - m);
        else if (op == KILN_REDUCE_PROD) acc *= v;
        else acc += v;
      }
      if (op == KILN_REDUCE_MEAN) acc /= (double)size;
      if (op == KILN_REDUCE_L2 || op == KILN_REDUCE_SQRT_SUM) acc = sqrt(acc);
      if (op == KILN_REDUCE_LOG_SUM) acc = log(acc);
      if (op == KILN_REDUCE_LOG_SUM_EXP) acc = m + log(acc);
      out[o * inner + i] = (float)acc;
    }
  }
}

void ref_softmax(bool log_softmax, size_t outer, size_t size, size_t inner,
                 const float* x, float* out) {
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      double m = -INFINITY, s = 0;
      for (size_t r = 0; r < size; ++r) {
        double v = x[(o * size + r) * inner + i];
        if (v > m) m = v;
      }
      for (size_t r = 0; r < size; ++r) s += exp(x[(o * size + r) * inner + i] - m);
      for (size_t r = 0; r < size; ++r) {
        size_t k = (o * size + r) * inner + i;
        double d = x[k] - m;
        out[k] = (float)(log_softmax ? d - log(s) : exp(d) / s);
      }
    }
  }
}

static void ref_normalize_row(const float* x, size_t size, double epsilon,
                              double* out_mean, double* out_inv_std) {
  double mean = 0, var = 0;
  for (size_t r = 0; r < size; ++r) mean += x[r];
  mean /= (double)size;
  for (size_t r = 0; r < size; ++r) var += (x[r] - mean) * (x[r] - mean);
  var /= (double)size;
  *out_mean = mean;
  *out_inv_std = 1.0 / sqrt(var + epsilon);
}

void ref_layer_norm(size_t rows, size_t size, const float* x, const float* scale,
                    const float* bias, float epsilon, float* out) {
  for (size_t row = 0; row < rows; ++row) {
    double mean, inv_std;
    ref_normalize_row(x + row * size, size, epsilon, &mean, &inv_std);
    for (size_t r = 0; r < size; ++r) {
      out[row * size + r] =
          (float)((x[row * size + r] - mean) * inv_std * scale[r] + bias[r]);
    }
  }
}

void ref_instance_norm(size_t batch, size_t channels, size_t spatial,
                       const float* x, const float* scale, const float* bias,
                       float epsilon, float* out) {
  for (size_t n = 0; n < batch; ++n) {
    for (size_t c = 0; c < channels; ++c) {
      size_t base = (n * channels + c) * spatial;
      double mean, inv_std;
      ref_normalize_row(x + base, spatial, epsilon, &mean, &inv_std);
      for (size_t r = 0; r < spatial; ++r) {
        out[base + r] = (float)((x[base + r] - mean) * inv_std * scale[c] + bias[c]);
      }
    }
  }
}
