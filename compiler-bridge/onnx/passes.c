// The default pass pipeline; shape inference runs again at the end to
// re-validate the rewritten graph (fused epilogues included).
#include "kiln/compiler/graph_passes.h"

kiln_status_t kiln_graph_run_default_passes(kiln_graph_t* graph) {
  KILN_RETURN_IF_ERROR(kiln_graph_remove_identities(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_qdq_fold_weight_dequantize(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fold_constants(graph));
  // Again for parameters that folding just made constant.
  KILN_RETURN_IF_ERROR(kiln_graph_qdq_fold_weight_dequantize(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fuse_qdq(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_lower_qoperator(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_unroll_rnns(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_remove_identities(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fold_batch_norm(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fuse_attention(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fuse_gelu(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fuse_silu(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fuse_epilogues(graph));
  KILN_RETURN_IF_ERROR(kiln_graph_fuse_residual_norm(graph));
  kiln_graph_remove_dead_nodes(graph);
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_graph_infer_shapes(graph),
                                "re-checking %s after passes", graph->source);
  return kiln_ok_status();
}
