// The op table shared by shape inference, constant folding and the reference
// executor: per op, the attributes it accepts, a checker/shape function and a
// plain C float32 (and index-dtype) implementation. Not a public header.
#ifndef KILN_COMPILER_BRIDGE_ONNX_OPS_H_
#define KILN_COMPILER_BRIDGE_ONNX_OPS_H_

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/kernels_codes.h"

typedef struct kiln_ref_tensor_t {
  kiln_graph_dtype_t dtype;
  kiln_graph_shape_t shape;
  void* data;  // NULL for an absent optional input/output
  size_t count;
} kiln_ref_tensor_t;

typedef struct kiln_op_infer_args_t {
  kiln_graph_t* graph;
  kiln_graph_node_t* node;
} kiln_op_infer_args_t;

typedef struct kiln_op_run_args_t {
  const kiln_graph_node_t* node;
  int64_t opset;
  const kiln_ref_tensor_t* inputs;
  size_t input_count;
  kiln_ref_tensor_t* outputs;
  size_t output_count;
  kiln_allocator_t allocator;  // for scratch memory
} kiln_op_run_args_t;

typedef kiln_status_t (*kiln_op_infer_fn_t)(const kiln_op_infer_args_t* args);
typedef kiln_status_t (*kiln_op_run_fn_t)(const kiln_op_run_args_t* args);

typedef struct kiln_op_def_t {
  const char* op_type;
  const char* attrs;  // accepted attribute names, comma separated
  int min_inputs, max_inputs;
  int min_outputs, max_outputs;
  kiln_op_infer_fn_t infer;
  kiln_op_run_fn_t run;
  int min_opset;  // 0: any accepted opset
} kiln_op_def_t;

const kiln_op_def_t* kiln_op_find(const char* op_type);
// The table's ops in family order (kiln_op_at: NULL past the end).
size_t kiln_op_count(void);
const kiln_op_def_t* kiln_op_at(size_t index);
// Every op of the table, "Abs, Add, ..." (sorted, case-insensitive), built
// from the table; malloc'd (the caller frees), NULL when out of memory.
char* kiln_op_supported_list(void);
// vsnprintf into a malloc'd string of the full length (NULL on failure).
char* kiln_op_format_alloc_v(const char* format, va_list list);

// Unsupported-feature error naming node, op type and opset.
kiln_status_t kiln_op_unsupported(const kiln_op_infer_args_t* args,
                                  const char* format, ...)
    KILN_PRINTF_LIKE(2, 3);
// Invalid-model error with the same prefix.
kiln_status_t kiln_op_invalid(const kiln_op_infer_args_t* args,
                              const char* format, ...) KILN_PRINTF_LIKE(2, 3);

// Input `index` (NULL when absent).
const kiln_graph_value_t* kiln_op_input(const kiln_op_infer_args_t* args,
                                        size_t index);
// Requires input `index` to be present with one of the dtypes in `mask`
// (bit (1 << dtype)).
kiln_status_t kiln_op_require_input(const kiln_op_infer_args_t* args,
                                    size_t index, unsigned dtype_mask,
                                    const kiln_graph_value_t** out_value);
#define KILN_OP_F32 (1u << KILN_GRAPH_DTYPE_F32)
#define KILN_OP_I64 (1u << KILN_GRAPH_DTYPE_I64)
#define KILN_OP_I32 (1u << KILN_GRAPH_DTYPE_I32)
#define KILN_OP_BOOL (1u << KILN_GRAPH_DTYPE_BOOL)
#define KILN_OP_I8 (1u << KILN_GRAPH_DTYPE_I8)
#define KILN_OP_U8 (1u << KILN_GRAPH_DTYPE_U8)
#define KILN_OP_QUANT (KILN_OP_I8 | KILN_OP_U8)
#define KILN_OP_INDEX (KILN_OP_I64 | KILN_OP_I32)
#define KILN_OP_NUMERIC (KILN_OP_F32 | KILN_OP_I64 | KILN_OP_I32)
#define KILN_OP_ANY (KILN_OP_NUMERIC | KILN_OP_BOOL)

// Sets output `index`'s dtype and shape (ignored when the output is unused).
kiln_status_t kiln_op_set_output(const kiln_op_infer_args_t* args,
                                 size_t index, kiln_graph_dtype_t dtype,
                                 const kiln_graph_shape_t* shape);
// Reads a constant 1-D (or scalar) index input into `values` (at most
// `capacity`); fails (unsupported) when the input is not a constant.
kiln_status_t kiln_op_constant_ints(const kiln_op_infer_args_t* args,
                                    size_t index, int64_t* values,
                                    size_t capacity, size_t* out_count);
// Normalizes a possibly negative axis against `rank`.
kiln_status_t kiln_op_axis(const kiln_op_infer_args_t* args, int64_t axis,
                           int32_t rank, int32_t* out_axis);
// A string attribute restricted to `choices` (NULL-terminated).
kiln_status_t kiln_op_attr_choice(const kiln_op_infer_args_t* args,
                                  const char* name, const char* fallback,
                                  const char* const* choices,
                                  const char** out_value);
// Numpy-style broadcast of two shapes.
kiln_status_t kiln_op_broadcast(const kiln_op_infer_args_t* args,
                                const kiln_graph_shape_t* a,
                                const kiln_graph_shape_t* b,
                                kiln_graph_shape_t* out_shape);

// MatMul's output shape (numpy: 1-D promotion, broadcast batch dims) for
// any operand dtypes (MatMul, MatMulInteger, QLinearMatMul).
kiln_status_t kiln_op_matmul_shape(const kiln_op_infer_args_t* args,
                                   const kiln_graph_value_t* a,
                                   const kiln_graph_value_t* b,
                                   kiln_graph_shape_t* out_shape);

// KILN_QUANT_* computed by a kiln.Quantize / Dequantize / Requantize /
// QuantizeDequantize node (ops_quant.c).
int kiln_quant_mode(const char* op_type);

// Newer op versions rewritten into the forms kiln handles (ops_versions.c).
// Replaces input `index` with a new 1-D constant of `count` values; this may
// move graph->values, so callers re-read value pointers afterwards.
kiln_status_t kiln_op_replace_input(const kiln_op_infer_args_t* args,
                                    size_t index, kiln_graph_dtype_t dtype,
                                    const void* data, size_t count);
void kiln_op_drop_attr(const kiln_op_infer_args_t* args, const char* name);
// Normalizes `count` axes against `rank`, refusing repeats.
kiln_status_t kiln_op_axes_list(const kiln_op_infer_args_t* args,
                                const int64_t* axes, size_t count,
                                int32_t rank, int32_t* out_axes);
// Pad-18 axes -> full pads; Resize-18 axes -> full scales/sizes (and the
// antialias / keep_aspect_ratio_policy checks).
kiln_status_t kiln_op_expand_pad_axes(const kiln_op_infer_args_t* args);
kiln_status_t kiln_op_resize_v18(const kiln_op_infer_args_t* args);
// Clip-6 min/max, Pad-2 pads/value, Slice-1 starts/ends/axes attributes ->
// the inputs of the later versions (no-ops from those opsets on; the
// attributes are refused there).
kiln_status_t kiln_op_clip_v6(const kiln_op_infer_args_t* args);
kiln_status_t kiln_op_pad_v2(const kiln_op_infer_args_t* args);
kiln_status_t kiln_op_slice_v1(const kiln_op_infer_args_t* args);

// Run-time helpers.
int64_t kiln_ref_index_at(const kiln_ref_tensor_t* tensor, size_t i);
// Strides (in elements) of `shape` aligned right against `out_rank`, with 0
// where the input broadcasts.
void kiln_ref_broadcast_strides(const kiln_graph_shape_t* shape,
                                const kiln_graph_shape_t* out_shape,
                                int64_t* strides);
void kiln_ref_contiguous_strides(const kiln_graph_shape_t* shape,
                                 int64_t* strides);

// Conv/Gemm/MatMul epilogues recorded by the fusion pass.
kiln_status_t kiln_op_check_epilogue(const kiln_op_infer_args_t* args);
void kiln_ref_apply_epilogue(const kiln_op_run_args_t* args);
// Activations shared by the standalone ops and fused epilogues.
// A KILN_ACT_* code (kiln/compiler/kernels_codes.h): the one activation
// vocabulary of the reference, the fusion pass and the GPU kernels. alpha and
// beta: Clip min/max, LeakyRelu/Elu alpha, HardSigmoid alpha/beta, Gelu
// alpha = 1 for the tanh approximation.
typedef uint32_t kiln_activation_t;
// Activation named like its ONNX op (Relu ... Reciprocal); KILN_ACT_NONE when
// not an activation.
kiln_activation_t kiln_activation_from_name(const char* name);
// The table's op names in order; NULL past the end.
const char* kiln_activation_name(size_t index);
// alpha/beta of an activation node from its attributes (LeakyRelu, Elu,
// HardSigmoid, Gelu's approximate); 0 for the others. Clip's bounds are
// inputs: its callers read them.
kiln_status_t kiln_activation_attrs(const kiln_graph_node_t* node,
                                    kiln_activation_t code, float* out_alpha,
                                    float* out_beta);
// Whether a conv/gemm epilogue may carry it (kiln.activation).
bool kiln_activation_fusable(kiln_activation_t code);
float kiln_ref_activation(kiln_activation_t kind, float alpha, float beta,
                          float x);

// Op families.
extern const kiln_op_def_t kiln_ops_elementwise[];
extern const kiln_op_def_t kiln_ops_shape[];
extern const kiln_op_def_t kiln_ops_copy[];
extern const kiln_op_def_t kiln_ops_logic[];
extern const kiln_op_def_t kiln_ops_conv[];
extern const kiln_op_def_t kiln_ops_pool[];
extern const kiln_op_def_t kiln_ops_matmul[];
extern const kiln_op_def_t kiln_ops_matmul_nbits[];
extern const kiln_op_def_t kiln_ops_norm[];
extern const kiln_op_def_t kiln_ops_reduce[];
extern const kiln_op_def_t kiln_ops_resize[];
extern const kiln_op_def_t kiln_ops_scatter[];
extern const kiln_op_def_t kiln_ops_cumsum[];
extern const kiln_op_def_t kiln_ops_einsum[];
extern const kiln_op_def_t kiln_ops_rnn[];
extern const kiln_op_def_t kiln_ops_space_depth[];
extern const kiln_op_def_t kiln_ops_trilu[];
extern const kiln_op_def_t kiln_ops_attention[];
extern const kiln_op_def_t kiln_ops_arg[];
extern const kiln_op_def_t kiln_ops_versions[];
extern const kiln_op_def_t kiln_ops_quant[];
extern const kiln_op_def_t kiln_ops_host[];

#endif  // KILN_COMPILER_BRIDGE_ONNX_OPS_H_
