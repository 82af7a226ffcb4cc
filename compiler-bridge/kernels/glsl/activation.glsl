// kiln_activate(): the activation epilogue and unary op, selected by a code
// from kernels_codes.h. The code is a specialization constant in every
// caller, so the driver folds the switch away.
#ifndef KILN_ACTIVATION_GLSL_
#define KILN_ACTIVATION_GLSL_

// GLSL's min/max/clamp/sign are undefined for NaN and its sqrt/log/pow
// for the values outside their domain, so every function here spells out
// what PyTorch and onnxruntime give there: NaN in -> NaN out, and IEEE
// infinities (tests/onnx-gpu/ieee_test.c checks each against C).
#define KILN_INF uintBitsToFloat(0x7f800000u)
#define KILN_NAN uintBitsToFloat(0x7fc00000u)

// erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): GLSL has none.
float kiln_erf(float x) {
  if (isnan(x)) return x;
  float s = x < 0.0 ? -1.0 : 1.0;
  float a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t
                    - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return s * y;
}

// clamp(x, lo, hi) that keeps a NaN x (torch.clamp, ONNX Clip).
float kiln_clamp(float x, float lo, float hi) {
  return isnan(x) ? x : min(max(x, lo), hi);
}

// max/min that return NaN when either operand is NaN (torch.maximum, ONNX Max).
float kiln_max(float x, float z) { return isnan(x) || isnan(z) ? x + z : max(x, z); }
float kiln_min(float x, float z) { return isnan(x) || isnan(z) ? x + z : min(x, z); }

// The GPU's log/log2 of a denormal is unspecified (lavapipe returns
// log(2^-127) for any): scale it into the normal range first. A device that
// flushes denormals compares them equal to 0 and never gets here. x > 0.
#define KILN_FLT_MIN 1.17549435e-38
float kiln_log2_positive(float x) {
  return x < KILN_FLT_MIN ? log2(x * 16777216.0) - 24.0 : log2(x);
}
float kiln_log_positive(float x) {
  return x < KILN_FLT_MIN ? log(x * 16777216.0) - 16.635532333438687 : log(x);
}

// pow(x, z) with C99 / IEEE 754 special cases (what std::pow gives
// PyTorch and onnxruntime): pow(0, -1) = +inf, pow(-8, 1/3) = NaN,
// pow(x, 0) = pow(1, z) = 1 even for NaN, odd integer powers keep the sign.
float kiln_pow(float x, float z) {
  if (z == 0.0 || x == 1.0) return 1.0;
  // Exact as in C (exp2(log2(x)) would overflow near FLT_MAX).
  if (z == 1.0) return x;
  if (isnan(x) || isnan(z)) return x + z;
  float ax = abs(x);
  if (isinf(z)) {
    if (ax == 1.0) return 1.0;
    return (ax > 1.0) == (z > 0.0) ? KILN_INF : 0.0;
  }
  bool integral = z == floor(z);
  // Every float with |z| >= 2^24 is an even integer.
  bool odd = integral && abs(z) < 16777216.0 && mod(z, 2.0) == 1.0;
  float s = (odd && (floatBitsToUint(x) >> 31) != 0u) ? -1.0 : 1.0;
  if (ax == 0.0) return s * (z < 0.0 ? KILN_INF : 0.0);
  if (isinf(ax)) return s * (z < 0.0 ? 0.0 : KILN_INF);
  if (x < 0.0 && !integral) return KILN_NAN;
  // GLSL's pow is exp2(z * log2(ax)) too, but undefined for denormal ax.
  return s * exp2(z * kiln_log2_positive(ax));
}

// x * tanh(softplus(x)) = x * n / (n + 2) with n = e^x (e^x + 2): no
// log(1 + tiny) cancellation for negative x; x itself past 20.
float kiln_mish(float x) {
  if (x > 20.0) return x;
  float e = exp(x);
  float n = e * (e + 2.0);
  return x * n / (n + 2.0);
}

// The inverse hyperbolics as logs, written so that neither the negative
// half (asinh) nor large |x| (x * x overflowing) loses the result; outside
// the domain NaN, at the poles +-inf (as C).
float kiln_asinh(float x) {
  float a = abs(x);
  float r = a > 1e18 ? kiln_log_positive(a) + 0.69314718055994531
                     : (a < 1e-4 ? a : log(a + sqrt(a * a + 1.0)));
  return isnan(x) ? x : (x < 0.0 ? -r : r);
}
float kiln_acosh(float x) {
  if (isnan(x)) return x;
  if (x < 1.0) return KILN_NAN;
  return x > 1e18 ? kiln_log_positive(x) + 0.69314718055994531
                  : log(x + sqrt((x - 1.0) * (x + 1.0)));
}
float kiln_atanh(float x) {
  if (isnan(x)) return x;
  float a = abs(x);
  if (a > 1.0) return KILN_NAN;
  if (a == 1.0) return x * KILN_INF;
  float r = a < 1e-4 ? a : 0.5 * log((1.0 + a) / (1.0 - a));
  return x < 0.0 ? -r : r;
}

float kiln_activate(uint code, float x, float alpha, float beta) {
  switch (code) {
    // Written as comparisons, which are false for NaN, so NaN passes.
    // NVIDIA compiles the plain select to max(x, 0), which drops NaN.
    case KILN_ACT_RELU: return isnan(x) ? x : max(x, 0.0);
    case KILN_ACT_LEAKY_RELU: return x < 0.0 ? alpha * x : x;
    case KILN_ACT_CLIP: return kiln_clamp(x, alpha, beta);
    case KILN_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    // Sigmoid, then the product, as the unfused graph computes it: exp(-x)
    // overflows to inf for large negative x, giving x * 0 (-inf * 0 = NaN).
    case KILN_ACT_SILU: return x * (1.0 / (1.0 + exp(-x)));
    case KILN_ACT_HARD_SIGMOID: return kiln_clamp(alpha * x + beta, 0.0, 1.0);
    case KILN_ACT_HARD_SWISH: return x * kiln_clamp(x / 6.0 + 0.5, 0.0, 1.0);
    // tanh() of large |x| overflows exp on some drivers: clamp first.
    case KILN_ACT_TANH: return tanh(kiln_clamp(x, -15.0, 15.0));
    // alpha != 0: the tanh approximation (Gelu-20 approximate='tanh', what
    // torch's dynamo exporter writes for GELU(approximate='tanh')).
    case KILN_ACT_GELU:
      return alpha != 0.0
                 ? 0.5 * x * (1.0 + tanh(kiln_clamp(0.79788456080286536 * (x + 0.044715 * x * x * x),
                                                  -15.0, 15.0)))
                 : 0.5 * x * (1.0 + kiln_erf(x * 0.70710678118654752));
    case KILN_ACT_ERF: return kiln_erf(x);
    case KILN_ACT_ELU: return x < 0.0 ? alpha * (exp(x) - 1.0) : x;
    // log(1 + exp(x)) loses everything for large x; it is x there.
    case KILN_ACT_SOFTPLUS: return x > 20.0 ? x : log(1.0 + exp(x));
    case KILN_ACT_SQRT: return x < 0.0 ? KILN_NAN : sqrt(x);
    case KILN_ACT_EXP: return exp(x);
    case KILN_ACT_LOG:
      return x < 0.0 ? KILN_NAN : x == 0.0 ? -KILN_INF : kiln_log_positive(x);
    case KILN_ACT_NEG: return -x;
    case KILN_ACT_ABS: return abs(x);
    case KILN_ACT_RECIPROCAL: return 1.0 / x;
    case KILN_ACT_MISH: return kiln_mish(x);
    case KILN_ACT_SOFTSIGN: return x / (1.0 + abs(x));
    case KILN_ACT_SELU: return x > 0.0 ? beta * x : beta * alpha * (exp(x) - 1.0);
    case KILN_ACT_CELU: return x > 0.0 ? x : alpha * (exp(x / alpha) - 1.0);
    // NaN stays NaN (a comparison alone would map it to 0).
    case KILN_ACT_THRESHOLDED_RELU: return isnan(x) || x > alpha ? x : 0.0;
    case KILN_ACT_SHRINK:
      return isnan(x) ? x : x < -alpha ? x + beta : x > alpha ? x - beta : 0.0;
    case KILN_ACT_SIN: return sin(x);
    case KILN_ACT_COS: return cos(x);
    case KILN_ACT_TAN: return tan(x);
    // Through atan: lavapipe's asin/acos are off by 4e-4 near |x| = 0.93.
    case KILN_ACT_ASIN:
      return abs(x) > 1.0 ? KILN_NAN : atan(x, sqrt((1.0 - x) * (1.0 + x)));
    case KILN_ACT_ACOS:
      return abs(x) > 1.0 ? KILN_NAN : atan(sqrt((1.0 - x) * (1.0 + x)), x);
    case KILN_ACT_ATAN: return atan(x);
    // sinh(x) = (e^x - e^-x) / 2 cancels near 0: x there (|error| < 2e-9).
    case KILN_ACT_SINH: return abs(x) < 1e-4 ? x : 0.5 * (exp(x) - exp(-x));
    case KILN_ACT_COSH: return 0.5 * (exp(x) + exp(-x));
    case KILN_ACT_ASINH: return kiln_asinh(x);
    case KILN_ACT_ACOSH: return kiln_acosh(x);
    case KILN_ACT_ATANH: return kiln_atanh(x);
    case KILN_ACT_FLOOR: return floor(x);
    case KILN_ACT_CEIL: return ceil(x);
    case KILN_ACT_ROUND: return roundEven(x);
    case KILN_ACT_SIGN: return isnan(x) ? x : x > 0.0 ? 1.0 : x < 0.0 ? -1.0 : 0.0;
    default: return x;
  }
}

#endif  // KILN_ACTIVATION_GLSL_
