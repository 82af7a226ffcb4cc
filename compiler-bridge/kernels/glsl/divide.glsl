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
  precise float q1 = q + r / y;
  // One correction step is not always the nearest float (NVIDIA gave 8.25 /
  // 0.3 one ulp off, flipping a quantizer's tie): of q1 and its two
  // neighbours keep the one with the smallest exact residual (fma), which
  // is the correctly rounded quotient (a quotient is never a midpoint).
  const uint bits = floatBitsToUint(q1);
  precise float up = uintBitsToFloat(bits + 1u);
  precise float down = uintBitsToFloat(bits - 1u);
  precise float e = abs(fma(-q1, y, x));
  precise float e_up = abs(fma(-up, y, x));
  precise float e_down = abs(fma(-down, y, x));
  if (e_up < e) {
    q1 = up;
    e = e_up;
  }
  if (e_down < e) q1 = down;
  return q1;
}

#endif  // KILN_DIVIDE_GLSL_
