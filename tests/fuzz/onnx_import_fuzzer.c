// libFuzzer target for the ONNX front end: arbitrary bytes as a model file
// (protobuf-c decode, graph import with shape inference and op checks),
// then the default passes (constant folding evaluates untrusted constants)
// and the memory plan, checked by its independent verifier. External data
// is refused (no path), so nothing is read from disk.
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kiln/compiler/graph_memory_plan.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/onnx.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln_graph_t graph;
  kiln_status_t status = kiln_onnx_import_bytes(data, size, NULL, NULL,
                                                kiln_allocator_system(), &graph);
  if (status) {
    kiln_status_free(status);
    return 0;
  }
  status = kiln_graph_run_default_passes(&graph);
  if (!status) {
    kiln_graph_memory_plan_t plan;
    status = kiln_graph_memory_plan_build(&graph, 256, kiln_allocator_system(), &plan);
    if (!status) {
      // A plan the planner accepted must never overlap live values.
      kiln_status_t verified = kiln_graph_memory_plan_verify(&graph, &plan);
      if (verified) abort();
      kiln_graph_memory_plan_deinit(&plan);
    }
  }
  kiln_status_free(status);
  kiln_graph_deinitialize(&graph);
  return 0;
}
