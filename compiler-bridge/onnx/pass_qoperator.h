// The integer-carrier passes: pass_qoperator.c (QOperator graphs) and
// pass_qinteger.c (dynamic quantization), which share the carrier (int8 /
// uint8 / int32 values as fp32 tensors of their integer values) and these
// helpers.
#ifndef KILN_COMPILER_BRIDGE_ONNX_PASS_QOPERATOR_H_
#define KILN_COMPILER_BRIDGE_ONNX_PASS_QOPERATOR_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"

// A run-time int8 / uint8 value, or an int32 sum of MatMulInteger /
// ConvInteger: what the carrier holds.
bool kiln_qop_is_integer(const kiln_graph_t* g, int32_t id);
// Whether input `i` of `n` is present and constant.
bool kiln_qop_const(const kiln_graph_t* g, const kiln_graph_node_t* n, size_t i);
// Element count of a value (0 when unknown).
size_t kiln_qop_count(const kiln_graph_value_t* v);
// Integer value i of optional constant input `index` (0 when absent; a
// one-element input gives its value for every i).
int32_t kiln_qop_int(const kiln_graph_t* g, const kiln_graph_node_t* n, size_t index,
                     size_t i);
// Float constant of `count` values with `shape` (rank 0 or 1 when NULL).
kiln_status_t kiln_qop_constant(kiln_graph_t* g, const float* values, size_t count,
                                const kiln_graph_shape_t* shape, int32_t* out);

// pass_qinteger.c: an int32 sum of MatMulInteger / ConvInteger.
bool kiln_qint_is_sum(const kiln_graph_t* g, int32_t id);
// Whether node `n` (which touches an integer value) can be carried:
// DynamicQuantizeLinear, MatMulInteger / ConvInteger with constant weights
// whose sums stay exact, Cast to float, the movement ops.
bool kiln_qint_eligible(const kiln_graph_t* g, const kiln_graph_node_t* n);
// Rewrites node `id` when it is one of pass_qinteger.c's ops (new nodes in
// its place); *out_rewritten says whether it was.
kiln_status_t kiln_qint_rewrite(kiln_graph_t* g, int32_t id, bool* out_rewritten);

#endif  // KILN_COMPILER_BRIDGE_ONNX_PASS_QOPERATOR_H_
