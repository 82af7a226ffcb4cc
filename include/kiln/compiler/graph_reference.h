// The plain C reference executor of the graph IR: float32 (plus index
// dtypes for shape arithmetic), straightforward loops, ONNX semantics. It is
// the independent reference the GPU path is checked against, and it checks
// every pass (run before/after, compare).
#ifndef KILN_COMPILER_GRAPH_REFERENCE_H_
#define KILN_COMPILER_GRAPH_REFERENCE_H_

#include "kiln/compiler/graph.h"
#include "kiln/compiler/graph_memory_plan.h"
#include "kiln/compiler/graph_tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

// Runs the graph on `inputs` (one per graph->inputs entry, same dtype and
// shape) and fills `outputs` (graph->output_count tensors, allocated here;
// the caller deinits them). With a memory plan, every intermediate lives at
// its planned offset in one transient buffer, so a wrong plan shows up as
// wrong results.
kiln_status_t kiln_graph_reference_run(const kiln_graph_t* graph,
                                       const kiln_graph_tensor_t* inputs,
                                       size_t input_count,
                                       const kiln_graph_memory_plan_t* plan,
                                       kiln_allocator_t allocator,
                                       kiln_graph_tensor_t* outputs);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_GRAPH_REFERENCE_H_
