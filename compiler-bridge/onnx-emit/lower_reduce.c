// Windowed and global pooling, reductions, softmax and normalizations.
#include <string.h>

#include "lower_rows.h"
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
      kiln_lower_window_2d(l, &x->shape, NULL, false, true,
                           op == KILN_POOL_MAX || l->graph->opset >= 19, &w));
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
      (uint32_t)w.dilation[1], (uint32_t)(include_pad != 0), 0, 0, 0, 0};
  // Big windows run as tiles, each combining into the output.
  KILN_RETURN_IF_ERROR(kiln_lower_window_tile(l, kiln_lower_count(&y->shape), p.kernel_h,
                                              p.kernel_w, &p.tile_h, &p.tile_w));
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_POOL2D, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = kiln_lower_count(&y->shape)};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[1]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_POOL_OP, op}};
  desc.ops = ops;
  desc.op_count = 1;
  uint32_t step_h = p.tile_h ? p.tile_h : p.kernel_h, step_w = p.tile_w ? p.tile_w : p.kernel_w;
  for (uint32_t h0 = 0; h0 < p.kernel_h; h0 += step_h) {
    for (uint32_t w0 = 0; w0 < p.kernel_w; w0 += step_w) {
      p.tile_h0 = h0;
      p.tile_w0 = w0;
      KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &desc));
    }
  }
  return kiln_ok_status();
}

// One reduce dispatch of `op` over the [outer, size, inner] view of `in`,
// in chunks of `chunk` (0: one) into `out`.
static kiln_status_t kiln_lower_reduce_dispatch(const kiln_lower_t* l, uint32_t op,
                                                const kiln_emit_range_t* in,
                                                const kiln_emit_range_t* out,
                                                const kiln_kernel_reduce_params_t* p) {
  uint64_t chunks = p->chunk ? (p->size + p->chunk - 1) / p->chunk : 1;
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_REDUCE, .push = p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_ROWS,
                                    .grid_count = (uint64_t)p->outer * chunks * p->inner};
  desc.bindings[0] = *in;
  desc.bindings[1] = *out;
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_REDUCE_OP, op}};
  desc.ops = ops;
  desc.op_count = 1;
  return kiln_emit_add_dispatch(l->program, &desc);
}

// Reduces the [outer, size, inner] view of input 0. An axis longer than one
// workgroup's chunk is reduced in chunk partials first (into scratch, two
// regions used in turn), then the partials, until one chunk remains; mean
// sums the partials and divides once by the full size.
static kiln_status_t kiln_lower_reduce_view(const kiln_lower_t* l, uint32_t op,
                                            uint64_t outer, uint64_t size,
                                            uint64_t inner) {
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, outer * inner));
  kiln_emit_range_t in, out, scratch = {0};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  const uint64_t total = size;
  uint64_t region = 0;  // bytes per scratch region, set by the first split
  for (int level = 0;; ++level) {
    uint64_t chunk = 0;
    KILN_RETURN_IF_ERROR(
        kiln_lower_row_chunk(l, KILN_KERNEL_REDUCE, outer * inner, size, &chunk));
    kiln_kernel_reduce_params_t p = {(uint32_t)outer, (uint32_t)size, (uint32_t)inner, 0,
                                     0.0f};
    if (size <= chunk) {
      // Mean divides by the elements reduced in all levels.
      p.divisor = (float)total;
      return kiln_lower_reduce_dispatch(l, op, &in, &out, &p);
    }
    uint64_t chunks = (size + chunk - 1) / chunk;
    KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, outer * chunks * inner));
    if (level == 0) {
      region = (outer * chunks * inner * sizeof(float) + KILN_EMIT_ALIGNMENT - 1) &
               ~(uint64_t)(KILN_EMIT_ALIGNMENT - 1);
      KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, 2 * region, &scratch));
    }
    kiln_emit_range_t partial = scratch;
    partial.offset += (uint64_t)(level % 2) * region;
    partial.length = outer * chunks * inner * sizeof(float);
    p.chunk = (uint32_t)chunk;
    KILN_RETURN_IF_ERROR(kiln_lower_reduce_dispatch(
        l, op == KILN_REDUCE_MEAN ? KILN_REDUCE_SUM : op, &in, &partial, &p));
    in = partial;
    size = chunks;
  }
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
  uint64_t chunk = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_row_chunk(l, KILN_KERNEL_SOFTMAX, outer * inner, size, &chunk));
  if (size > chunk) {
    KILN_RETURN_IF_ERROR(kiln_lower_row_chunk(l, KILN_KERNEL_ROWS_SPLIT, outer * inner, size,
                                              &chunk));
    kiln_rows_split_t split = {.outer = outer, .size = size, .inner = inner, .chunk = chunk,
                               .channels = 1};
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &split.x));
    KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &split.y));
    split.scale = split.bias = split.x;
    return kiln_lower_rows_split(l, log ? KILN_ROWS_LOG_SOFTMAX : KILN_ROWS_SOFTMAX, &split);
  }
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
  uint64_t chunk = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_row_chunk(l, KILN_KERNEL_NORM, rows, size, &chunk));
  if (size > chunk) {
    KILN_RETURN_IF_ERROR(kiln_lower_row_chunk(l, KILN_KERNEL_ROWS_SPLIT, rows, size, &chunk));
    kiln_rows_split_t split = {rows, size, 1, chunk, channels, epsilon,
                               desc.bindings[0], desc.bindings[1], desc.bindings[2],
                               desc.bindings[3]};
    return kiln_lower_rows_split(
        l, kind == KILN_NORM_LAYER ? KILN_ROWS_LAYER_NORM : KILN_ROWS_INSTANCE_NORM, &split);
  }
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
