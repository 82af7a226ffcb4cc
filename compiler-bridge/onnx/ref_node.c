// Constant evaluation of a single node through the op table.
#include "ref_node.h"

#include <string.h>

bool kiln_ref_node_is_constant(const kiln_graph_t* graph,
                               const kiln_graph_node_t* node) {
  if (strcmp(node->op_type, "Shape") == 0) return true;
  for (size_t i = 0; i < node->input_count; ++i) {
    if (node->inputs[i] >= 0 && !graph->values[node->inputs[i]].data) {
      return false;
    }
  }
  return true;
}

kiln_status_t kiln_ref_node_evaluate(kiln_graph_t* graph, int32_t node_id) {
  const kiln_graph_node_t* node = &graph->nodes[node_id];
  const kiln_op_def_t* op = kiln_op_find(node->op_type);
  if (!op) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "node '%s': unknown op %s",
                            node->name, node->op_type);
  }
  kiln_ref_tensor_t inputs[64];
  kiln_ref_tensor_t outputs[64];
  memset(inputs, 0, sizeof(inputs));
  memset(outputs, 0, sizeof(outputs));
  if (node->input_count > 64 || node->output_count > 64) {
    return kiln_make_status(KILN_STATUS_INTERNAL, "node '%s': too many "
                            "operands", node->name);
  }
  for (size_t i = 0; i < node->input_count; ++i) {
    if (node->inputs[i] < 0) continue;
    const kiln_graph_value_t* v = &graph->values[node->inputs[i]];
    inputs[i].dtype = v->dtype;
    inputs[i].shape = v->shape;
    inputs[i].data = v->data;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&v->shape,
                                                        &inputs[i].count));
  }
  kiln_status_t status = kiln_ok_status();
  for (size_t i = 0; i < node->output_count && kiln_status_is_ok(status); ++i) {
    if (node->outputs[i] < 0) continue;
    const kiln_graph_value_t* v = &graph->values[node->outputs[i]];
    outputs[i].dtype = v->dtype;
    outputs[i].shape = v->shape;
    status = kiln_graph_shape_element_count(&v->shape, &outputs[i].count);
    if (kiln_status_is_ok(status)) {
      status = kiln_allocator_calloc_array(
          graph->allocator, outputs[i].count ? outputs[i].count : 1,
          kiln_graph_dtype_size(v->dtype), &outputs[i].data);
    }
  }
  if (kiln_status_is_ok(status)) {
    kiln_op_run_args_t args = {node,    graph->opset,        inputs,
                               node->input_count, outputs, node->output_count,
                               graph->allocator};
    status = op->run(&args);
  }
  for (size_t i = 0; i < node->output_count; ++i) {
    if (kiln_status_is_ok(status) && outputs[i].data) {
      status = kiln_graph_value_set_data(graph, node->outputs[i],
                                         outputs[i].data);
    }
    if (outputs[i].data) kiln_allocator_free(graph->allocator, outputs[i].data);
  }
  return status;
}
