// Attention graphs as exporters write them (Transpose of K, MatMul, Mul by
// a scale, an additive, padding or causal Where mask, Softmax, MatMul, the
// head merge Transpose + Reshape), for the fused-attention tests, and their
// inputs: scores spread for a peaked softmax, masks of 0 / -inf that keep
// every row's first key.
#ifndef KILN_TESTS_ONNX_GPU_ATTENTION_GRAPH_H_
#define KILN_TESTS_ONNX_GPU_ATTENTION_GRAPH_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_tensor.h"

typedef enum { kMaskNone, kMaskAdd, kMaskPadding, kMaskCausal } kiln_mask_t;

typedef struct kiln_attn_case_t {
  int64_t batch, heads, sq, sk, d;
  kiln_mask_t mask;
  size_t dispatches;  // expected on lavapipe (1, or 2 with key chunks)
} kiln_attn_case_t;

// q, k, v [B, H, S, D] (and the mask) -> [B, Sq, H * D] (heads merged);
// shapes inferred.
void kiln_attn_build(const kiln_attn_case_t* c, kiln_graph_t* g);
// Adds node `op` on inputs in[0..n); returns its output value (the node's
// index in *out_node when not NULL). Fails the test (non-fatally) on error.
int32_t kiln_attn_node(kiln_graph_t* g, const char* op, const int32_t* in, size_t n,
                       int32_t* out_node);
// Allocates and fills the graph's inputs (inputs[3]: the mask).
void kiln_attn_fill(kiln_graph_t* g, kiln_graph_tensor_t* inputs, const kiln_attn_case_t* c);

#endif  // KILN_TESTS_ONNX_GPU_ATTENTION_GRAPH_H_
