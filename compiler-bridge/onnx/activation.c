// Scalar activations, shared by standalone ops and fused epilogues so both
// paths compute exactly the same thing.
#include <math.h>
#include <string.h>

#include "ops.h"

// The one activation table: ONNX op name -> KILN_ACT_* code (the code the
// GPU kernels take, kiln/compiler/kernels_codes.h). `fusable` marks the ones
// a conv/gemm epilogue may carry (kiln.activation).
static const struct {
  const char* name;
  kiln_activation_t code;
  bool fusable;
} kActivations[] = {
    {"Relu", KILN_ACT_RELU, true},
    {"Clip", KILN_ACT_CLIP, true},
    {"LeakyRelu", KILN_ACT_LEAKY_RELU, true},
    {"Sigmoid", KILN_ACT_SIGMOID, true},
    {"HardSigmoid", KILN_ACT_HARD_SIGMOID, true},
    {"HardSwish", KILN_ACT_HARD_SWISH, true},
    {"Tanh", KILN_ACT_TANH, true},
    {"Elu", KILN_ACT_ELU, true},
    {"Softplus", KILN_ACT_SOFTPLUS, true},
    {"Gelu", KILN_ACT_GELU, true},
    {"Erf", KILN_ACT_ERF, false},
    {"Sqrt", KILN_ACT_SQRT, false},
    {"Exp", KILN_ACT_EXP, false},
    {"Log", KILN_ACT_LOG, false},
    {"Neg", KILN_ACT_NEG, false},
    {"Abs", KILN_ACT_ABS, false},
    {"Reciprocal", KILN_ACT_RECIPROCAL, false},
};

kiln_activation_t kiln_activation_from_name(const char* name) {
  for (size_t i = 0; i < sizeof(kActivations) / sizeof(kActivations[0]); ++i) {
    if (strcmp(kActivations[i].name, name) == 0) return kActivations[i].code;
  }
  return KILN_ACT_NONE;
}

const char* kiln_activation_name(size_t index) {
  return index < sizeof(kActivations) / sizeof(kActivations[0])
             ? kActivations[index].name
             : NULL;
}

bool kiln_activation_fusable(kiln_activation_t code) {
  for (size_t i = 0; i < sizeof(kActivations) / sizeof(kActivations[0]); ++i) {
    if (kActivations[i].code == code) return kActivations[i].fusable;
  }
  return false;
}

kiln_status_t kiln_activation_attrs(const kiln_graph_node_t* node,
                                    kiln_activation_t code, float* out_alpha,
                                    float* out_beta) {
  *out_alpha = 0.0f;
  *out_beta = 0.0f;
  switch (code) {
    case KILN_ACT_LEAKY_RELU:
      return kiln_graph_node_attr_float(node, "alpha", 0.01f, out_alpha);
    case KILN_ACT_ELU:
      return kiln_graph_node_attr_float(node, "alpha", 1.0f, out_alpha);
    case KILN_ACT_HARD_SIGMOID:
      KILN_RETURN_IF_ERROR(
          kiln_graph_node_attr_float(node, "alpha", 0.2f, out_alpha));
      return kiln_graph_node_attr_float(node, "beta", 0.5f, out_beta);
    case KILN_ACT_GELU: {
      const char* approximate = "none";
      KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(node, "approximate",
                                                       "none", &approximate));
      *out_alpha = strcmp(approximate, "tanh") == 0 ? 1.0f : 0.0f;
      return kiln_ok_status();
    }
    default:
      return kiln_ok_status();
  }
}

float kiln_ref_activation(kiln_activation_t kind, float alpha, float beta,
                          float x) {
  switch (kind) {
    case KILN_ACT_NONE: return x;
    // Written so that NaN passes through, as in PyTorch and the GPU kernels.
    case KILN_ACT_RELU: return x < 0.0f ? 0.0f : x;
    case KILN_ACT_CLIP: return x < alpha ? alpha : (x > beta ? beta : x);
    case KILN_ACT_LEAKY_RELU: return x >= 0.0f ? x : alpha * x;
    case KILN_ACT_SIGMOID:
      return (float)(1.0 / (1.0 + exp(-(double)x)));
    case KILN_ACT_HARD_SIGMOID: {
      float y = alpha * x + beta;
      return y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y);
    }
    case KILN_ACT_HARD_SWISH: {
      float y = x / 6.0f + 0.5f;
      return x * (y < 0.0f ? 0.0f : (y > 1.0f ? 1.0f : y));
    }
    case KILN_ACT_TANH: return tanhf(x);
    case KILN_ACT_ELU:
      return x >= 0.0f ? x : (float)(alpha * expm1((double)x));
    case KILN_ACT_SOFTPLUS:
      // log(1 + e^x) without overflow for large x.
      return x > 30.0f ? x : (float)log1p(exp((double)x));
    case KILN_ACT_ERF: return (float)erf((double)x);
    case KILN_ACT_SQRT: return sqrtf(x);
    case KILN_ACT_EXP: return (float)exp((double)x);
    case KILN_ACT_LOG: return (float)log((double)x);
    case KILN_ACT_NEG: return -x;
    case KILN_ACT_ABS: return fabsf(x);
    case KILN_ACT_RECIPROCAL: return 1.0f / x;
    case KILN_ACT_GELU:
      if (alpha != 0.0f) {
        double t = sqrt(2.0 / M_PI) * (x + 0.044715 * (double)x * x * x);
        return (float)(0.5 * x * (1.0 + tanh(t)));
      }
      return (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
  }
  return x;
}
