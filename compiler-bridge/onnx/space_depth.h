// DepthToSpace / SpaceToDepth as one 6-D strided copy: the iteration
// shape walks the output densely, `in_strides` say where each element comes
// from. Shared by the reference (ops_space_depth.c) and the GPU lowering.
#ifndef KILN_COMPILER_BRIDGE_ONNX_SPACE_DEPTH_H_
#define KILN_COMPILER_BRIDGE_ONNX_SPACE_DEPTH_H_

#include <stdbool.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"

typedef struct kiln_space_depth_plan_t {
  kiln_graph_shape_t shape;  // rank 6, the output in block-split order
  int64_t in_strides[6];
} kiln_space_depth_plan_t;

// `x` is NCHW; `crd` selects DepthToSpace's CRD mode (else DCR).
void kiln_space_depth_plan(const kiln_graph_shape_t* x, int64_t block, bool to_space, bool crd,
                           kiln_space_depth_plan_t* out);

#endif  // KILN_COMPILER_BRIDGE_ONNX_SPACE_DEPTH_H_
