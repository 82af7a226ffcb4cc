// Helpers shared by the lowering files: refusals, shapes, activations.
#ifndef KILN_COMPILER_ONNX_EMIT_LOWER_UTIL_H_
#define KILN_COMPILER_ONNX_EMIT_LOWER_UTIL_H_

#include "emit_internal.h"

typedef struct kiln_lower_t {
  kiln_emit_program_t* program;
  const kiln_graph_t* graph;
  const kiln_graph_node_t* node;
} kiln_lower_t;

// UNIMPLEMENTED naming node, op type and opset plus the reason.
kiln_status_t kiln_lower_refuse(const kiln_lower_t* l, const char* format, ...)
    __attribute__((format(printf, 2, 3)));

// Input/output values (NULL when absent).
const kiln_graph_value_t* kiln_lower_in(const kiln_lower_t* l, size_t index);
const kiln_graph_value_t* kiln_lower_out(const kiln_lower_t* l, size_t index);
// The range of input/output `index`; refuses non-float runtime tensors.
kiln_status_t kiln_lower_in_range(const kiln_lower_t* l, size_t index,
                                  kiln_emit_range_t* out);
kiln_status_t kiln_lower_out_range(const kiln_lower_t* l, size_t index,
                                   kiln_emit_range_t* out);
uint64_t kiln_lower_count(const kiln_graph_shape_t* shape);
// Product of dims [begin, end).
uint64_t kiln_lower_dims(const kiln_graph_shape_t* shape, int32_t begin,
                         int32_t end);
// Refuses counts that do not fit the kernels' u32 indices.
kiln_status_t kiln_lower_check_u32(const kiln_lower_t* l, uint64_t value);
// Normalizes a possibly negative axis for `rank`.
kiln_status_t kiln_lower_axis(const kiln_lower_t* l, int64_t axis,
                              int32_t rank, int32_t* out_axis);
// Reads a constant int64 input (axes, pads, starts...).
kiln_status_t kiln_lower_const_ints(const kiln_lower_t* l, size_t index,
                                    const int64_t** out_values,
                                    size_t* out_count);

// An activation by ONNX op name with its parameters, as a KILN_ACT_* code.
kiln_status_t kiln_lower_activation(const kiln_lower_t* l, const char* name,
                                    float alpha, float beta, uint32_t* out_code,
                                    float* out_alpha, float* out_beta);

// The NCHW view of an NCL (rank 3) or NCHW shape; false for other ranks.
bool kiln_lower_shape_2d(const kiln_graph_shape_t* shape, kiln_graph_shape_t* out);
// Resolves the node's window over input shape `x` (rank 3 or 4; `w` the
// weight shape or NULL to read kernel_shape) as a 2-D window: a 1-D window
// gets a trivial height. Other ranks are refused.
struct kiln_window_t;
kiln_status_t kiln_lower_window_2d(const kiln_lower_t* l, const kiln_graph_shape_t* x,
                                   const kiln_graph_shape_t* w, bool transpose,
                                   bool allow_ceil, bool allow_dilations,
                                   struct kiln_window_t* out);

// The op -> lowering table (lower_util.c): its ops in order, and the
// supported-op list of the refusal (table ops, then the activation table's),
// malloc'd; NULL when out of memory.
size_t kiln_lowering_count(void);
// Whether the node's lowering takes float tensors at float32 only (the
// lowering table's f32_only, and a Cast from bool): --precision=f16 keeps
// such nodes at float32 between Casts (kiln_graph_precision_f16).
bool kiln_emit_node_runs_f32_only(const kiln_graph_t* graph, const kiln_graph_node_t* node);
const char* kiln_lowering_op(size_t index);
char* kiln_lower_supported_list(void);

// Lowering families.
// The epilogue of a gemm- or conv-family dispatch: its spec ids
// (activation, has_bias, has_residual) and their values.
typedef struct kiln_lower_reduction_t {
  const uint32_t* specs;
  uint32_t activation;
  bool has_bias, has_residual;
} kiln_lower_reduction_t;

// Records `desc` (bindings 0 and 1 the operands, 2 bias, 3 residual, 4
// output; push a kiln_kernel_gemm_params_t for gemm, else a
// kiln_kernel_conv2d_params_t) with epilogue `r`, split into several
// dispatches over parts of the reduction where one would exceed the loop
// budget of kernels_loops.h on a target (lower_split.c).
kiln_status_t kiln_lower_add_reduction(const kiln_lower_t* l,
                                       const kiln_emit_dispatch_desc_t* desc,
                                       const kiln_lower_reduction_t* r);

// The same, first split into blocks (gemm: of m, n and k) where a binding
// exceeds the targets' storage-buffer range (lower_big.c).
kiln_status_t kiln_lower_add_big_reduction(const kiln_lower_t* l,
                                           const kiln_emit_dispatch_desc_t* desc,
                                           const kiln_lower_reduction_t* r);
// Records `desc` (gemm, gemm_small or conv2d_gemm, as for
// kiln_lower_add_reduction) as split-K parts and their sum where its output
// blocks are too few for the targets' compute units (lower_splitk.c);
// *out_done false: not split, nothing recorded.
kiln_status_t kiln_lower_add_split_k(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                     const kiln_lower_reduction_t* r, bool* out_done);
// A LayerNorm (rows x size, `epsilon`) of the split-K gemm lowered just
// before it, as one norm_parts dispatch in place of the gemm's sum and the
// norm (lower_norm_parts.c); *out_done false: nothing recorded.
kiln_status_t kiln_lower_norm_parts(const kiln_lower_t* l, uint64_t rows, uint64_t size,
                                    float epsilon, bool* out_done);
// Records a gather dispatch (push a kiln_kernel_gather_params_t), in parts
// over table rows and indices where a binding exceeds that range.
kiln_status_t kiln_lower_add_gather(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc,
                                    uint32_t index_words);

// A squeeze-and-excitation block's GlobalAveragePool and two 1x1 convs as
// one squeeze_excite dispatch (lower_squeeze_excite.c), recorded at the
// second conv; *out_done true for each of the three nodes (the pool and
// the first conv then record nothing), false (nothing recorded) where the
// node is not in such a chain.
kiln_status_t kiln_lower_squeeze_excite(const kiln_lower_t* l, bool* out_done);

kiln_status_t kiln_lower_conv(const kiln_lower_t* l);
kiln_status_t kiln_lower_gemm(const kiln_lower_t* l);
kiln_status_t kiln_lower_matmul(const kiln_lower_t* l);
kiln_status_t kiln_lower_matmul_nbits(const kiln_lower_t* l);  // lower_qweight.c
kiln_status_t kiln_lower_binary(const kiln_lower_t* l, uint32_t op);
kiln_status_t kiln_lower_unary(const kiln_lower_t* l);
kiln_status_t kiln_lower_copy(const kiln_lower_t* l);
kiln_status_t kiln_lower_transpose(const kiln_lower_t* l);
kiln_status_t kiln_lower_concat(const kiln_lower_t* l);
kiln_status_t kiln_lower_slice(const kiln_lower_t* l);
kiln_status_t kiln_lower_pool(const kiln_lower_t* l, uint32_t op);
kiln_status_t kiln_lower_global_pool(const kiln_lower_t* l, uint32_t op);
kiln_status_t kiln_lower_reduce(const kiln_lower_t* l, uint32_t op);
kiln_status_t kiln_lower_argreduce(const kiln_lower_t* l);
kiln_status_t kiln_lower_softmax(const kiln_lower_t* l, bool log);
kiln_status_t kiln_lower_layer_norm(const kiln_lower_t* l);
kiln_status_t kiln_lower_instance_norm(const kiln_lower_t* l);
kiln_status_t kiln_lower_group_norm(const kiln_lower_t* l);
kiln_status_t kiln_lower_gather(const kiln_lower_t* l);
kiln_status_t kiln_lower_gather_elements(const kiln_lower_t* l);
kiln_status_t kiln_lower_pad(const kiln_lower_t* l);
kiln_status_t kiln_lower_split(const kiln_lower_t* l);
kiln_status_t kiln_lower_expand(const kiln_lower_t* l);
kiln_status_t kiln_lower_tile(const kiln_lower_t* l);
kiln_status_t kiln_lower_variadic(const kiln_lower_t* l, uint32_t op, bool mean);
kiln_status_t kiln_lower_batch_norm(const kiln_lower_t* l);
kiln_status_t kiln_lower_conv_transpose(const kiln_lower_t* l);
kiln_status_t kiln_lower_resize(const kiln_lower_t* l);
kiln_status_t kiln_lower_einsum(const kiln_lower_t* l);
kiln_status_t kiln_lower_space_depth(const kiln_lower_t* l);
kiln_status_t kiln_lower_where(const kiln_lower_t* l);
kiln_status_t kiln_lower_cast(const kiln_lower_t* l);
// TopK, NonZero, NonMaxSuppression, comparisons and logic as host ops
// (lower_host.c); Where on the GPU when its mask is a constant, else on
// the host.
kiln_status_t kiln_lower_host(const kiln_lower_t* l);
kiln_status_t kiln_lower_where_any(const kiln_lower_t* l);
// Reshape-family nodes and Cast to float on run-time bool data (host).
kiln_status_t kiln_lower_host_bool_copy(const kiln_lower_t* l);
kiln_status_t kiln_lower_host_bool_to_float(const kiln_lower_t* l);
// Casts integer value `value_id` (a graph input or a reshape of one) to
// float32 into `out` (one cast_int_to_f32 dispatch).
kiln_status_t kiln_lower_cast_int(const kiln_lower_t* l, int32_t value_id,
                                  const kiln_emit_range_t* out);
kiln_status_t kiln_lower_attention(const kiln_lower_t* l);
kiln_status_t kiln_lower_rnn(const kiln_lower_t* l);  // LSTM, GRU, RNN
// kiln.QuantizeDequantize; the int8 run-time ops' refusal (lower_quant.c).
kiln_status_t kiln_lower_quantize_dequantize(const kiln_lower_t* l);
kiln_status_t kiln_lower_dynamic_quantize_params(const kiln_lower_t* l);
kiln_status_t kiln_lower_int8_refused(const kiln_lower_t* l);

// Integer graph inputs (lower_int.c). Ops that keep an integer input's
// values in order (Reshape, Unsqueeze, Squeeze, Flatten, Identity):
bool kiln_lower_is_int_passthrough(const char* op);

// Whether this node's f16 products may run on tensor cores: the module was
// compiled with --cooperative-matrix (the f16 default), the node computes in
// f16, and every target has cooperative matrix and fp16 arithmetic (a module
// keeps one kernel per dispatch for all its targets).
bool kiln_lower_coopmat_enabled(const kiln_lower_t* l);
// The int64/int32 graph input `value_id` is (a reshape chain of), or -1.
int32_t kiln_lower_int_input_root(const kiln_graph_t* graph, int32_t value_id);
// The input binding behind integer value `value_id` and its words per value
// (2 for int64); refuses integer data that is not rooted in a graph input.
kiln_status_t kiln_lower_int_range(const kiln_lower_t* l, int32_t value_id,
                                   kiln_emit_range_t* out_range, uint32_t* out_words);
// A reshape-family node on integer input data: nothing to emit.
kiln_status_t kiln_lower_int_passthrough(const kiln_lower_t* l);

// One strided_copy over `shape` (rank <= 6, right-aligned into the kernel's
// 6 dimensions), with element offsets into the input and output ranges.
kiln_status_t kiln_lower_strided_copy(const kiln_lower_t* l,
                                      const kiln_emit_range_t* in,
                                      const kiln_emit_range_t* out,
                                      const kiln_graph_shape_t* shape,
                                      const int64_t* in_strides,
                                      const int64_t* out_strides,
                                      int64_t in_offset, int64_t out_offset);

// Records a binary dispatch (push a kiln_kernel_binary_params_t), in blocks
// of its outermost dimension where a binding exceeds that range.
kiln_status_t kiln_lower_add_binary(const kiln_lower_t* l, const kiln_emit_dispatch_desc_t* desc);
// Records `desc`, a kernel whose push constants start with a u32 count of
// values and whose bindings all hold `count` dense values (unary, copy), as
// tiles over offsets where a binding exceeds the storage-buffer range.
kiln_status_t kiln_emit_add_tiled(kiln_emit_program_t* program,
                                  const kiln_emit_dispatch_desc_t* desc);
// out = a op b (a KILN_BINARY_* op) with a, b broadcast to out (rank <= 6).
kiln_status_t kiln_lower_binary_ranges(const kiln_lower_t* l, uint32_t op,
                                       const kiln_emit_range_t* a,
                                       const kiln_graph_shape_t* a_shape,
                                       const kiln_emit_range_t* b,
                                       const kiln_graph_shape_t* b_shape,
                                       const kiln_emit_range_t* out,
                                       const kiln_graph_shape_t* out_shape);
// Copies `in` (shape x) broadcast to shape y into `out` (Expand).
kiln_status_t kiln_lower_broadcast_copy(const kiln_lower_t* l, const kiln_emit_range_t* in,
                                        const kiln_graph_shape_t* x,
                                        const kiln_emit_range_t* out,
                                        const kiln_graph_shape_t* y);

// Records a plain copy of `count` values from `in` to `out`: 32-bit words
// at F32, halves at F16 (NODE: the node's float storage).
kiln_status_t kiln_lower_emit_copy(kiln_emit_program_t* program,
                                   const kiln_emit_range_t* in,
                                   const kiln_emit_range_t* out,
                                   uint64_t count, kiln_emit_storage_t storage);

#endif  // KILN_COMPILER_ONNX_EMIT_LOWER_UTIL_H_
