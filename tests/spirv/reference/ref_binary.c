// Numpy-broadcast binary reference: walks the output's coordinates and maps
// each to the inputs (a size-1 input dimension repeats).
#include <math.h>
#include <string.h>

#include "kiln/compiler/kernels_codes.h"
#include "reference.h"

static double ref_binary_apply(uint32_t op, double a, double b) {
  switch (op) {
    case KILN_BINARY_ADD: return a + b;
    case KILN_BINARY_SUB: return a - b;
    case KILN_BINARY_MUL: return a * b;
    case KILN_BINARY_DIV: return a / b;
    // libm pow has the C99 special cases PyTorch and onnxruntime give.
    case KILN_BINARY_POW: return pow(a, b);
    // torch.maximum / ONNX Max propagate NaN.
    case KILN_BINARY_MAX: return isnan(a) || isnan(b) ? NAN : (a > b ? a : b);
    case KILN_BINARY_MIN: return isnan(a) || isnan(b) ? NAN : (a < b ? a : b);
    default: return NAN;
  }
}

void ref_binary(uint32_t op, const float* a, const size_t* a_shape,
                size_t a_rank, const float* b, const size_t* b_shape,
                size_t b_rank, uint32_t act, float alpha, float beta,
                float* out) {
  size_t rank = a_rank > b_rank ? a_rank : b_rank;
  size_t as[REF_MAX_RANK], bs[REF_MAX_RANK], os[REF_MAX_RANK];
  for (size_t d = 0; d < rank; ++d) {
    size_t ad = d + a_rank >= rank ? a_shape[d + a_rank - rank] : 1;
    size_t bd = d + b_rank >= rank ? b_shape[d + b_rank - rank] : 1;
    as[d] = ad;
    bs[d] = bd;
    os[d] = ad > bd ? ad : bd;
  }
  size_t count = 1;
  for (size_t d = 0; d < rank; ++d) count *= os[d];
  for (size_t i = 0; i < count; ++i) {
    size_t coord[REF_MAX_RANK];
    size_t rest = i;
    for (size_t d = rank; d-- > 0;) {
      coord[d] = rest % os[d];
      rest /= os[d];
    }
    size_t ai = 0, bi = 0;
    for (size_t d = 0; d < rank; ++d) {
      ai = ai * as[d] + (as[d] == 1 ? 0 : coord[d]);
      bi = bi * bs[d] + (bs[d] == 1 ? 0 : coord[d]);
    }
    uint32_t b_bits = 0;
    memcpy(&b_bits, &b[bi], sizeof(b_bits));
    double value = op != KILN_BINARY_SELECT        ? ref_binary_apply(op, a[ai], b[bi])
                   : b_bits == KILN_SELECT_KEEP_BITS ? a[ai]
                                                     : b[bi];
    out[i] = (float)ref_activation(act, value, alpha, beta);
  }
}
