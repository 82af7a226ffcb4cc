// kiln_activate(): the activation epilogue and unary op, selected by a code
// from kernels_codes.h. The code is a specialization constant in every
// caller, so the driver folds the switch away.
#ifndef KILN_ACTIVATION_GLSL_
#define KILN_ACTIVATION_GLSL_

// erf by Abramowitz & Stegun 7.1.26 (|error| <= 1.5e-7): GLSL has none.
float kiln_erf(float x) {
  float s = sign(x);
  float a = abs(x);
  float t = 1.0 / (1.0 + 0.3275911 * a);
  float y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t
                    - 0.284496736) * t + 0.254829592) * t * exp(-a * a);
  return s * y;
}

float kiln_activate(uint code, float x, float alpha, float beta) {
  switch (code) {
    case KILN_ACT_RELU: return max(x, 0.0);
    case KILN_ACT_LEAKY_RELU: return x < 0.0 ? alpha * x : x;
    case KILN_ACT_CLIP: return min(max(x, alpha), beta);
    case KILN_ACT_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case KILN_ACT_HARD_SIGMOID: return clamp(alpha * x + beta, 0.0, 1.0);
    case KILN_ACT_HARD_SWISH: return x * clamp(x / 6.0 + 0.5, 0.0, 1.0);
    // tanh() of large |x| overflows exp on some drivers: clamp first.
    case KILN_ACT_TANH: return tanh(clamp(x, -15.0, 15.0));
    case KILN_ACT_GELU: return 0.5 * x * (1.0 + kiln_erf(x * 0.70710678118654752));
    case KILN_ACT_ERF: return kiln_erf(x);
    case KILN_ACT_ELU: return x < 0.0 ? alpha * (exp(x) - 1.0) : x;
    // log(1 + exp(x)) loses everything for large x; it is x there.
    case KILN_ACT_SOFTPLUS: return x > 20.0 ? x : log(1.0 + exp(x));
    case KILN_ACT_SQRT: return sqrt(x);
    case KILN_ACT_EXP: return exp(x);
    case KILN_ACT_LOG: return log(x);
    case KILN_ACT_NEG: return -x;
    case KILN_ACT_ABS: return abs(x);
    case KILN_ACT_RECIPROCAL: return 1.0 / x;
    default: return x;
  }
}

#endif  // KILN_ACTIVATION_GLSL_
