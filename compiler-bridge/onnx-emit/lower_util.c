// Shared lowering helpers and the op -> lowering table.
#include "lower_util.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

kiln_status_t kiln_lower_refuse(const kiln_lower_t* l, const char* format, ...) {
  char reason[512];
  va_list args;
  va_start(args, format);
  vsnprintf(reason, sizeof(reason), format, args);
  va_end(args);
  return kiln_make_status(KILN_STATUS_UNIMPLEMENTED,
                          "node '%s' (op %s, opset %lld): %s (no GPU lowering)",
                          l->node->name, l->node->op_type,
                          (long long)l->graph->opset, reason);
}

const kiln_graph_value_t* kiln_lower_in(const kiln_lower_t* l, size_t index) {
  return kiln_graph_node_input(l->graph, l->node, index);
}

const kiln_graph_value_t* kiln_lower_out(const kiln_lower_t* l, size_t index) {
  if (index >= l->node->output_count || l->node->outputs[index] < 0) return NULL;
  return &l->graph->values[l->node->outputs[index]];
}

static kiln_status_t kiln_lower_range(const kiln_lower_t* l, int32_t value_id,
                                      const char* what, size_t index,
                                      kiln_emit_range_t* out) {
  const kiln_graph_value_t* value = &l->graph->values[value_id];
  if (value->dtype != KILN_GRAPH_DTYPE_F32) {
    return kiln_lower_refuse(l, "%s %zu ('%s') is %s; GPU kernels take float32",
                             what, index, value->name,
                             kiln_graph_dtype_name(value->dtype));
  }
  uint64_t count = kiln_lower_count(&value->shape);
  if (count == 0) {
    return kiln_lower_refuse(l, "%s %zu ('%s') is empty", what, index, value->name);
  }
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, count));
  return kiln_emit_value_range(l->program, value_id, out);
}

kiln_status_t kiln_lower_in_range(const kiln_lower_t* l, size_t index,
                                  kiln_emit_range_t* out) {
  memset(out, 0, sizeof(*out));
  if (index >= l->node->input_count || l->node->inputs[index] < 0) {
    return kiln_lower_refuse(l, "input %zu is absent", index);
  }
  return kiln_lower_range(l, l->node->inputs[index], "input", index, out);
}

kiln_status_t kiln_lower_out_range(const kiln_lower_t* l, size_t index,
                                   kiln_emit_range_t* out) {
  memset(out, 0, sizeof(*out));
  if (index >= l->node->output_count || l->node->outputs[index] < 0) {
    return kiln_lower_refuse(l, "output %zu is absent", index);
  }
  return kiln_lower_range(l, l->node->outputs[index], "output", index, out);
}

uint64_t kiln_lower_count(const kiln_graph_shape_t* shape) {
  return kiln_lower_dims(shape, 0, shape->rank);
}

uint64_t kiln_lower_dims(const kiln_graph_shape_t* shape, int32_t begin,
                         int32_t end) {
  uint64_t count = 1;
  for (int32_t d = begin; d < end; ++d) {
    count *= shape->dims[d] < 0 ? 0 : (uint64_t)shape->dims[d];
  }
  return count;
}

kiln_status_t kiln_lower_check_u32(const kiln_lower_t* l, uint64_t value) {
  if (value > UINT32_MAX / 2) {
    return kiln_lower_refuse(l, "a size of %llu exceeds the kernels' 32-bit indexing",
                             (unsigned long long)value);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_axis(const kiln_lower_t* l, int64_t axis, int32_t rank,
                              int32_t* out_axis) {
  *out_axis = 0;
  if (axis < 0) axis += rank;
  if (axis < 0 || axis >= rank) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "node '%s' (op %s): axis out of range for rank %d",
                            l->node->name, l->node->op_type, rank);
  }
  *out_axis = (int32_t)axis;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_const_ints(const kiln_lower_t* l, size_t index,
                                    const int64_t** out_values,
                                    size_t* out_count) {
  *out_values = NULL;
  *out_count = 0;
  const kiln_graph_value_t* value = kiln_lower_in(l, index);
  if (!value) return kiln_ok_status();
  if (!value->data || value->dtype != KILN_GRAPH_DTYPE_I64) {
    return kiln_lower_refuse(l, "input %zu must be a constant int64 tensor", index);
  }
  *out_values = (const int64_t*)value->data;
  *out_count = (size_t)kiln_lower_count(&value->shape);
  return kiln_ok_status();
}

kiln_status_t kiln_lower_activation(const kiln_lower_t* l, const char* name,
                                    float alpha, float beta, uint32_t* out_code,
                                    float* out_alpha, float* out_beta) {
  static const struct {
    const char* name;
    uint32_t code;
  } kTable[] = {
      {"Relu", KILN_ACT_RELU},       {"LeakyRelu", KILN_ACT_LEAKY_RELU},
      {"Clip", KILN_ACT_CLIP},       {"Sigmoid", KILN_ACT_SIGMOID},
      {"HardSigmoid", KILN_ACT_HARD_SIGMOID},
      {"HardSwish", KILN_ACT_HARD_SWISH},
      {"Tanh", KILN_ACT_TANH},       {"Gelu", KILN_ACT_GELU},
      {"Erf", KILN_ACT_ERF},         {"Elu", KILN_ACT_ELU},
      {"Softplus", KILN_ACT_SOFTPLUS}, {"Sqrt", KILN_ACT_SQRT},
      {"Exp", KILN_ACT_EXP},         {"Log", KILN_ACT_LOG},
      {"Neg", KILN_ACT_NEG},         {"Abs", KILN_ACT_ABS},
      {"Reciprocal", KILN_ACT_RECIPROCAL},
  };
  *out_code = KILN_ACT_NONE;
  *out_alpha = alpha;
  *out_beta = beta;
  for (size_t i = 0; i < sizeof(kTable) / sizeof(kTable[0]); ++i) {
    if (strcmp(kTable[i].name, name) == 0) {
      // The fused Gelu carries alpha = 1 for the tanh approximation, which
      // the kernel (erf form) does not compute.
      if (kTable[i].code == KILN_ACT_GELU && alpha != 0.0f) {
        return kiln_lower_refuse(l, "Gelu approximate='tanh' is not supported");
      }
      *out_code = kTable[i].code;
      return kiln_ok_status();
    }
  }
  return kiln_lower_refuse(l, "activation '%s' is not supported", name);
}

kiln_status_t kiln_lower_emit_copy(kiln_emit_program_t* program,
                                   const kiln_emit_range_t* in,
                                   const kiln_emit_range_t* out,
                                   uint64_t count) {
  kiln_kernel_copy_params_t params = {(uint32_t)count};
  kiln_emit_dispatch_desc_t desc = {
      .kernel = KILN_KERNEL_COPY, .push = &params, .binding_count = 2,
      .bindings = {*in, *out}, .written_mask = 2u,
      .grid = KILN_EMIT_GRID_LINEAR, .grid_count = count};
  return kiln_emit_add_dispatch(program, &desc);
}

typedef kiln_status_t (*kiln_lower_fn_t)(const kiln_lower_t* l);

kiln_status_t kiln_emit_lower_node(kiln_emit_program_t* program,
                                   int32_t node_id) {
  kiln_lower_t l = {program, program->graph, &program->graph->nodes[node_id]};
  const char* op = l.node->op_type;
  static const struct {
    const char* op;
    kiln_lower_fn_t fn;
  } kPlain[] = {
      {"Conv", kiln_lower_conv},         {"Gemm", kiln_lower_gemm},
      {"MatMul", kiln_lower_matmul},     {"Reshape", kiln_lower_copy},
      {"Flatten", kiln_lower_copy},      {"Squeeze", kiln_lower_copy},
      {"Unsqueeze", kiln_lower_copy},    {"Identity", kiln_lower_copy},
      {"Dropout", kiln_lower_copy},      {"Transpose", kiln_lower_transpose},
      {"Concat", kiln_lower_concat},     {"Slice", kiln_lower_slice},
      {"LayerNormalization", kiln_lower_layer_norm},
      {"InstanceNormalization", kiln_lower_instance_norm},
      {"Gather", kiln_lower_gather},     {"Pad", kiln_lower_pad},
      {"Split", kiln_lower_split},       {"Expand", kiln_lower_expand},
      {"BatchNormalization", kiln_lower_batch_norm},
      {"ConvTranspose", kiln_lower_conv_transpose},
      {"Resize", kiln_lower_resize},     {"Einsum", kiln_lower_einsum},
      {"DepthToSpace", kiln_lower_space_depth}, {"SpaceToDepth", kiln_lower_space_depth},
      {"Where", kiln_lower_where},
  };
  if (kiln_lower_is_int_passthrough(op) && l.node->output_count > 0 &&
      l.node->outputs[0] >= 0) {
    kiln_graph_dtype_t dtype = program->graph->values[l.node->outputs[0]].dtype;
    if (dtype == KILN_GRAPH_DTYPE_I64 || dtype == KILN_GRAPH_DTYPE_I32) {
      return kiln_lower_int_passthrough(&l);
    }
  }
  if (strcmp(op, "Cast") == 0) return kiln_lower_cast(&l);
  for (size_t i = 0; i < sizeof(kPlain) / sizeof(kPlain[0]); ++i) {
    if (strcmp(kPlain[i].op, op) == 0) return kPlain[i].fn(&l);
  }
  static const struct {
    const char* op;
    uint32_t code;
  } kBinary[] = {{"Add", KILN_BINARY_ADD}, {"Sub", KILN_BINARY_SUB},
                 {"Mul", KILN_BINARY_MUL}, {"Div", KILN_BINARY_DIV},
                 {"Pow", KILN_BINARY_POW}, {"Max", KILN_BINARY_MAX},
                 {"Min", KILN_BINARY_MIN}};
  // Max/Min/Sum/Mean are variadic; two inputs are the plain binary op.
  if (strcmp(op, "Sum") == 0) return kiln_lower_variadic(&l, KILN_BINARY_ADD, false);
  if (strcmp(op, "Mean") == 0) return kiln_lower_variadic(&l, KILN_BINARY_ADD, true);
  if ((strcmp(op, "Max") == 0 || strcmp(op, "Min") == 0) && l.node->input_count != 2) {
    return kiln_lower_variadic(&l, op[1] == 'a' ? KILN_BINARY_MAX : KILN_BINARY_MIN, false);
  }
  for (size_t i = 0; i < sizeof(kBinary) / sizeof(kBinary[0]); ++i) {
    if (strcmp(kBinary[i].op, op) == 0) return kiln_lower_binary(&l, kBinary[i].code);
  }
  static const struct {
    const char* op;
    uint32_t code;
  } kReduce[] = {{"ReduceSum", KILN_REDUCE_SUM}, {"ReduceMean", KILN_REDUCE_MEAN},
                 {"ReduceMax", KILN_REDUCE_MAX}, {"ReduceMin", KILN_REDUCE_MIN}};
  for (size_t i = 0; i < sizeof(kReduce) / sizeof(kReduce[0]); ++i) {
    if (strcmp(kReduce[i].op, op) == 0) return kiln_lower_reduce(&l, kReduce[i].code);
  }
  if (strcmp(op, "MaxPool") == 0) return kiln_lower_pool(&l, KILN_POOL_MAX);
  if (strcmp(op, "AveragePool") == 0) return kiln_lower_pool(&l, KILN_POOL_AVG);
  if (strcmp(op, "GlobalAveragePool") == 0) {
    return kiln_lower_global_pool(&l, KILN_REDUCE_MEAN);
  }
  if (strcmp(op, "GlobalMaxPool") == 0) return kiln_lower_global_pool(&l, KILN_REDUCE_MAX);
  if (strcmp(op, "Softmax") == 0) return kiln_lower_softmax(&l, false);
  if (strcmp(op, "LogSoftmax") == 0) return kiln_lower_softmax(&l, true);
  if (strcmp(op, "LSTM") == 0 || strcmp(op, "GRU") == 0 || strcmp(op, "RNN") == 0) {
    return kiln_lower_refuse(&l, "%s runs on the GPU only unrolled, which needs constant W, R "
                                 "and B and at most 512 steps", op);
  }
  uint32_t code = 0;
  float alpha = 0, beta = 0;
  kiln_status_t status = kiln_lower_activation(&l, op, 0, 0, &code, &alpha, &beta);
  if (!status) return kiln_lower_unary(&l);
  kiln_status_free(status);
  return kiln_lower_refuse(
      &l, "supported ops: Conv, Gemm, MatMul, Add, Sub, Mul, Div, Pow, Max, Min, "
          "Relu, LeakyRelu, Clip, Sigmoid, HardSigmoid, HardSwish, Tanh, Gelu, "
          "Erf, Elu, Softplus, Sqrt, Exp, Log, Neg, Abs, Reciprocal, Reshape, "
          "Flatten, Squeeze, Unsqueeze, Transpose, Concat, Slice, MaxPool, "
          "AveragePool, GlobalAveragePool, GlobalMaxPool, ReduceSum, "
          "ReduceMean, ReduceMax, ReduceMin, Softmax, LogSoftmax, "
          "LayerNormalization, InstanceNormalization, Gather, Pad, Split, Expand, "
          "Sum, Mean, BatchNormalization, ConvTranspose, Resize, Einsum, DepthToSpace, "
          "SpaceToDepth, LSTM, GRU, RNN, Where (constant condition), Cast (to float)");
}
