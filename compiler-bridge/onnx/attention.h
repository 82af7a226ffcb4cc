// The fused attention node `kiln.Attention` that pass_fuse_attention.c
// writes (not an ONNX op): O = softmax(scale * Q K^T + mask) V over
// (batch, head) pairs, each tensor read or written through a view of a
// graph value. Inputs: 0 Q, 1 K, 2 V, 3 mask (optional). Attributes (ints
// unless said):
//   kiln.dims     [batch, heads, sq, sk, d, dv]
//   kiln.q_view, kiln.k_view, kiln.v_view, kiln.out_view
//                 [offset, batch stride, head stride, row stride] in
//                 elements; the last dim (d or dv) is contiguous
//   kiln.mask_view [batch, head, query, key strides] (0 broadcasts)
//   kiln.mask     KILN_ATTN_MASK_* (kernels_codes.h)
//   kiln.causal   1: key j > query i is masked
//   kiln.scale    float
//   kiln.out_shape the output value's shape (its elements in out_view order
//                 form a dense permutation of it)
// Shared by the checker/reference (ops_attention.c) and the GPU lowering.
#ifndef KILN_COMPILER_BRIDGE_ONNX_ATTENTION_H_
#define KILN_COMPILER_BRIDGE_ONNX_ATTENTION_H_

#include <stdbool.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"

#define KILN_ATTENTION_OP "kiln.Attention"

typedef struct kiln_attention_t {
  int64_t batch, heads, sq, sk, d, dv;
  int64_t q[4], k[4], v[4], out[4];  // offset, batch, head, row strides
  int64_t mask[4];                   // batch, head, query, key strides
  int64_t mask_kind;
  bool causal;
  float scale;
  int64_t out_shape[KILN_GRAPH_MAX_RANK];
  int32_t out_rank;
} kiln_attention_t;

// Reads the attributes (no bounds checks: kiln_attention_check does them).
kiln_status_t kiln_attention_read(const kiln_graph_node_t* node, kiln_attention_t* out);

#endif  // KILN_COMPILER_BRIDGE_ONNX_ATTENTION_H_
