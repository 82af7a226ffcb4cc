// Elementwise ops: unary math, activations, broadcasting binary arithmetic,
// Identity, Dropout (inference only) and Cast.
#include <float.h>
#include <math.h>
#include <string.h>

#include "kiln/base/half.h"
#include "ops.h"

// ---- unary ---------------------------------------------------------------

// Abs and Neg also take integers: on constants they fold (T5's relative
// position buckets take |i - j| of int64 positions); a run-time integer
// tensor is refused by the GPU lowering, which takes floats only.
static bool kiln_unary_takes_ints(const char* op) {
  return strcmp(op, "Abs") == 0 || strcmp(op, "Neg") == 0;
}

static kiln_status_t kiln_infer_unary(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  const uint32_t types = kiln_unary_takes_ints(args->node->op_type)
                             ? KILN_OP_F32 | KILN_OP_INDEX : KILN_OP_F32;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, types, &x));
  return kiln_op_set_output(args, 0, x->dtype, &x->shape);
}

static float kiln_unary_apply(const char* op, float x) {
  switch (op[0]) {
    case 'A': return fabsf(x);                                   // Abs
    case 'S': return sqrtf(x);                                   // Sqrt
    case 'N': return -x;                                         // Neg
    case 'R': return 1.0f / x;                                   // Reciprocal
    case 'L': return logf(x);                                    // Log
    default: break;
  }
  return x;
}

static kiln_status_t kiln_run_unary(const kiln_op_run_args_t* args) {
  const char* op = args->node->op_type;
  const kiln_graph_dtype_t dtype = args->inputs[0].dtype;
  if (dtype == KILN_GRAPH_DTYPE_I64 || dtype == KILN_GRAPH_DTYPE_I32) {
    // Abs / Neg in two's complement (INT_MIN stays INT_MIN, as in numpy).
    const bool neg = op[0] == 'N';
    for (size_t i = 0; i < args->outputs[0].count; ++i) {
      if (dtype == KILN_GRAPH_DTYPE_I64) {
        const int64_t v = ((const int64_t*)args->inputs[0].data)[i];
        const uint64_t u = (uint64_t)v;
        ((int64_t*)args->outputs[0].data)[i] = (int64_t)(neg || v < 0 ? 0u - u : u);
      } else {
        const int32_t v = ((const int32_t*)args->inputs[0].data)[i];
        const uint32_t u = (uint32_t)v;
        ((int32_t*)args->outputs[0].data)[i] = (int32_t)(neg || v < 0 ? 0u - u : u);
      }
    }
    return kiln_ok_status();
  }
  const float* x = (const float*)args->inputs[0].data;
  float* y = (float*)args->outputs[0].data;
  size_t count = args->outputs[0].count;
  if (strcmp(op, "Exp") == 0) {
    for (size_t i = 0; i < count; ++i) y[i] = expf(x[i]);
  } else if (strcmp(op, "Erf") == 0) {
    for (size_t i = 0; i < count; ++i) y[i] = (float)erf((double)x[i]);
  } else {
    for (size_t i = 0; i < count; ++i) y[i] = kiln_unary_apply(op, x[i]);
  }
  return kiln_ok_status();
}

// ---- activations ---------------------------------------------------------

static kiln_status_t kiln_activation_params(const kiln_graph_node_t* node,
                                            float* out_alpha,
                                            float* out_beta) {
  return kiln_activation_attrs(node, kiln_activation_from_name(node->op_type),
                               out_alpha, out_beta);
}

static kiln_status_t kiln_infer_activation(const kiln_op_infer_args_t* args) {
  if (strcmp(args->node->op_type, "Gelu") == 0) {
    static const char* const kModes[] = {"none", "tanh", NULL};
    const char* mode = NULL;
    KILN_RETURN_IF_ERROR(
        kiln_op_attr_choice(args, "approximate", "none", kModes, &mode));
  }
  float alpha, beta;
  KILN_RETURN_IF_ERROR(kiln_activation_params(args->node, &alpha, &beta));
  return kiln_infer_unary(args);
}

static kiln_status_t kiln_run_activation(const kiln_op_run_args_t* args) {
  float alpha, beta;
  KILN_RETURN_IF_ERROR(kiln_activation_params(args->node, &alpha, &beta));
  kiln_activation_t kind = kiln_activation_from_name(args->node->op_type);
  const float* x = (const float*)args->inputs[0].data;
  float* y = (float*)args->outputs[0].data;
  for (size_t i = 0; i < args->outputs[0].count; ++i) {
    y[i] = kiln_ref_activation(kind, alpha, beta, x[i]);
  }
  return kiln_ok_status();
}

// Clip takes min/max as optional scalar inputs (opset 11+).
static kiln_status_t kiln_infer_clip(const kiln_op_infer_args_t* args) {
  KILN_RETURN_IF_ERROR(kiln_op_clip_v6(args));  // Clip-6 attributes
  for (size_t i = 1; i < 3; ++i) {
    if (!kiln_op_input(args, i)) continue;
    const kiln_graph_value_t* bound = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, i, KILN_OP_F32, &bound));
    size_t count = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&bound->shape, &count));
    if (count != 1) {
      return kiln_op_invalid(args, "input %zu must be a scalar", i);
    }
  }
  return kiln_infer_unary(args);
}

static kiln_status_t kiln_run_clip(const kiln_op_run_args_t* args) {
  float low = -FLT_MAX;
  float high = FLT_MAX;
  if (args->input_count > 1 && args->inputs[1].data) {
    low = *(const float*)args->inputs[1].data;
  }
  if (args->input_count > 2 && args->inputs[2].data) {
    high = *(const float*)args->inputs[2].data;
  }
  const float* x = (const float*)args->inputs[0].data;
  float* y = (float*)args->outputs[0].data;
  for (size_t i = 0; i < args->outputs[0].count; ++i) {
    // ONNX: min(max(x, low), high), so high wins when low > high.
    float v = x[i] < low ? low : x[i];
    y[i] = v > high ? high : v;
  }
  return kiln_ok_status();
}

// ---- binary --------------------------------------------------------------

static kiln_status_t kiln_infer_binary(const kiln_op_infer_args_t* args) {
  bool is_pow = strcmp(args->node->op_type, "Pow") == 0;
  unsigned mask = is_pow ? KILN_OP_F32 : KILN_OP_NUMERIC;
  const kiln_graph_value_t* a = NULL;
  const kiln_graph_value_t* b = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, mask, &a));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, mask, &b));
  if (a->dtype != b->dtype) {
    return kiln_op_unsupported(args, "inputs have dtypes %s and %s; both must "
                               "match",
                               kiln_graph_dtype_name(a->dtype),
                               kiln_graph_dtype_name(b->dtype));
  }
  if (strcmp(args->node->op_type, "Mod") == 0) {
    int64_t fmod = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "fmod", 0, &fmod));
    if (fmod != 0 && fmod != 1) return kiln_op_invalid(args, "fmod must be 0 or 1");
    if (a->dtype == KILN_GRAPH_DTYPE_F32 && fmod != 1) {
      return kiln_op_invalid(args, "float Mod needs fmod=1");
    }
  }
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(kiln_op_broadcast(args, &a->shape, &b->shape, &shape));
  return kiln_op_set_output(args, 0, a->dtype, &shape);
}

typedef enum { KILN_BIN_ADD, KILN_BIN_SUB, KILN_BIN_MUL, KILN_BIN_DIV,
               KILN_BIN_POW, KILN_BIN_MOD, KILN_BIN_FMOD } kiln_binary_kind_t;

static kiln_binary_kind_t kiln_binary_kind(const char* op) {
  if (strcmp(op, "Add") == 0) return KILN_BIN_ADD;
  if (strcmp(op, "Sub") == 0) return KILN_BIN_SUB;
  if (strcmp(op, "Mul") == 0) return KILN_BIN_MUL;
  if (strcmp(op, "Div") == 0) return KILN_BIN_DIV;
  if (strcmp(op, "Mod") == 0) return KILN_BIN_MOD;
  return KILN_BIN_POW;
}

#define KILN_BINARY_LOOP(type, expr)                                        \
  do {                                                                      \
    const type* pa = (const type*)a->data;                                  \
    const type* pb = (const type*)b->data;                                  \
    type* po = (type*)out->data;                                            \
    for (size_t i = 0; i < out->count; ++i) {                               \
      type x = pa[oa], y = pb[ob];                                          \
      po[i] = (expr);                                                       \
      for (int32_t d = rank; d-- > 0;) {                                    \
        oa += sa[d];                                                        \
        ob += sb[d];                                                        \
        if (++coords[d] < out->shape.dims[d]) break;                        \
        oa -= sa[d] * out->shape.dims[d];                                   \
        ob -= sb[d] * out->shape.dims[d];                                   \
        coords[d] = 0;                                                      \
      }                                                                     \
    }                                                                       \
  } while (0)

// Integer division as ONNX (and numpy's int division in its reference)
// defines it for the shape arithmetic exporters emit: truncation.
static int64_t kiln_int_div(int64_t x, int64_t y) {
  return y == 0 || (y == -1 && x == INT64_MIN) ? 0 : x / y;
}

// Mod with fmod=0 takes the divisor's sign (Python's %); fmod=1 the
// dividend's (C's fmod). A zero divisor gives 0, as kiln_int_div does.
static int64_t kiln_int_mod(int64_t x, int64_t y, bool c_fmod) {
  if (y == 0 || y == -1) return 0;
  int64_t r = x % y;
  if (!c_fmod && r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}

static kiln_status_t kiln_run_binary(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* a = &args->inputs[0];
  const kiln_ref_tensor_t* b = &args->inputs[1];
  kiln_ref_tensor_t* out = &args->outputs[0];
  int32_t rank = out->shape.rank;
  int64_t sa[KILN_GRAPH_MAX_RANK], sb[KILN_GRAPH_MAX_RANK];
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  kiln_ref_broadcast_strides(&a->shape, &out->shape, sa);
  kiln_ref_broadcast_strides(&b->shape, &out->shape, sb);
  int64_t oa = 0, ob = 0;
  kiln_binary_kind_t kind = kiln_binary_kind(args->node->op_type);
  int64_t fmod = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "fmod", 0, &fmod));
  if (kind == KILN_BIN_MOD && fmod) kind = KILN_BIN_FMOD;
  if (a->dtype == KILN_GRAPH_DTYPE_F32) {
    switch (kind) {
      case KILN_BIN_ADD: KILN_BINARY_LOOP(float, x + y); break;
      case KILN_BIN_SUB: KILN_BINARY_LOOP(float, x - y); break;
      case KILN_BIN_MUL: KILN_BINARY_LOOP(float, x * y); break;
      case KILN_BIN_DIV: KILN_BINARY_LOOP(float, x / y); break;
      case KILN_BIN_POW: KILN_BINARY_LOOP(float, powf(x, y)); break;
      case KILN_BIN_MOD:  // refused by the checker
      case KILN_BIN_FMOD: KILN_BINARY_LOOP(float, fmodf(x, y)); break;
    }
  } else if (a->dtype == KILN_GRAPH_DTYPE_I64) {
    switch (kind) {
      case KILN_BIN_ADD: KILN_BINARY_LOOP(int64_t, (int64_t)((uint64_t)x + (uint64_t)y)); break;
      case KILN_BIN_SUB: KILN_BINARY_LOOP(int64_t, (int64_t)((uint64_t)x - (uint64_t)y)); break;
      case KILN_BIN_MUL: KILN_BINARY_LOOP(int64_t, (int64_t)((uint64_t)x * (uint64_t)y)); break;
      case KILN_BIN_DIV: KILN_BINARY_LOOP(int64_t, kiln_int_div(x, y)); break;
      case KILN_BIN_MOD: KILN_BINARY_LOOP(int64_t, kiln_int_mod(x, y, false)); break;
      case KILN_BIN_FMOD: KILN_BINARY_LOOP(int64_t, kiln_int_mod(x, y, true)); break;
      case KILN_BIN_POW: break;
    }
  } else {
    switch (kind) {
      case KILN_BIN_ADD: KILN_BINARY_LOOP(int32_t, (int32_t)((uint32_t)x + (uint32_t)y)); break;
      case KILN_BIN_SUB: KILN_BINARY_LOOP(int32_t, (int32_t)((uint32_t)x - (uint32_t)y)); break;
      case KILN_BIN_MUL: KILN_BINARY_LOOP(int32_t, (int32_t)((uint32_t)x * (uint32_t)y)); break;
      case KILN_BIN_DIV: KILN_BINARY_LOOP(int32_t, (int32_t)kiln_int_div(x, y)); break;
      case KILN_BIN_MOD: KILN_BINARY_LOOP(int32_t, (int32_t)kiln_int_mod(x, y, false)); break;
      case KILN_BIN_FMOD: KILN_BINARY_LOOP(int32_t, (int32_t)kiln_int_mod(x, y, true)); break;
      case KILN_BIN_POW: break;
    }
  }
  return kiln_ok_status();
}

// ---- Identity, Dropout, Cast ---------------------------------------------

static kiln_status_t kiln_infer_identity(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  return kiln_op_set_output(args, 0, x->dtype, &x->shape);
}

static kiln_status_t kiln_run_copy(const kiln_op_run_args_t* args) {
  size_t bytes =
      args->outputs[0].count * kiln_graph_dtype_size(args->outputs[0].dtype);
  if (bytes) memcpy(args->outputs[0].data, args->inputs[0].data, bytes);
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_dropout(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  const kiln_graph_value_t* ratio = kiln_op_input(args, 1);
  if (ratio && ratio->dtype != KILN_GRAPH_DTYPE_F32) {
    return kiln_op_unsupported(args, "ratio must be float32");
  }
  const kiln_graph_value_t* training = kiln_op_input(args, 2);
  if (training) {
    // Training mode with a constant ratio of 0 (what exporters emit for
    // F.dropout(p=0.0, training=...)) drops nothing either.
    bool zero_ratio = ratio && ratio->data && ratio->dtype == KILN_GRAPH_DTYPE_F32;
    for (int32_t d = 0; zero_ratio && d < ratio->shape.rank; ++d) {
      zero_ratio = ratio->shape.dims[d] == 1;  // a scalar: one element
    }
    zero_ratio = zero_ratio && *(const float*)ratio->data == 0.0f;
    if (training->dtype != KILN_GRAPH_DTYPE_BOOL || !training->data ||
        (*(const uint8_t*)training->data && !zero_ratio)) {
      return kiln_op_unsupported(
          args, "training_mode must be a constant false, or the ratio a constant 0 "
                "(inference only)");
    }
  }
  // Dropout-7 (opsets 7-9) is the identity at inference too; its mask has
  // the input's type, which kiln does not produce.
  if (args->graph->opset < 10 && args->node->output_count > 1 && args->node->outputs[1] >= 0) {
    return kiln_op_unsupported(args, "the mask output of Dropout before opset 10");
  }
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, x->dtype, &x->shape));
  return kiln_op_set_output(args, 1, KILN_GRAPH_DTYPE_BOOL, &x->shape);
}

static kiln_status_t kiln_run_dropout(const kiln_op_run_args_t* args) {
  KILN_RETURN_IF_ERROR(kiln_run_copy(args));
  // In inference mode nothing is dropped: the mask is all true.
  if (args->output_count > 1 && args->outputs[1].data) {
    memset(args->outputs[1].data, 1, args->outputs[1].count);
  }
  return kiln_ok_status();
}

static kiln_graph_dtype_t kiln_cast_target(int64_t to) {
  switch (to) {
    case 1: return KILN_GRAPH_DTYPE_F32;
    case 10: return KILN_GRAPH_DTYPE_F16;
    case 6: return KILN_GRAPH_DTYPE_I32;
    case 7: return KILN_GRAPH_DTYPE_I64;
    case 9: return KILN_GRAPH_DTYPE_BOOL;
    default: return KILN_GRAPH_DTYPE_INVALID;
  }
}

static kiln_status_t kiln_infer_cast(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  // float16: the Casts joining an fp16 model's inputs to its float32 graph.
  KILN_RETURN_IF_ERROR(
      kiln_op_require_input(args, 0, KILN_OP_ANY | (1u << KILN_GRAPH_DTYPE_F16), &x));
  int64_t to = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "to", 0, &to));
  kiln_graph_dtype_t dtype = kiln_cast_target(to);
  if (dtype == KILN_GRAPH_DTYPE_INVALID) {
    return kiln_op_unsupported(args, "to=%lld is not supported; supported: "
                               "FLOAT(1), INT32(6), INT64(7), BOOL(9), FLOAT16(10)",
                               (long long)to);
  }
  return kiln_op_set_output(args, 0, dtype, &x->shape);
}

static double kiln_load_as_double(const kiln_ref_tensor_t* t, size_t i) {
  switch (t->dtype) {
    case KILN_GRAPH_DTYPE_F32: return ((const float*)t->data)[i];
    case KILN_GRAPH_DTYPE_F16: return kiln_f16_to_f32(((const uint16_t*)t->data)[i]);
    case KILN_GRAPH_DTYPE_I64: return (double)((const int64_t*)t->data)[i];
    case KILN_GRAPH_DTYPE_I32: return ((const int32_t*)t->data)[i];
    default: return ((const uint8_t*)t->data)[i];
  }
}

static kiln_status_t kiln_run_cast(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  kiln_ref_tensor_t* y = &args->outputs[0];
  for (size_t i = 0; i < y->count; ++i) {
    // Integers go through int64 directly so large values stay exact.
    bool integral = x->dtype != KILN_GRAPH_DTYPE_F32 && x->dtype != KILN_GRAPH_DTYPE_F16;
    int64_t iv = integral ? (x->dtype == KILN_GRAPH_DTYPE_I64
                                 ? ((const int64_t*)x->data)[i]
                                 : (int64_t)kiln_load_as_double(x, i))
                          : 0;
    double dv = kiln_load_as_double(x, i);
    switch (y->dtype) {
      case KILN_GRAPH_DTYPE_F32: ((float*)y->data)[i] = (float)dv; break;
      case KILN_GRAPH_DTYPE_F16: ((uint16_t*)y->data)[i] = kiln_f32_to_f16((float)dv); break;
      case KILN_GRAPH_DTYPE_I64:
        if (integral) {
          ((int64_t*)y->data)[i] = iv;
        } else {
          // Out-of-range and NaN float->int casts are undefined in ONNX; a
          // saturating cast keeps the reference free of C undefined behaviour.
          ((int64_t*)y->data)[i] = isnan(dv) ? 0 : dv >= 9.2e18 ? INT64_MAX
                                   : dv <= -9.2e18 ? INT64_MIN : (int64_t)dv;
        }
        break;
      case KILN_GRAPH_DTYPE_I32:
        if (integral) {
          ((int32_t*)y->data)[i] = (int32_t)(uint32_t)(uint64_t)iv;
        } else {
          ((int32_t*)y->data)[i] = isnan(dv) ? 0 : dv >= 2147483647.0
                                   ? INT32_MAX : dv <= -2147483648.0
                                   ? INT32_MIN : (int32_t)dv;
        }
        break;
      default: ((uint8_t*)y->data)[i] = dv != 0.0; break;
    }
  }
  return kiln_ok_status();
}

#define KILN_UNARY(name) {name, "", 1, 1, 1, 1, kiln_infer_unary, kiln_run_unary}
#define KILN_ACTIVATION_OP(name, attrs) \
  {name, attrs, 1, 1, 1, 1, kiln_infer_activation, kiln_run_activation}
const kiln_op_def_t kiln_ops_elementwise[] = {
    KILN_UNARY("Abs"), KILN_UNARY("Sqrt"), KILN_UNARY("Exp"),
    KILN_UNARY("Log"), KILN_UNARY("Erf"), KILN_UNARY("Neg"),
    KILN_UNARY("Reciprocal"),
    {"Relu", "", 1, 1, 1, 1, kiln_infer_activation, kiln_run_activation},
    {"LeakyRelu", "alpha", 1, 1, 1, 1, kiln_infer_activation,
     kiln_run_activation},
    {"Sigmoid", "", 1, 1, 1, 1, kiln_infer_activation, kiln_run_activation},
    {"HardSigmoid", "alpha,beta", 1, 1, 1, 1, kiln_infer_activation,
     kiln_run_activation},
    {"HardSwish", "", 1, 1, 1, 1, kiln_infer_activation, kiln_run_activation,
     14},
    {"Tanh", "", 1, 1, 1, 1, kiln_infer_activation, kiln_run_activation},
    {"Elu", "alpha", 1, 1, 1, 1, kiln_infer_activation, kiln_run_activation},
    {"Softplus", "", 1, 1, 1, 1, kiln_infer_activation, kiln_run_activation},
    {"Gelu", "approximate", 1, 1, 1, 1, kiln_infer_activation,
     kiln_run_activation},
    {"Clip", "max,min", 1, 3, 1, 1, kiln_infer_clip, kiln_run_clip, 6},
    // Activations and math ops of the activation table (activation.c).
    KILN_ACTIVATION_OP("Mish", ""), KILN_ACTIVATION_OP("Softsign", ""),
    KILN_ACTIVATION_OP("Selu", "alpha,gamma"), KILN_ACTIVATION_OP("Celu", "alpha"),
    KILN_ACTIVATION_OP("ThresholdedRelu", "alpha"),
    KILN_ACTIVATION_OP("Shrink", "bias,lambd"), KILN_ACTIVATION_OP("Sin", ""),
    KILN_ACTIVATION_OP("Cos", ""), KILN_ACTIVATION_OP("Tan", ""),
    KILN_ACTIVATION_OP("Asin", ""), KILN_ACTIVATION_OP("Acos", ""),
    KILN_ACTIVATION_OP("Atan", ""), KILN_ACTIVATION_OP("Sinh", ""),
    KILN_ACTIVATION_OP("Cosh", ""), KILN_ACTIVATION_OP("Asinh", ""),
    KILN_ACTIVATION_OP("Acosh", ""), KILN_ACTIVATION_OP("Atanh", ""),
    KILN_ACTIVATION_OP("Floor", ""), KILN_ACTIVATION_OP("Ceil", ""),
    KILN_ACTIVATION_OP("Round", ""), KILN_ACTIVATION_OP("Sign", ""),
    KILN_ACTIVATION_OP("kiln.Silu", ""),  // pass_fuse_silu.c
    {"Add", "", 2, 2, 1, 1, kiln_infer_binary, kiln_run_binary},
    {"Sub", "", 2, 2, 1, 1, kiln_infer_binary, kiln_run_binary},
    {"Mul", "", 2, 2, 1, 1, kiln_infer_binary, kiln_run_binary},
    {"Div", "", 2, 2, 1, 1, kiln_infer_binary, kiln_run_binary},
    {"Pow", "", 2, 2, 1, 1, kiln_infer_binary, kiln_run_binary},
    {"Mod", "fmod", 2, 2, 1, 1, kiln_infer_binary, kiln_run_binary, 10},
    {"Identity", "", 1, 1, 1, 1, kiln_infer_identity, kiln_run_copy},
    {"Dropout", "seed,ratio", 1, 3, 1, 2, kiln_infer_dropout,
     kiln_run_dropout, 7},
    {"Cast", "saturate,to", 1, 1, 1, 1, kiln_infer_cast, kiln_run_cast},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
