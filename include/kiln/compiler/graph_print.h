// Human-readable dump of a graph (for --print-graph and debugging): one line
// per live node with its inputs, outputs (dtype and shape) and attributes,
// fused epilogues included.
#ifndef KILN_COMPILER_GRAPH_PRINT_H_
#define KILN_COMPILER_GRAPH_PRINT_H_

#include <stdio.h>

#include "kiln/compiler/graph.h"

#ifdef __cplusplus
extern "C" {
#endif

void kiln_graph_print(const kiln_graph_t* graph, FILE* stream);

#ifdef __cplusplus
}
#endif

#endif  // KILN_COMPILER_GRAPH_PRINT_H_
