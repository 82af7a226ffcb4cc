// Memory planning: intermediate tensors (produced by a node, neither graph
// inputs, outputs nor constants) get offsets in one transient buffer so that
// tensors alive at the same time never overlap.
#ifndef KILN_COMPILER_GRAPH_MEMORY_PLAN_H_
#define KILN_COMPILER_GRAPH_MEMORY_PLAN_H_

#include <stdio.h>

#include "kiln/compiler/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_GRAPH_NOT_PLANNED SIZE_MAX

typedef struct kiln_graph_memory_plan_t {
  kiln_allocator_t allocator;
  size_t alignment;
  size_t value_count;
  size_t* offsets;    // per value; KILN_GRAPH_NOT_PLANNED when not planned
  size_t* sizes;      // per value, bytes (0 when not planned)
  int32_t* first_use; // node index (or level) that defines the value
  int32_t* last_use;  // last node index (or highest level) that reads it
  int32_t* view_of;   // per value: the value whose place it shares (a view
                      // node's input), or -1
  bool by_level;      // lifetimes in dependency levels, not node indices
  int32_t* node_levels;  // by_level: per node, its level (-1: removed)
  int32_t max_level;     // by_level: the highest node level
  size_t planned_count;
  size_t view_count;   // planned values placed as views of another
  size_t peak_bytes;   // size of the transient buffer
  size_t total_bytes;  // sum of all planned intermediates (aligned)
} kiln_graph_memory_plan_t;

// `alignment` is a power of two (e.g. 256 for GPU storage buffers).
kiln_status_t kiln_graph_memory_plan_build(const kiln_graph_t* graph,
                                           size_t alignment,
                                           kiln_allocator_t allocator,
                                           kiln_graph_memory_plan_t* out_plan);
// The same with lifetimes counted in dependency levels (a node's level is
// one more than the highest level among its inputs' producers): values of
// independent branches at the same level never share memory, so their
// nodes can run without barriers between them. Valid only when nodes run
// level by level (node_levels; the GPU emitter lowers them in that order),
// not in node order.
kiln_status_t kiln_graph_memory_plan_build_by_level(const kiln_graph_t* graph,
                                                    size_t alignment,
                                                    kiln_allocator_t allocator,
                                                    kiln_graph_memory_plan_t* out_plan);
void kiln_graph_memory_plan_deinit(kiln_graph_memory_plan_t* plan);
// Checks that no two values alive at the same node overlap (an independent
// check of the planner, used by tests).
kiln_status_t kiln_graph_memory_plan_verify(const kiln_graph_t* graph,
                                            const kiln_graph_memory_plan_t* plan);
// The --print-memory-plan report: one line per planned value (offset, size,
// lifetime) and a summary with peak bytes vs the sum of all intermediates.
void kiln_graph_memory_plan_print(const kiln_graph_t* graph,
                                  const kiln_graph_memory_plan_t* plan,
                                  FILE* stream);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_GRAPH_MEMORY_PLAN_H_
