// Windowed and global pooling, reductions, softmax and normalizations.
#include <string.h>

#include "lower_util.h"
#include "window.h"

kiln_status_t kiln_lower_pool(const kiln_lower_t* l, uint32_t op) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  kiln_graph_shape_t x4, y4;
  if (!kiln_lower_shape_2d(&x->shape, &x4) || !kiln_lower_shape_2d(&y->shape, &y4)) {
    return kiln_lower_refuse(l, "only 1-D (NCL) and 2-D (NCHW) pooling is supported");
  }
  if (kiln_lower_out(l, 1)) return kiln_lower_refuse(l, "the Indices output is not supported");
  kiln_window_t w;
  KILN_RETURN_IF_ERROR(
      kiln_lower_window_2d(l, &x->shape, NULL, false, true, op == KILN_POOL_MAX, &w));
  int64_t include_pad = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "count_include_pad", 0, &include_pad));
  // ceil_mode windows may run past the end pad; the kernel counts only
  // positions inside the padded input, as ONNX does.
  kiln_kernel_pool2d_params_t p = {
      (uint32_t)(x4.dims[0] * x4.dims[1]), (uint32_t)x4.dims[2], (uint32_t)x4.dims[3],
      (uint32_t)y4.dims[2], (uint32_t)y4.dims[3], (uint32_t)w.kernel[0], (uint32_t)w.kernel[1], (uint32_t)w.stride[0],
      (uint32_t)w.stride[1], (uint32_t)w.pad_begin[0], (uint32_t)w.pad_begin[1],
      (uint32_t)w.pad_end[0], (uint32_t)w.pad_end[1], (uint32_t)w.dilation[0],
      (uint32_t)w.dilation[1], (uint32_t)(include_pad != 0)};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_POOL2D, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = kiln_lower_count(&y->shape)};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[1]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_POOL_OP, op}};
  desc.ops = ops;
  desc.op_count = 1;
  return kiln_emit_add_dispatch(l->program, &desc);
}

// One reduce dispatch over the [outer, size, inner] view of input 0.
static kiln_status_t kiln_lower_reduce_view(const kiln_lower_t* l, uint32_t op,
                                            uint64_t outer, uint64_t size,
                                            uint64_t inner) {
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, outer * inner));
  kiln_kernel_reduce_params_t p = {(uint32_t)outer, (uint32_t)size, (uint32_t)inner};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_REDUCE, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_ROWS,
                                    .grid_count = outer * inner};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[1]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_REDUCE_OP, op}};
  desc.ops = ops;
  desc.op_count = 1;
  return kiln_emit_add_dispatch(l->program, &desc);
}

kiln_status_t kiln_lower_global_pool(const kiln_lower_t* l, uint32_t op) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  if (x->rank < 3) return kiln_lower_refuse(l, "input rank below 3");
  return kiln_lower_reduce_view(l, op, kiln_lower_dims(x, 0, 2),
                                kiln_lower_dims(x, 2, x->rank), 1);
}

kiln_status_t kiln_lower_reduce(const kiln_lower_t* l, uint32_t op) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  const int64_t* axes = NULL;
  size_t axes_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(l->node, "axes", &axes, &axes_count));
  if (!axes) KILN_RETURN_IF_ERROR(kiln_lower_const_ints(l, 1, &axes, &axes_count));
  int64_t noop = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "noop_with_empty_axes", 0, &noop));
  if (axes_count == 0 && noop) return kiln_lower_copy(l);
  bool reduced[KILN_GRAPH_MAX_RANK] = {false};
  for (size_t i = 0; i < axes_count; ++i) {
    int32_t axis = 0;
    KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axes[i], x->rank, &axis));
    reduced[axis] = true;
  }
  if (axes_count == 0) {
    for (int32_t d = 0; d < x->rank; ++d) reduced[d] = true;
  }
  int32_t first = -1, last = -1;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (!reduced[d]) continue;
    if (first < 0) first = d;
    last = d;
  }
  for (int32_t d = first; d <= last; ++d) {
    if (!reduced[d] && x->dims[d] != 1) {
      return kiln_lower_refuse(l, "reducing non-adjacent axes is not supported");
    }
  }
  uint64_t size = kiln_lower_dims(x, first, last + 1);
  if (size == 0) return kiln_lower_refuse(l, "reducing an empty axis");
  return kiln_lower_reduce_view(l, op, kiln_lower_dims(x, 0, first), size,
                                kiln_lower_dims(x, last + 1, x->rank));
}

kiln_status_t kiln_lower_softmax(const kiln_lower_t* l, bool log) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  bool legacy = l->graph->opset < 13;
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "axis", legacy ? 1 : -1, &axis_attr));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, x->rank, &axis));
  // Before opset 13 the input is flattened to 2-D at `axis`.
  uint64_t outer = kiln_lower_dims(x, 0, axis);
  uint64_t size = legacy ? kiln_lower_dims(x, axis, x->rank) : (uint64_t)x->dims[axis];
  uint64_t inner = legacy ? 1 : kiln_lower_dims(x, axis + 1, x->rank);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, outer * inner));
  kiln_kernel_softmax_params_t p = {(uint32_t)outer, (uint32_t)size, (uint32_t)inner};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_SOFTMAX, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_ROWS,
                                    .grid_count = outer * inner};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[1]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_SOFTMAX_LOG, log}};
  desc.ops = ops;
  desc.op_count = 1;
  return kiln_emit_add_dispatch(l->program, &desc);
}

static kiln_status_t kiln_lower_norm(const kiln_lower_t* l, uint32_t kind,
                                     uint64_t rows, uint64_t size,
                                     uint64_t channels, float epsilon) {
  for (size_t o = 1; o < l->node->output_count; ++o) {
    if (l->node->outputs[o] >= 0 &&
        kiln_graph_value_use_count(l->graph, l->node->outputs[o])) {
      return kiln_lower_refuse(l, "the Mean/InvStdDev outputs are not supported");
    }
  }
  uint64_t params = kind == KILN_NORM_LAYER ? size : channels;
  const kiln_graph_value_t* scale = kiln_lower_in(l, 1);
  const kiln_graph_value_t* bias = kiln_lower_in(l, 2);
  if (!scale || kiln_lower_count(&scale->shape) != params ||
      (bias && kiln_lower_count(&bias->shape) != params)) {
    return kiln_lower_refuse(l, "scale/bias must cover the normalized elements");
  }
  kiln_kernel_norm_params_t p = {(uint32_t)rows, (uint32_t)size, (uint32_t)channels,
                                 epsilon};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_NORM, .push = &p,
                                    .binding_count = 4, .written_mask = 8u,
                                    .grid = KILN_EMIT_GRID_ROWS, .grid_count = rows};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  if (bias) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  } else {
    // No bias: a zero vector in the weights.
    float* zeros = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_calloc(l->program->allocator,
                                               params * sizeof(float), (void**)&zeros));
    kiln_status_t status = kiln_emit_add_weight(l->program, zeros, params * sizeof(float),
                                                &desc.bindings[2]);
    kiln_allocator_free(l->program->allocator, zeros);
    KILN_RETURN_IF_ERROR(status);
  }
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[3]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_NORM_KIND, kind}};
  desc.ops = ops;
  desc.op_count = 1;
  return kiln_emit_add_dispatch(l->program, &desc);
}

kiln_status_t kiln_lower_layer_norm(const kiln_lower_t* l) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  int64_t axis_attr = -1, stash = 1;
  float epsilon = 1e-5f;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", -1, &axis_attr));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "stash_type", 1, &stash));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "epsilon", 1e-5f, &epsilon));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, x->rank, &axis));
  uint64_t rows = kiln_lower_dims(x, 0, axis), size = kiln_lower_dims(x, axis, x->rank);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, rows));
  return kiln_lower_norm(l, KILN_NORM_LAYER, rows, size, 1, epsilon);
}

kiln_status_t kiln_lower_instance_norm(const kiln_lower_t* l) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  float epsilon = 1e-5f;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "epsilon", 1e-5f, &epsilon));
  if (x->rank < 3) return kiln_lower_refuse(l, "input rank below 3");
  return kiln_lower_norm(l, KILN_NORM_INSTANCE, kiln_lower_dims(x, 0, 2),
                         kiln_lower_dims(x, 2, x->rank), (uint64_t)x->dims[1], epsilon);
}
