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
    // Mul(x, Sigmoid(x)) as pass_fuse_silu.c rewrites it (no ONNX op).
    {"kiln.Silu", KILN_ACT_SILU, true},
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
    {"Mish", KILN_ACT_MISH, true},
    {"Softsign", KILN_ACT_SOFTSIGN, false},
    {"Selu", KILN_ACT_SELU, true},
    {"Celu", KILN_ACT_CELU, true},
    {"ThresholdedRelu", KILN_ACT_THRESHOLDED_RELU, false},
    {"Shrink", KILN_ACT_SHRINK, false},
    {"Sin", KILN_ACT_SIN, false},
    {"Cos", KILN_ACT_COS, false},
    {"Tan", KILN_ACT_TAN, false},
    {"Asin", KILN_ACT_ASIN, false},
    {"Acos", KILN_ACT_ACOS, false},
    {"Atan", KILN_ACT_ATAN, false},
    {"Sinh", KILN_ACT_SINH, false},
    {"Cosh", KILN_ACT_COSH, false},
    {"Asinh", KILN_ACT_ASINH, false},
    {"Acosh", KILN_ACT_ACOSH, false},
    {"Atanh", KILN_ACT_ATANH, false},
    {"Floor", KILN_ACT_FLOOR, false},
    {"Ceil", KILN_ACT_CEIL, false},
    {"Round", KILN_ACT_ROUND, false},
    {"Sign", KILN_ACT_SIGN, false},
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
    case KILN_ACT_SELU:
      KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(
          node, "alpha", 1.67326319217681884765625f, out_alpha));
      return kiln_graph_node_attr_float(node, "gamma",
                                        1.05070102214813232421875f, out_beta);
    case KILN_ACT_CELU: {
      KILN_RETURN_IF_ERROR(
          kiln_graph_node_attr_float(node, "alpha", 1.0f, out_alpha));
      if (*out_alpha == 0.0f) {
        return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "node '%s' (op Celu): alpha must not be 0",
                                node->name);
      }
      return kiln_ok_status();
    }
    case KILN_ACT_THRESHOLDED_RELU:
      return kiln_graph_node_attr_float(node, "alpha", 1.0f, out_alpha);
    case KILN_ACT_SHRINK:
      KILN_RETURN_IF_ERROR(
          kiln_graph_node_attr_float(node, "lambd", 0.5f, out_alpha));
      return kiln_graph_node_attr_float(node, "bias", 0.0f, out_beta);
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
    // Exactly Sigmoid then Mul: a float sigmoid times x in float.
    case KILN_ACT_SILU:
      return x * (float)(1.0 / (1.0 + exp(-(double)x)));
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
    case KILN_ACT_MISH:
      return x > 20.0f ? x : (float)(x * tanh(log1p(exp((double)x))));
    case KILN_ACT_SOFTSIGN: return x / (1.0f + fabsf(x));
    case KILN_ACT_SELU:
      return x > 0.0f ? beta * x : (float)(beta * alpha * expm1((double)x));
    case KILN_ACT_CELU:
      return x > 0.0f ? x : (float)(alpha * expm1((double)x / alpha));
    case KILN_ACT_THRESHOLDED_RELU: return isnan(x) || x > alpha ? x : 0.0f;
    case KILN_ACT_SHRINK:
      return isnan(x) ? x : x < -alpha ? x + beta : x > alpha ? x - beta : 0.0f;
    case KILN_ACT_SIN: return (float)sin((double)x);
    case KILN_ACT_COS: return (float)cos((double)x);
    case KILN_ACT_TAN: return (float)tan((double)x);
    case KILN_ACT_ASIN: return (float)asin((double)x);
    case KILN_ACT_ACOS: return (float)acos((double)x);
    case KILN_ACT_ATAN: return (float)atan((double)x);
    case KILN_ACT_SINH: return (float)sinh((double)x);
    case KILN_ACT_COSH: return (float)cosh((double)x);
    case KILN_ACT_ASINH: return (float)asinh((double)x);
    case KILN_ACT_ACOSH: return (float)acosh((double)x);
    case KILN_ACT_ATANH: return (float)atanh((double)x);
    case KILN_ACT_FLOOR: return floorf(x);
    case KILN_ACT_CEIL: return ceilf(x);
    case KILN_ACT_ROUND: return nearbyintf(x);  // the default mode: half to even
    case KILN_ACT_SIGN:
      return isnan(x) ? x : x > 0.0f ? 1.0f : x < 0.0f ? -1.0f : 0.0f;
    case KILN_ACT_GELU:
      if (alpha != 0.0f) {
        double t = sqrt(2.0 / M_PI) * (x + 0.044715 * (double)x * x * x);
        return (float)(0.5 * x * (1.0 + tanh(t)));
      }
      return (float)(0.5 * x * (1.0 + erf(x / sqrt(2.0))));
  }
  return x;
}
