// Runs one node of a graph on constant inputs (for inference-time and
// folding-time evaluation) and stores its outputs as constants.
#ifndef KILN_COMPILER_BRIDGE_ONNX_REF_NODE_H_
#define KILN_COMPILER_BRIDGE_ONNX_REF_NODE_H_

#include "ops.h"

// True when every present input of the node has constant data (Shape only
// needs its input's shape).
bool kiln_ref_node_is_constant(const kiln_graph_t* graph,
                               const kiln_graph_node_t* node);
kiln_status_t kiln_ref_node_evaluate(kiln_graph_t* graph, int32_t node_id);

#endif  // KILN_COMPILER_BRIDGE_ONNX_REF_NODE_H_
