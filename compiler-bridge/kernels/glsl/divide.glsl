// Division rounded as IEEE (and the C reference) rounds it. OpFDiv is only
// required to be within 2.5 ULP, and only for |y| in [2^-126, 2^126]:
// NVIDIA computes x * (1 / y), and 1 / y flushes to zero past 2^126
// (FLT_MAX / FLT_MAX gave 0, inf / FLT_MAX NaN). Operands past 2^126 are scaled down by 4
// (exact), and one fma residual step corrects the quotient's last bit.
#ifndef KILN_DIVIDE_GLSL_
#define KILN_DIVIDE_GLSL_

float kiln_div(float x, float y) {
  if (abs(y) > 8.50705917e37) {
    x *= 0.25;
    y *= 0.25;
  }
  precise float q = x / y;
  if (isinf(q) || isnan(q) || isinf(y) || q == 0.0) return q;
  precise float r = fma(-q, y, x);
  return q + r / y;
}

#endif  // KILN_DIVIDE_GLSL_
