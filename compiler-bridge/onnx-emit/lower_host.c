// Nodes the GPU path does not take, lowered to host ops between GPU
// segments (kiln_emit_host_op_t; the module calls the "cpu" native module,
// kiln/modules/cpu_ops_module.h): TopK (no GPU kernel yet), NonZero and
// NonMaxSuppression (data-dependent output shapes). A data-dependent output
// is placed at its static upper bound; the op returns the real count and
// the module returns the output with that count as its shape, so such an
// output must be a graph output that no node reads (anything else is
// refused naming both nodes). docs/partitioning.md has the costs.
#include <string.h>

#include "lower_util.h"

// --no-fallback: the strict refusal of a node without a GPU kernel.
static kiln_status_t kiln_lower_host_allowed(const kiln_lower_t* l) {
  if (!l->program->no_fallback) return kiln_ok_status();
  return kiln_lower_refuse(l, "it runs only on the host (CPU fallback between GPU segments), "
                              "which --no-fallback forbids");
}

// The graph output a data-dependent value leaves as (its index), refusing
// any node reading it.
static kiln_status_t kiln_lower_dynamic_output(const kiln_lower_t* l, size_t index,
                                               int32_t* out_output) {
  const kiln_graph_t* graph = l->graph;
  int32_t id = l->node->outputs[index];
  for (size_t n = 0; n < graph->node_count; ++n) {
    const kiln_graph_node_t* node = &graph->nodes[n];
    if (node->removed) continue;
    for (size_t i = 0; i < node->input_count; ++i) {
      if (node->inputs[i] == id) {
        return kiln_lower_refuse(
            l, "its output '%s' has a data-dependent shape and node '%s' (op %s) reads it; "
               "such outputs can only be graph outputs",
            graph->values[id].name, node->name, node->op_type);
      }
    }
  }
  *out_output = -1;
  for (size_t o = 0; o < graph->output_count; ++o) {
    if (graph->outputs[o] != id) continue;
    if (*out_output >= 0) {
      return kiln_lower_refuse(l, "its data-dependent output '%s' is listed twice",
                               graph->values[id].name);
    }
    *out_output = (int32_t)o;
  }
  if (*out_output < 0) return kiln_lower_refuse(l, "its output is unused");
  return kiln_ok_status();
}

static kiln_status_t kiln_lower_topk(const kiln_lower_t* l) {
  KILN_RETURN_IF_ERROR(kiln_lower_host_allowed(l));
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* values = kiln_lower_out(l, 0);
  const kiln_graph_value_t* indices = kiln_lower_out(l, 1);
  if (!x || x->data) return kiln_lower_refuse(l, "a constant or absent input");
  int64_t axis_attr = -1, largest = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", -1, &axis_attr));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "largest", 1, &largest));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, x->shape.rank, &axis));
  const kiln_graph_shape_t* y = values ? &values->shape : &indices->shape;
  if (y->dims[axis] == 0) return kiln_lower_refuse(l, "K = 0 (an empty result)");
  kiln_emit_host_op_t op = {.kind = KILN_EMIT_HOST_TOPK, .range_count = 3,
                            .count_output = -1};
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->inputs[0], &op.ranges[0]));
  // An output no one reads (not planned) still needs a place to write:
  // scratch past the plan (values first, then indices).
  bool placed[2] = {false, false};
  for (size_t o = 0; o < 2; ++o) {
    if (!(o ? indices : values)) continue;
    kiln_status_t status =
        kiln_emit_value_range(l->program, l->node->outputs[o], &op.ranges[1 + o]);
    placed[o] = kiln_status_is_ok(status);
    kiln_status_free(status);
  }
  uint64_t picked = kiln_lower_count(y);
  if (!placed[0] || !placed[1]) {
    kiln_emit_range_t scratch;
    uint64_t values_bytes = (picked * 4 + KILN_EMIT_ALIGNMENT - 1) &
                            ~(uint64_t)(KILN_EMIT_ALIGNMENT - 1);
    KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, values_bytes + picked * 8, &scratch));
    if (!placed[0]) {
      op.ranges[1] = (kiln_emit_range_t){scratch.space, 0, scratch.offset, picked * 4};
    }
    if (!placed[1]) {
      op.ranges[2] = (kiln_emit_range_t){scratch.space, 0, scratch.offset + values_bytes,
                                         picked * 8};
    }
  }
  op.ints[0] = (int64_t)kiln_lower_dims(&x->shape, 0, axis);
  op.ints[1] = x->shape.dims[axis];
  op.ints[2] = (int64_t)kiln_lower_dims(&x->shape, axis + 1, x->shape.rank);
  op.ints[3] = y->dims[axis];
  op.ints[4] = largest ? 1 : 0;
  return kiln_emit_add_host_op(l->program, &op);
}

static kiln_status_t kiln_lower_nonzero(const kiln_lower_t* l) {
  KILN_RETURN_IF_ERROR(kiln_lower_host_allowed(l));
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  if (!x || x->data) return kiln_lower_refuse(l, "a constant or absent input");
  kiln_emit_host_op_t op = {.kind = KILN_EMIT_HOST_NONZERO, .range_count = 2, .count_dim = 1};
  KILN_RETURN_IF_ERROR(kiln_lower_dynamic_output(l, 0, &op.count_output));
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->inputs[0], &op.ranges[0]));
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->outputs[0], &op.ranges[1]));
  switch (x->dtype) {  // the cpu module's element codes
    case KILN_GRAPH_DTYPE_F32: op.ints[0] = 0; break;
    case KILN_GRAPH_DTYPE_I64: op.ints[0] = 1; break;
    case KILN_GRAPH_DTYPE_I32: op.ints[0] = 2; break;
    case KILN_GRAPH_DTYPE_BOOL: op.ints[0] = 3; break;
    default:
      return kiln_lower_refuse(l, "input of type %s", kiln_graph_dtype_name(x->dtype));
  }
  op.ints[1] = (int64_t)kiln_lower_count(&x->shape);  // the bound
  op.shape = x->shape;
  return kiln_emit_add_host_op(l->program, &op);
}

// Optional scalar constant input `index` (shape inference checked it).
static const void* kiln_lower_scalar(const kiln_lower_t* l, size_t index) {
  const kiln_graph_value_t* v = kiln_lower_in(l, index);
  return v ? v->data : NULL;
}

static kiln_status_t kiln_lower_nms(const kiln_lower_t* l) {
  KILN_RETURN_IF_ERROR(kiln_lower_host_allowed(l));
  // Boxes or scores may be constants (read from the weights); both are
  // not, or the node would have folded.
  const kiln_graph_value_t* boxes = kiln_lower_in(l, 0);
  const kiln_graph_value_t* scores = kiln_lower_in(l, 1);
  kiln_emit_host_op_t op = {.kind = KILN_EMIT_HOST_NMS, .range_count = 3, .count_dim = 0};
  KILN_RETURN_IF_ERROR(kiln_lower_dynamic_output(l, 0, &op.count_output));
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->inputs[0], &op.ranges[0]));
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->inputs[1], &op.ranges[1]));
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->outputs[0], &op.ranges[2]));
  const int64_t* max = kiln_lower_scalar(l, 2);
  const float* iou = kiln_lower_scalar(l, 3);
  const float* score = kiln_lower_scalar(l, 4);
  int64_t center = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "center_point_box", 0, &center));
  op.ints[0] = boxes->shape.dims[0];
  op.ints[1] = boxes->shape.dims[1];
  op.ints[2] = scores->shape.dims[1];
  op.ints[3] = max && *max > 0 ? *max : 0;
  op.ints[4] = (center ? 1 : 0) | (score ? 2 : 0);
  op.floats[0] = iou ? *iou : 0.0f;
  op.floats[1] = score ? *score : 0.0f;
  return kiln_emit_add_host_op(l->program, &op);
}

kiln_status_t kiln_lower_host(const kiln_lower_t* l) {
  const char* op = l->node->op_type;
  if (strcmp(op, "TopK") == 0) return kiln_lower_topk(l);
  if (strcmp(op, "NonZero") == 0) return kiln_lower_nonzero(l);
  if (strcmp(op, "NonMaxSuppression") == 0) return kiln_lower_nms(l);
  return kiln_lower_refuse(l, "no host implementation");
}
