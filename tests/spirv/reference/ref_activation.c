// Activation reference in double with libm's erf/tanh/expm1/log1p, with
// PyTorch's special values: NaN in -> NaN out (comparisons are false for
// NaN, so each clamp below passes it through), IEEE infinities.
#include <math.h>

#include "kiln/compiler/kernels_codes.h"
#include "reference.h"

double ref_activation(uint32_t code, double x, double alpha, double beta) {
  switch (code) {
    case KILN_ACT_NONE: return x;
    case KILN_ACT_RELU: return x < 0 ? 0 : x;
    case KILN_ACT_LEAKY_RELU: return x < 0 ? alpha * x : x;
    case KILN_ACT_CLIP: return x < alpha ? alpha : (x > beta ? beta : x);
    case KILN_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case KILN_ACT_HARD_SIGMOID: {
      double v = alpha * x + beta;
      return v < 0 ? 0 : (v > 1 ? 1 : v);
    }
    case KILN_ACT_HARD_SWISH: {
      double v = x / 6.0 + 0.5;
      return x * (v < 0 ? 0 : (v > 1 ? 1 : v));
    }
    case KILN_ACT_TANH: return tanh(x);
    case KILN_ACT_GELU: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case KILN_ACT_ERF: return erf(x);
    case KILN_ACT_ELU: return x < 0 ? alpha * expm1(x) : x;
    // PyTorch's threshold: x itself above 20 (so softplus(FLT_MAX) is finite).
    case KILN_ACT_SOFTPLUS: return x > 20 ? x : log1p(exp(x));
    case KILN_ACT_SQRT: return sqrt(x);
    case KILN_ACT_EXP: return exp(x);
    case KILN_ACT_LOG: return log(x);
    case KILN_ACT_NEG: return -x;
    case KILN_ACT_ABS: return fabs(x);
    case KILN_ACT_RECIPROCAL: return 1.0 / x;
    case KILN_ACT_MISH: return x * tanh(x > 20 ? x : log1p(exp(x)));
    case KILN_ACT_SOFTSIGN: return x / (1.0 + fabs(x));
    case KILN_ACT_SELU: return x > 0 ? beta * x : beta * alpha * expm1(x);
    case KILN_ACT_CELU: return x > 0 ? x : alpha * expm1(x / alpha);
    case KILN_ACT_THRESHOLDED_RELU: return isnan(x) || x > alpha ? x : 0;
    case KILN_ACT_SHRINK:
      return isnan(x) ? x : x < -alpha ? x + beta : x > alpha ? x - beta : 0;
    case KILN_ACT_SIN: return sin(x);
    case KILN_ACT_COS: return cos(x);
    case KILN_ACT_TAN: return tan(x);
    case KILN_ACT_ASIN: return asin(x);
    case KILN_ACT_ACOS: return acos(x);
    case KILN_ACT_ATAN: return atan(x);
    case KILN_ACT_SINH: return sinh(x);
    case KILN_ACT_COSH: return cosh(x);
    case KILN_ACT_ASINH: return asinh(x);
    case KILN_ACT_ACOSH: return acosh(x);
    case KILN_ACT_ATANH: return atanh(x);
    case KILN_ACT_FLOOR: return floor(x);
    case KILN_ACT_CEIL: return ceil(x);
    case KILN_ACT_ROUND: return nearbyint(x);
    case KILN_ACT_SIGN: return isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0;
    // x * sigmoid(x) as the unfused graph computes it: -inf * 0 = NaN.
    case KILN_ACT_SILU: return x * (1.0 / (1.0 + exp(-x)));
    default: return NAN;
  }
}
