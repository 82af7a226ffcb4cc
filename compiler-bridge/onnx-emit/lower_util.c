// Shared lowering helpers and the op -> lowering table.
#include "lower_util.h"

#include <float.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

kiln_status_t kiln_lower_refuse(const kiln_lower_t* l, const char* format, ...) {
  va_list args;
  va_start(args, format);
  // Full length: the unsupported-op refusal lists every lowered op.
  char* reason = kiln_op_format_alloc_v(format, args);
  va_end(args);
  kiln_status_t status = kiln_make_status(
      KILN_STATUS_UNIMPLEMENTED, "node '%s' (op %s, opset %lld): %s (no GPU lowering)",
      l->node->name, l->node->op_type, (long long)l->graph->opset,
      reason ? reason : format);
  free(reason);
  return status;
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
  if (value->dtype != KILN_GRAPH_DTYPE_F32 && value->dtype != KILN_GRAPH_DTYPE_F16) {
    return kiln_lower_refuse(l, "%s %zu ('%s') is %s; GPU kernels take float32 or float16",
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
  *out_code = KILN_ACT_NONE;
  *out_alpha = alpha;
  *out_beta = beta;
  kiln_activation_t code = kiln_activation_from_name(name);
  if (code == KILN_ACT_NONE) {
    return kiln_lower_refuse(l, "activation '%s' is not supported", name);
  }
  // Gelu carries alpha = 1 for the tanh approximation; the kernels compute
  // both forms (activation.glsl).
  *out_code = code;
  return kiln_ok_status();
}

kiln_status_t kiln_lower_emit_copy(kiln_emit_program_t* program,
                                   const kiln_emit_range_t* in,
                                   const kiln_emit_range_t* out,
                                   uint64_t count, kiln_emit_storage_t storage) {
  kiln_kernel_copy_params_t params = {(uint32_t)count};
  kiln_emit_dispatch_desc_t desc = {
      .kernel = KILN_KERNEL_COPY, .storage = storage, .push = &params, .binding_count = 2,
      .bindings = {*in, *out}, .written_mask = 2u,
      .grid = KILN_EMIT_GRID_LINEAR, .grid_count = count};
  return kiln_emit_add_tiled(program, &desc);
}

// Adapters so every row of the lowering table is (function, code).
static kiln_status_t kiln_lower_sum(const kiln_lower_t* l, uint32_t op) {
  return kiln_lower_variadic(l, op, false);
}
static kiln_status_t kiln_lower_mean(const kiln_lower_t* l, uint32_t op) {
  return kiln_lower_variadic(l, op, true);
}
// Max/Min are variadic; two inputs are the plain binary op.
static kiln_status_t kiln_lower_max_min(const kiln_lower_t* l, uint32_t op) {
  if (l->node->input_count != 2) return kiln_lower_variadic(l, op, false);
  return kiln_lower_binary(l, op);
}
static kiln_status_t kiln_lower_softmax_op(const kiln_lower_t* l, uint32_t log) {
  return kiln_lower_softmax(l, log != 0);
}

// The GPU lowering of each op of the ONNX op table (compiler-bridge/onnx);
// the activations and unary math ops (Relu ... Reciprocal) come from the
// activation table (onnx/activation.c) and lower to the unary kernel. A test
// checks that every name here is an op of the ONNX table.
typedef struct kiln_lowering_t {
  const char* op;
  kiln_status_t (*plain)(const kiln_lower_t* l);
  kiln_status_t (*coded)(const kiln_lower_t* l, uint32_t code);
  uint32_t code;
  const char* note;  // shown in the supported-op list
  // Its float tensors only at float32 (the recurrent kernel, Where's select
  // table): under --precision=f16 the node runs at float32 between Casts
  // (kiln_graph_precision_f16, kiln_emit_node_runs_f32_only). Not the
  // host's TopK, NonMaxSuppression and comparisons: what they select
  // changes wherever float16 storage rounded two inputs to the same order
  // (a detector's top 10 boxes off by 9.4e-2 of max|ref|), so --precision=
  // f16 refuses them (kiln_lower_host_allowed).
  bool f32_only;
} kiln_lowering_t;

#define PLAIN(op, fn) {op, fn, NULL, 0, NULL}
#define CODED(op, fn, code) {op, NULL, fn, code, NULL}
static const kiln_lowering_t kLowerings[] = {
    PLAIN("Conv", kiln_lower_conv),
    PLAIN("Gemm", kiln_lower_gemm),
    PLAIN("MatMul", kiln_lower_matmul),
    PLAIN("MatMulNBits", kiln_lower_matmul_nbits),
    CODED("Add", kiln_lower_binary, KILN_BINARY_ADD),
    CODED("Sub", kiln_lower_binary, KILN_BINARY_SUB),
    CODED("Mul", kiln_lower_binary, KILN_BINARY_MUL),
    CODED("Div", kiln_lower_binary, KILN_BINARY_DIV),
    CODED("Pow", kiln_lower_binary, KILN_BINARY_POW),
    CODED("Max", kiln_lower_max_min, KILN_BINARY_MAX),
    CODED("Min", kiln_lower_max_min, KILN_BINARY_MIN),
    CODED("Sum", kiln_lower_sum, KILN_BINARY_ADD),
    CODED("Mean", kiln_lower_mean, KILN_BINARY_ADD),
    PLAIN("Reshape", kiln_lower_copy),
    PLAIN("Flatten", kiln_lower_copy),
    PLAIN("Squeeze", kiln_lower_copy),
    PLAIN("Unsqueeze", kiln_lower_copy),
    PLAIN("Identity", kiln_lower_copy),
    PLAIN("Dropout", kiln_lower_copy),
    PLAIN("Transpose", kiln_lower_transpose),
    PLAIN("Concat", kiln_lower_concat),
    PLAIN("Slice", kiln_lower_slice),
    CODED("MaxPool", kiln_lower_pool, KILN_POOL_MAX),
    CODED("AveragePool", kiln_lower_pool, KILN_POOL_AVG),
    CODED("GlobalAveragePool", kiln_lower_global_pool, KILN_REDUCE_MEAN),
    CODED("GlobalMaxPool", kiln_lower_global_pool, KILN_REDUCE_MAX),
    CODED("ReduceSum", kiln_lower_reduce, KILN_REDUCE_SUM),
    CODED("ReduceMean", kiln_lower_reduce, KILN_REDUCE_MEAN),
    CODED("ReduceMax", kiln_lower_reduce, KILN_REDUCE_MAX),
    CODED("ReduceMin", kiln_lower_reduce, KILN_REDUCE_MIN),
    CODED("ReduceProd", kiln_lower_reduce, KILN_REDUCE_PROD),
    CODED("ReduceL1", kiln_lower_reduce, KILN_REDUCE_SUM_ABS),
    CODED("ReduceL2", kiln_lower_reduce, KILN_REDUCE_L2),
    CODED("ReduceSumSquare", kiln_lower_reduce, KILN_REDUCE_SUM_SQUARE),
    CODED("ReduceLogSum", kiln_lower_reduce, KILN_REDUCE_LOG_SUM),
    CODED("ReduceLogSumExp", kiln_lower_reduce, KILN_REDUCE_LOG_SUM_EXP),
    {"ArgMax", kiln_lower_argreduce, NULL, 0, "int64 graph output"},
    {"ArgMin", kiln_lower_argreduce, NULL, 0, "int64 graph output"},
    CODED("Softmax", kiln_lower_softmax_op, 0),
    CODED("LogSoftmax", kiln_lower_softmax_op, 1),
    PLAIN("LayerNormalization", kiln_lower_layer_norm),
    PLAIN("InstanceNormalization", kiln_lower_instance_norm),
    PLAIN("GroupNormalization", kiln_lower_group_norm),
    PLAIN("BatchNormalization", kiln_lower_batch_norm),
    PLAIN("Gather", kiln_lower_gather),
    {"GatherElements", kiln_lower_gather_elements, NULL, 0, "constant indices"},
    PLAIN("Pad", kiln_lower_pad),
    PLAIN("Split", kiln_lower_split),
    PLAIN("Expand", kiln_lower_expand),
    PLAIN("Tile", kiln_lower_tile),
    PLAIN("ConvTranspose", kiln_lower_conv_transpose),
    PLAIN("Resize", kiln_lower_resize),
    PLAIN("Upsample", kiln_lower_resize),
    PLAIN("Einsum", kiln_lower_einsum),
    PLAIN("DepthToSpace", kiln_lower_space_depth),
    PLAIN("SpaceToDepth", kiln_lower_space_depth),
    {"LSTM", kiln_lower_rnn, NULL, 0, NULL, true},
    {"GRU", kiln_lower_rnn, NULL, 0, NULL, true},
    {"RNN", kiln_lower_rnn, NULL, 0, NULL, true},
    {"Where", kiln_lower_where_any, NULL, 0, "run-time condition on the host", true},
    {"Cast", kiln_lower_cast, NULL, 0, "to float"},
    {"kiln.Attention", kiln_lower_attention, NULL, 0, "fused by the compiler"},
    {"kiln.QuantizeDequantize", kiln_lower_quantize_dequantize, NULL, 0,
     "QDQ pairs, fused by the compiler"},
    {"kiln.Quantize", kiln_lower_quantize_dequantize, NULL, 0, "QOperator graphs"},
    {"kiln.Dequantize", kiln_lower_quantize_dequantize, NULL, 0, "QOperator graphs"},
    {"kiln.Requantize", kiln_lower_quantize_dequantize, NULL, 0, "QOperator graphs"},
    {"kiln.DynamicQuantizeParams", kiln_lower_dynamic_quantize_params, NULL, 0,
     "DynamicQuantizeLinear graphs"},
    {"QuantizeLinear", kiln_lower_int8_refused, NULL, 0, "in QDQ pairs"},
    {"DequantizeLinear", kiln_lower_int8_refused, NULL, 0, "in QDQ pairs, of constants"},
    {"TopK", kiln_lower_host, NULL, 0, "on the host"},
    {"NonZero", kiln_lower_host, NULL, 0, "on the host, as a graph output"},
    {"NonMaxSuppression", kiln_lower_host, NULL, 0, "on the host, as a graph output"},
    {"Equal", kiln_lower_host, NULL, 0, "on the host"},
    {"Less", kiln_lower_host, NULL, 0, "on the host"},
    {"Greater", kiln_lower_host, NULL, 0, "on the host"},
    {"LessOrEqual", kiln_lower_host, NULL, 0, "on the host"},
    {"GreaterOrEqual", kiln_lower_host, NULL, 0, "on the host"},
    {"Not", kiln_lower_host, NULL, 0, "on the host"},
    {"And", kiln_lower_host, NULL, 0, "on the host"},
    {"Or", kiln_lower_host, NULL, 0, "on the host"},
    {"Xor", kiln_lower_host, NULL, 0, "on the host"},
};
#undef PLAIN
#undef CODED

size_t kiln_lowering_count(void) { return sizeof(kLowerings) / sizeof(kLowerings[0]); }

bool kiln_emit_node_runs_f32_only(const kiln_graph_t* graph, const kiln_graph_node_t* node) {
  // A Cast from bool runs on the host (to float32); between floats it is
  // the cast kernel, at any storage.
  if (strcmp(node->op_type, "Cast") == 0) {
    return node->input_count > 0 && node->inputs[0] >= 0 &&
           graph->values[node->inputs[0]].dtype == KILN_GRAPH_DTYPE_BOOL;
  }
  // LayerNormalization's Mean / InvStdDev outputs are copies of rows_split's
  // float32 statistics (kiln_lower_norm_stats); its Y alone runs at f16.
  if (strcmp(node->op_type, "LayerNormalization") == 0) {
    for (size_t o = 1; o < node->output_count; ++o) {
      if (node->outputs[o] >= 0 && kiln_graph_value_use_count(graph, node->outputs[o])) {
        return true;
      }
    }
    return false;
  }
  for (size_t i = 0; i < kiln_lowering_count(); ++i) {
    if (strcmp(kLowerings[i].op, node->op_type) == 0) return kLowerings[i].f32_only;
  }
  return false;
}

const char* kiln_lowering_op(size_t index) {
  return index < kiln_lowering_count() ? kLowerings[index].op : NULL;
}

static size_t kiln_lower_list_append(char* text, size_t size, size_t used,
                                     const char* name, const char* note) {
  int n = snprintf(text ? text + used : NULL, text ? size - used : 0,
                   note ? "%s%s (%s)" : "%s%s", used ? ", " : "", name, note);
  return used + (n > 0 ? (size_t)n : 0);
}

static size_t kiln_lower_list_fill(char* text, size_t size) {
  size_t used = 0;
  for (size_t i = 0; i < kiln_lowering_count(); ++i) {
    used = kiln_lower_list_append(text, size, used, kLowerings[i].op, kLowerings[i].note);
  }
  for (size_t i = 0; kiln_activation_name(i); ++i) {
    used = kiln_lower_list_append(text, size, used, kiln_activation_name(i), NULL);
  }
  return used;
}

char* kiln_lower_supported_list(void) {
  size_t length = kiln_lower_list_fill(NULL, 0);
  char* text = (char*)malloc(length + 1);
  if (!text) return NULL;
  text[0] = '\0';
  kiln_lower_list_fill(text, length + 1);
  return text;
}

kiln_status_t kiln_emit_lower_node(kiln_emit_program_t* program,
                                   int32_t node_id) {
  kiln_lower_t l = {program, program->graph, &program->graph->nodes[node_id]};
  program->node = l.node;
  const char* op = l.node->op_type;
  // A node runs one storage (kiln_emit_node_is_f16): float32 and float16
  // run-time values side by side (a float32 model's own Cast to float16
  // feeding float32 work) would be read as the wrong type. Casts join them.
  if (strcmp(op, "Cast") != 0 && strcmp(op, "CastLike") != 0) {
    bool f32 = false, f16 = false;
    for (size_t i = 0; i < l.node->input_count + l.node->output_count; ++i) {
      int32_t id = i < l.node->input_count ? l.node->inputs[i]
                                           : l.node->outputs[i - l.node->input_count];
      if (id < 0 || program->graph->values[id].data) continue;
      f32 = f32 || program->graph->values[id].dtype == KILN_GRAPH_DTYPE_F32;
      f16 = f16 || program->graph->values[id].dtype == KILN_GRAPH_DTYPE_F16;
    }
    if (f32 && f16) {
      return kiln_lower_refuse(&l, "float32 and float16 tensors meet here; compile with "
                               "--precision=f16 to store every float tensor in float16");
    }
  }
  // int8 / uint8 tensors at run time are left only where the integer
  // passes (pass_qoperator.c, pass_qinteger.c) did not rewrite the graph:
  // no float kernel may read their bytes as floats.
  for (size_t i = 0; i < l.node->input_count + l.node->output_count; ++i) {
    int32_t id = i < l.node->input_count ? l.node->inputs[i]
                                         : l.node->outputs[i - l.node->input_count];
    const kiln_graph_value_t* v = id >= 0 ? &program->graph->values[id] : NULL;
    if (v && (v->dtype == KILN_GRAPH_DTYPE_I8 || v->dtype == KILN_GRAPH_DTYPE_U8) &&
        (!v->data || i >= l.node->input_count)) {
      return kiln_lower_int8_refused(&l);
    }
  }
  if (kiln_lower_is_int_passthrough(op) && l.node->output_count > 0 &&
      l.node->outputs[0] >= 0) {
    kiln_graph_dtype_t dtype = program->graph->values[l.node->outputs[0]].dtype;
    if (dtype == KILN_GRAPH_DTYPE_I64 || dtype == KILN_GRAPH_DTYPE_I32) {
      return kiln_lower_int_passthrough(&l);
    }
    if (dtype == KILN_GRAPH_DTYPE_BOOL) return kiln_lower_host_bool_copy(&l);
  }
  for (size_t i = 0; i < kiln_lowering_count(); ++i) {
    const kiln_lowering_t* row = &kLowerings[i];
    if (strcmp(row->op, op) != 0) continue;
    return row->plain ? row->plain(&l) : row->coded(&l, row->code);
  }
  if (kiln_activation_from_name(op) != KILN_ACT_NONE) return kiln_lower_unary(&l);
  char* supported = kiln_lower_supported_list();
  kiln_status_t status = kiln_lower_refuse(
      &l, "supported ops: %s", supported ? supported : "(out of memory listing them)");
  free(supported);
  return status;
}

bool kiln_lower_coopmat_enabled(const kiln_lower_t* l) {
  if (!l->program->cooperative_matrix || !kiln_emit_node_is_f16(l->program)) return false;
  for (size_t t = 0; t < l->program->target_count; ++t) {
    const kiln_kernel_arch_caps_t* caps = &l->program->caps[t];
    if (!caps->cooperative_matrix || !caps->fp16_arithmetic) return false;
  }
  return true;
}
