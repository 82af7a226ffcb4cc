// GEMM reference: the textbook triple loop.
#include "reference.h"

void ref_gemm(size_t batch, size_t m, size_t n, size_t k, const float* a,
              bool a_batched, bool trans_a, const float* b, bool b_batched,
              bool trans_b, float scale, const float* bias, bool bias_per_row,
              const float* residual, uint32_t act, float alpha, float beta,
              float* out) {
  for (size_t bi = 0; bi < batch; ++bi) {
    const float* ab = a + (a_batched ? bi * m * k : 0);
    const float* bb = b + (b_batched ? bi * k * n : 0);
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < n; ++j) {
        double sum = 0;
        for (size_t p = 0; p < k; ++p) {
          double av = trans_a ? ab[p * m + i] : ab[i * k + p];
          double bv = trans_b ? bb[j * k + p] : bb[p * n + j];
          sum += av * bv;
        }
        sum *= scale;
        if (bias) sum += bias_per_row ? bias[i] : bias[j];
        size_t o = (bi * m + i) * n + j;
        if (residual) sum += residual[o];
        out[o] = (float)ref_activation(act, sum, alpha, beta);
      }
    }
  }
}
