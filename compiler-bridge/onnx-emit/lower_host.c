// Nodes the GPU path does not take, lowered to host ops between GPU
// segments (kiln_emit_host_op_t; the module calls the "cpu" native module,
// kiln/modules/cpu_ops_module.h): TopK (no GPU kernel yet), comparisons,
// logic and Where on run-time masks (no bool kernels), NonZero and
// NonMaxSuppression (data-dependent output shapes). A data-dependent output
// is placed at its static upper bound; the op returns the real count and
// the module returns the output with that count as its shape, so such an
// output must be a graph output that no node reads (anything else is
// refused naming both nodes). docs/partitioning.md has the costs.
#include <string.h>

#include "lower_util.h"

// --no-fallback: the strict refusal of a node without a GPU kernel.
static kiln_status_t kiln_lower_host_allowed(const kiln_lower_t* l) {
  if (l->program->no_fallback) {
    return kiln_lower_refuse(l, "it runs only on the host (CPU fallback between GPU segments), "
                                "which --no-fallback forbids");
  }
  // The cpu module reads and writes float32, never fp16 storage
  // (--precision=f16): refuse rather than misread the bytes. These ops are
  // not kept at float32 between Casts as Where and the recurrent nodes are
  // (kiln_emit_node_runs_f32_only): what they select moves with float16's
  // rounding of their inputs.
  for (size_t i = 0; i < l->node->input_count + l->node->output_count; ++i) {
    const kiln_graph_value_t* v = i < l->node->input_count
                                      ? kiln_lower_in(l, i)
                                      : kiln_lower_out(l, i - l->node->input_count);
    if (v && v->dtype == KILN_GRAPH_DTYPE_F16) {
      return kiln_lower_refuse(l, "host ops take float32 data, and '%s' is float16 "
                                  "(compile with --precision=f32)", v->name);
    }
  }
  return kiln_ok_status();
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
    uint64_t values_bytes = kiln_emit_align_up(picked * 4);
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

// The cpu module's element code of a dtype (-1: none).
static int64_t kiln_lower_host_element(kiln_graph_dtype_t dtype) {
  switch (dtype) {
    case KILN_GRAPH_DTYPE_F32: return 0;
    case KILN_GRAPH_DTYPE_I64: return 1;
    case KILN_GRAPH_DTYPE_I32: return 2;
    case KILN_GRAPH_DTYPE_BOOL: return 3;
    default: return -1;
  }
}

// Comparisons, logic and Where on run-time data (masks): kiln has no GPU
// kernels for bool tensors, so they run on the host with numpy
// broadcasting (cpu.elementwise). Their bool results feed host ops or
// leave as graph outputs; a GPU node reading one is refused by its own
// lowering (non-f32 run-time tensor).
static kiln_status_t kiln_lower_host_elementwise(const kiln_lower_t* l, int64_t code) {
  KILN_RETURN_IF_ERROR(kiln_lower_host_allowed(l));
  const kiln_graph_value_t* out = kiln_lower_out(l, 0);
  if (!out) return kiln_lower_refuse(l, "an absent output");
  const size_t arity = code == 5 || code == 10 ? 1 : code == 9 ? 3 : 2;
  kiln_emit_host_op_t op = {.kind = KILN_EMIT_HOST_ELEMENTWISE, .range_count = 4,
                            .count_output = -1};
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->outputs[0], &op.ranges[0]));
  const kiln_graph_shape_t* shape = &out->shape;
  int32_t rank = shape->rank;
  if (rank > 8) return kiln_lower_refuse(l, "rank %d > 8", rank);
  op.broadcast[0] = rank;
  for (int32_t d = 0; d < rank; ++d) op.broadcast[1 + d] = shape->dims[d];
  for (size_t k = 0; k < 3; ++k) {
    size_t operand = k < arity ? k : 0;  // unused operands repeat the first
    const kiln_graph_value_t* v = kiln_lower_in(l, operand);
    if (!v) return kiln_lower_refuse(l, "input %zu is absent", operand);
    KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->inputs[operand],
                                               &op.ranges[1 + k]));
    // Numpy broadcasting: dims aligned at the right; a dim of 1 repeats. A
    // copy (reshape) walks its operand in out's order.
    const kiln_graph_shape_t* in_shape = code == 10 ? shape : &v->shape;
    int64_t stride = 1;
    for (int32_t d = rank; d-- > 0;) {
      int32_t dv = d - (rank - in_shape->rank);
      int64_t dim = dv >= 0 ? in_shape->dims[dv] : 1;
      op.broadcast[1 + (k + 1) * (size_t)rank + (size_t)d] =
          dim == 1 && shape->dims[d] != 1 ? 0 : stride;
      stride *= dim;
    }
  }
  op.broadcast_size = 1 + 4 * (uint32_t)rank;
  // The operands' kind: compare and Where read theirs (Where: the branches),
  // logic ops bool.
  const kiln_graph_value_t* typed = kiln_lower_in(l, code == 9 ? 1 : 0);
  op.ints[0] = code;
  op.ints[1] = kiln_lower_host_element(typed->dtype);
  if (op.ints[1] < 0) {
    return kiln_lower_refuse(l, "%s operands", kiln_graph_dtype_name(typed->dtype));
  }
  return kiln_emit_add_host_op(l->program, &op);
}

kiln_status_t kiln_lower_host_bool_copy(const kiln_lower_t* l) {
  return kiln_lower_host_elementwise(l, 10);
}

// Cast of run-time bool data to float (a mask entering float math): a host
// Where(x, 1, 0) whose f32 result goes back to the GPU.
kiln_status_t kiln_lower_host_bool_to_float(const kiln_lower_t* l) {
  KILN_RETURN_IF_ERROR(kiln_lower_host_allowed(l));
  const kiln_graph_value_t* out = kiln_lower_out(l, 0);
  if (!out || out->shape.rank > 8) return kiln_lower_refuse(l, "an absent or rank > 8 output");
  kiln_emit_host_op_t op = {.kind = KILN_EMIT_HOST_ELEMENTWISE, .range_count = 4,
                            .count_output = -1};
  static const float kOne = 1.0f, kZero = 0.0f;
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->outputs[0], &op.ranges[0]));
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->inputs[0], &op.ranges[1]));
  KILN_RETURN_IF_ERROR(kiln_emit_add_weight(l->program, &kOne, 4, &op.ranges[2]));
  KILN_RETURN_IF_ERROR(kiln_emit_add_weight(l->program, &kZero, 4, &op.ranges[3]));
  const int32_t rank = out->shape.rank;
  op.broadcast[0] = rank;
  int64_t stride = 1;
  for (int32_t d = rank; d-- > 0;) {
    op.broadcast[1 + d] = out->shape.dims[d];
    op.broadcast[1 + rank + d] = stride;  // the mask, element by element
    stride *= out->shape.dims[d];
  }
  op.broadcast_size = 1 + 4 * (uint32_t)rank;  // the constants' strides stay 0
  op.ints[0] = 9;  // Where
  op.ints[1] = 0;  // f32 branches
  return kiln_emit_add_host_op(l->program, &op);
}

kiln_status_t kiln_lower_where_any(const kiln_lower_t* l) {
  const kiln_graph_value_t* cond = kiln_lower_in(l, 0);
  const kiln_graph_value_t* x = kiln_lower_in(l, 1);
  const kiln_graph_value_t* y = kiln_lower_in(l, 2);
  // A constant mask with one constant branch is one GPU select dispatch.
  if (cond && x && y && cond->data && (x->data != NULL) != (y->data != NULL) &&
      x->dtype == KILN_GRAPH_DTYPE_F32) {
    return kiln_lower_where(l);
  }
  return kiln_lower_host_elementwise(l, 9);
}

kiln_status_t kiln_lower_host(const kiln_lower_t* l) {
  const char* op = l->node->op_type;
  static const char* const kElementwise[] = {"Equal", "Less", "Greater", "LessOrEqual",
                                             "GreaterOrEqual", "Not", "And", "Or", "Xor"};
  for (size_t i = 0; i < sizeof(kElementwise) / sizeof(kElementwise[0]); ++i) {
    if (strcmp(op, kElementwise[i]) == 0) return kiln_lower_host_elementwise(l, (int64_t)i);
  }
  if (strcmp(op, "TopK") == 0) return kiln_lower_topk(l);
  if (strcmp(op, "NonZero") == 0) return kiln_lower_nonzero(l);
  if (strcmp(op, "NonMaxSuppression") == 0) return kiln_lower_nms(l);
  return kiln_lower_refuse(l, "no host implementation");
}
