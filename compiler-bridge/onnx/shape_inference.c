// The shape inference pass: checks each node against the op table (op type,
// operand counts, attribute names and types) and computes output dtypes and
// static shapes. Small constant subgraphs (exporters' shape arithmetic) are
// evaluated on the way, because later shapes depend on their values.
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/graph_passes.h"
#include "ref_node.h"

// Constant outputs up to this size are computed during inference.
#define KILN_INFER_FOLD_LIMIT_BYTES (1u << 20)

static bool kiln_attr_listed(const char* list, const char* name) {
  size_t length = strlen(name);
  for (const char* p = list; *p;) {
    const char* comma = strchr(p, ',');
    size_t item = comma ? (size_t)(comma - p) : strlen(p);
    if (item == length && strncmp(p, name, length) == 0) return true;
    if (!comma) break;
    p = comma + 1;
  }
  return false;
}

static kiln_status_t kiln_infer_node(kiln_graph_t* graph, int32_t node_id) {
  kiln_graph_node_t* node = &graph->nodes[node_id];
  kiln_op_infer_args_t args = {graph, node};
  const kiln_op_def_t* op = kiln_op_find(node->op_type);
  if (!op) {
    char* supported = kiln_op_supported_list();
    kiln_status_t status = kiln_op_unsupported(
        &args, "op %s is not supported; supported ops: %s", node->op_type,
        supported ? supported : "(out of memory listing them)");
    free(supported);
    return status;
  }
  if (graph->opset < op->min_opset) {
    return kiln_op_unsupported(&args, "%s needs opset %d or later here (its "
                               "older form is not supported)",
                               node->op_type, op->min_opset);
  }
  if (node->input_count < (size_t)op->min_inputs ||
      node->input_count > (size_t)op->max_inputs) {
    return kiln_op_invalid(&args, "%zu inputs; expected %d to %d",
                           node->input_count, op->min_inputs, op->max_inputs);
  }
  size_t used_outputs = 0;
  for (size_t i = 0; i < node->output_count; ++i) {
    if (node->outputs[i] >= 0) used_outputs = i + 1;
  }
  if (used_outputs > (size_t)op->max_outputs ||
      node->output_count < (size_t)op->min_outputs) {
    return kiln_op_unsupported(&args, "%zu outputs; supported: %d to %d",
                               node->output_count, op->min_outputs,
                               op->max_outputs);
  }
  for (size_t i = 0; i < node->attr_count; ++i) {
    const kiln_graph_attr_t* attr = &node->attrs[i];
    if (!kiln_attr_listed(op->attrs, attr->name)) {
      return kiln_op_unsupported(&args, "attribute '%s' is not supported; "
                                 "supported attributes: %s", attr->name,
                                 op->attrs[0] ? op->attrs : "(none)");
    }
    if (attr->type == KILN_GRAPH_ATTR_OTHER) {
      return kiln_op_unsupported(&args, "attribute '%s' has an unsupported "
                                 "type (graphs, sparse tensors, lists of "
                                 "strings/tensors)", attr->name);
    }
  }
  for (size_t i = 0; i < node->input_count; ++i) {
    const kiln_graph_value_t* v = kiln_graph_node_input(graph, node, i);
    if (v && (!v->has_shape || v->dtype == KILN_GRAPH_DTYPE_INVALID)) {
      return kiln_op_invalid(&args, "input %zu ('%s') has no known type/shape",
                             i, v->name);
    }
  }
  KILN_RETURN_IF_ERROR(op->infer(&args));
  node = &graph->nodes[node_id];
  bool small = true;
  for (size_t i = 0; i < node->output_count; ++i) {
    if (node->outputs[i] < 0) continue;
    const kiln_graph_value_t* v = &graph->values[node->outputs[i]];
    if (!v->has_shape) {
      return kiln_op_invalid(&args, "output %zu has no inferred shape", i);
    }
    size_t bytes = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_value_byte_size(v, &bytes));
    if (bytes > KILN_INFER_FOLD_LIMIT_BYTES || v->data) small = false;
  }
  if (small && kiln_ref_node_is_constant(graph, node)) {
    KILN_RETURN_IF_ERROR_ANNOTATE(kiln_ref_node_evaluate(graph, node_id),
                                  "evaluating constant node '%s'",
                                  graph->nodes[node_id].name);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_graph_infer_shapes(kiln_graph_t* graph) {
  for (size_t n = 0; n < graph->node_count; ++n) {
    if (graph->nodes[n].removed) continue;
    KILN_RETURN_IF_ERROR(kiln_infer_node(graph, (int32_t)n));
  }
  for (size_t i = 0; i < graph->output_count; ++i) {
    const kiln_graph_value_t* v = &graph->values[graph->outputs[i]];
    if (!v->has_shape || v->dtype == KILN_GRAPH_DTYPE_INVALID) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "graph output '%s' has no inferred shape",
                              v->name);
    }
  }
  return kiln_ok_status();
}
