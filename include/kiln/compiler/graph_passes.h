// Passes over the graph IR. Each keeps the graph's meaning (the reference
// executor gives the same outputs before and after, within float rounding).
#ifndef KILN_COMPILER_GRAPH_PASSES_H_
#define KILN_COMPILER_GRAPH_PASSES_H_

#include "kiln/compiler/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

// Checks every live node against the supported op set (op type, opset,
// attributes, dtypes) and computes every value's dtype and static shape.
// An unsupported node fails with UNIMPLEMENTED naming node, op type, opset
// and what is supported.
kiln_status_t kiln_graph_infer_shapes(kiln_graph_t* graph);

// Evaluates nodes whose inputs are all constant (the Shape/Gather/Concat/
// Reshape chains exporters emit) and replaces them by constants.
kiln_status_t kiln_graph_fold_constants(kiln_graph_t* graph);

// Unrolls LSTM/GRU/RNN nodes with constant weights into per-step MatMul,
// Slice, activation and elementwise nodes (what the GPU lowers).
kiln_status_t kiln_graph_unroll_rnns(kiln_graph_t* graph);

// Drops Identity and inference-mode Dropout nodes.
kiln_status_t kiln_graph_remove_identities(kiln_graph_t* graph);

// Folds BatchNormalization into the producing Conv's weights and bias.
kiln_status_t kiln_graph_fold_batch_norm(kiln_graph_t* graph);

// Fuses bias Add, activations and a residual Add into the producing Conv,
// Gemm or MatMul. The epilogue is recorded as attributes on that node:
//   kiln.bias (int: index of the appended bias input, MatMul only),
//   kiln.residual (int: index of the appended residual input; added before
//     the activation when kiln.residual_first=1, else after;
//     kiln.residual_flat=1: a residual of the output's element count read
//     in its element order, whatever its shape: an Add reached through view
//     nodes, e.g. ViT's out-projection -> Reshape -> Transpose -> Add),
//   kiln.activation (string: Relu, Clip, LeakyRelu, Sigmoid, HardSigmoid,
//     HardSwish, Tanh, Elu, Softplus, Gelu, kiln.Silu, ...: the fusable
//     ones of activation.c's table), kiln.activation_alpha/beta
//     (floats: Clip min/max, LeakyRelu/Elu alpha, HardSigmoid alpha/beta).
// Order applied: op, bias, then residual and activation as described.
kiln_status_t kiln_graph_fuse_epilogues(kiln_graph_t* graph);
// MatMul-scale-mask-Softmax-MatMul attention (and the head split/merge
// views around it) -> one kiln.Attention node (compiler-bridge/onnx/attention.h).
kiln_status_t kiln_graph_fuse_attention(kiln_graph_t* graph);
// 0.5 * x * (1 + erf(x / sqrt 2)) as exporters write it -> one Gelu node.
kiln_status_t kiln_graph_fuse_gelu(kiln_graph_t* graph);
// Mul(x, Sigmoid(x)), the Sigmoid read by the Mul alone -> one kiln.Silu
// node (an activation the epilogue pass then fuses).
kiln_status_t kiln_graph_fuse_silu(kiln_graph_t* graph);
// Add -> LayerNormalization (the sum read only by the norm): the norm takes
// the second addend as input 3 with kiln.residual=3.
kiln_status_t kiln_graph_fuse_residual_norm(kiln_graph_t* graph);

// DequantizeLinear on constant inputs (int8 weights, int32 biases) folded
// to fp32 constants: the swap point for in-kernel weight dequantization.
kiln_status_t kiln_graph_qdq_fold_weight_dequantize(kiln_graph_t* graph);
// DequantizeLinear(QuantizeLinear(x)) with equal constant parameters -> one
// fp32 kiln.QuantizeDequantize node (exactly the pair's arithmetic).
kiln_status_t kiln_graph_fuse_qdq(kiln_graph_t* graph);
// QOperator graphs (QuantizeLinear, QLinearConv, QLinearMatMul,
// DequantizeLinear with constant parameters): int8 values carried as fp32
// integer values, QLinear ops as Sub + Conv/MatMul + kiln.Requantize, where
// the fp32 sums are provably exact (pass_qoperator.c); else unchanged.
kiln_status_t kiln_graph_lower_qoperator(kiln_graph_t* graph);

// Marks nodes and values no graph output depends on as removed.
void kiln_graph_remove_dead_nodes(kiln_graph_t* graph);

// Precision (pass_precision.c, docs/precision.md). At import, before shape
// inference: float16 constants -> float32, Cast to float16 -> Cast to float,
// float16 inputs and outputs (outputs marked F16 by the importer) joined to
// the float32 graph by Casts.
kiln_status_t kiln_graph_widen_f16(kiln_graph_t* graph);
// Whether a graph input or output is float16 (an fp16 model).
bool kiln_graph_has_f16_io(const kiln_graph_t* graph);
// After the passes: float32 run-time values -> float16, with Casts from
// float32 inputs and to float32 outputs; constants keep their float32 data.
// Nodes for which `keep_f32` (may be NULL) returns true keep float32
// tensors: Casts to float32 before them and to float16 after them.
typedef bool (*kiln_graph_node_predicate_t)(const kiln_graph_t* graph,
                                            const kiln_graph_node_t* node);
kiln_status_t kiln_graph_precision_f16(kiln_graph_t* graph, kiln_graph_node_predicate_t keep_f32);

// Runs the standard pipeline: identities, constant folding, batch-norm
// folding, epilogue fusion, dead-node removal.
kiln_status_t kiln_graph_run_default_passes(kiln_graph_t* graph);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_GRAPH_PASSES_H_
