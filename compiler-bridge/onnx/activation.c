// Scalar activations, shared by standalone ops and fused epilogues so both
// paths compute exactly the same thing.
#include <math.h>
#include <string.h>

#include "ops.h"

kiln_activation_t kiln_activation_from_name(const char* name) {
  static const struct {
    const char* name;
    kiln_activation_t kind;
  } kTable[] = {
      {"Relu", KILN_ACTIVATION_RELU},
      {"Clip", KILN_ACTIVATION_CLIP},
      {"LeakyRelu", KILN_ACTIVATION_LEAKY_RELU},
      {"Sigmoid", KILN_ACTIVATION_SIGMOID},
      {"HardSigmoid", KILN_ACTIVATION_HARD_SIGMOID},
      {"HardSwish", KILN_ACTIVATION_HARD_SWISH},
      {"Tanh", KILN_ACTIVATION_TANH},
      {"Elu", KILN_ACTIVATION_ELU},
      {"Softplus", KILN_ACTIVATION_SOFTPLUS},
      {"Gelu", KILN_ACTIVATION_GELU},
  };
  for (size_t i = 0; i < sizeof(kTable) / sizeof(kTable[0]); ++i) {
    if (strcmp(kTable[i].name, name) == 0) return kTable[i].kind;
  }
  return KILN_ACTIVATION_NONE;
}

float kiln_ref_activation(kiln_activation_t kind, float alpha, float beta,
                          float x) {
  switch (kind) {
    case KILN_ACTIVATION_NONE: return x;
    // Written so that NaN passes through, as in PyTorch and the GPU kernels.
    case KILN_ACTIVATION_RELU: return x < 0.0f ? 0.0f : x;
    case KILN_ACTIVATION_CLIP: return x < alpha ? alpha : (x > beta ? beta : x);
    case KILN_ACTIVATION_LEAKY_RELU: return x >= 0.0f ? x : alpha * x;
    case KILN_ACTIVATION_SIGMOID:
      return (float)(1.0 / (1.0 + exp(-(double)x)));
    case KILN_ACTIVATION_HARD_SIGMOID: {
      float y = alpha * x + beta;
      return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    }
    case KILN_ACTIVATION_HARD_SWISH: {
      float y = x / 6.0f + 0.5f;
      return x * (y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y));
    }
    case KILN_ACTIVATION_TANH: return tanhf(x);
    case KILN_ACTIVATION_ELU:
      return x >= 0.0f ? x : (float)(alpha * expm1((double)x));
    case KILN_ACTIVATION_SOFTPLUS:
      // log(1 + e^x) without overflow for large x.
      return x > 30.0f ? x : (float)log1p(exp((double)x));
    case KILN_ACTIVATION_GELU:
      if (alpha != 0.0f) {
        double t = sqrt(2.0 / M_PI) * (x + 0.044715 * (double)x * x * x);
        return (float)(0.5 * x * (1.0 + tanh(t)));
      }
      return (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
  }
  return x;
}
