// Windowed and global pooling, reductions, softmax and normalizations.
#include <string.h>

#include "kiln/compiler/kernels_params.h"
#include "lower_rows.h"
#include "window.h"

// The pool2d dispatches of `p` from `in` to `out`: big windows run as
// tiles, each combining into the output.
static kiln_status_t kiln_lower_pool_dispatches(const kiln_lower_t* l, uint32_t op,
                                                kiln_kernel_pool2d_params_t p,
                                                const kiln_emit_range_t* in,
                                                const kiln_emit_range_t* out) {
  uint64_t outputs = (uint64_t)p.planes * p.out_height * p.out_width;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, outputs));
  KILN_RETURN_IF_ERROR(kiln_lower_window_tile(l, outputs, p.kernel_h, p.kernel_w, &p.tile_h,
                                              &p.tile_w));
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_POOL2D, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR, .grid_count = outputs};
  desc.bindings[0] = *in;
  desc.bindings[1] = *out;
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

// 3-D (NCDHW) pools as two pool2d passes, exact because the window is a
// box: max of per-slice maxima, and for the average the valid (or padded)
// positions of a box are the product of per-axis counts, so the mean of
// per-slice means is the box mean. (H, W) per depth slice into scratch,
// then D over a [N*C, D, H'*W'] view (kernel kd x 1).
static kiln_status_t kiln_lower_pool3d(const kiln_lower_t* l, uint32_t op) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  const kiln_graph_shape_t* y = &kiln_lower_out(l, 0)->shape;
  kiln_window_t w;
  KILN_RETURN_IF_ERROR(kiln_window_resolve(l->node, 3, &x->dims[2], NULL, true,
                                           op == KILN_POOL_MAX || l->graph->opset >= 19, &w));
  int64_t include_pad = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "count_include_pad", 0, &include_pad));
  const uint64_t nc = (uint64_t)(x->dims[0] * x->dims[1]);
  const uint64_t plane_out = (uint64_t)(y->dims[3] * y->dims[4]);
  const uint64_t mid = nc * (uint64_t)x->dims[2] * plane_out;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, mid));
  kiln_emit_range_t in, out, scratch;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, mid * sizeof(float), &scratch));
  kiln_kernel_pool2d_params_t hw = {
      (uint32_t)(nc * (uint64_t)x->dims[2]), (uint32_t)x->dims[3], (uint32_t)x->dims[4],
      (uint32_t)y->dims[3], (uint32_t)y->dims[4], (uint32_t)w.kernel[1], (uint32_t)w.kernel[2],
      (uint32_t)w.stride[1], (uint32_t)w.stride[2], (uint32_t)w.pad_begin[1],
      (uint32_t)w.pad_begin[2], (uint32_t)w.pad_end[1], (uint32_t)w.pad_end[2],
      (uint32_t)w.dilation[1], (uint32_t)w.dilation[2], (uint32_t)(include_pad != 0),
      0, 0, 0, 0};
  KILN_RETURN_IF_ERROR(kiln_lower_pool_dispatches(l, op, hw, &in, &scratch));
  kiln_kernel_pool2d_params_t d = {
      (uint32_t)nc, (uint32_t)x->dims[2], (uint32_t)plane_out, (uint32_t)y->dims[2],
      (uint32_t)plane_out, (uint32_t)w.kernel[0], 1, (uint32_t)w.stride[0], 1,
      (uint32_t)w.pad_begin[0], 0, (uint32_t)w.pad_end[0], 0, (uint32_t)w.dilation[0], 1,
      (uint32_t)(include_pad != 0), 0, 0, 0, 0};
  return kiln_lower_pool_dispatches(l, op, d, &scratch, &out);
}

kiln_status_t kiln_lower_pool(const kiln_lower_t* l, uint32_t op) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (kiln_lower_out(l, 1)) return kiln_lower_refuse(l, "the Indices output is not supported");
  if (x->shape.rank == 5 && y->shape.rank == 5) return kiln_lower_pool3d(l, op);
  kiln_graph_shape_t x4, y4;
  if (!kiln_lower_shape_2d(&x->shape, &x4) || !kiln_lower_shape_2d(&y->shape, &y4)) {
    return kiln_lower_refuse(l, "only 1-D (NCL), 2-D (NCHW) and 3-D (NCDHW) pooling is "
                             "supported");
  }
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
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  return kiln_lower_pool_dispatches(l, op, p, &in, &out);
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


// Reduces the [outer, size, inner] view of `in` into `out`. An axis longer
// than one workgroup's chunk is reduced in chunk partials first (into
// scratch past `scratch_offset` bytes, two regions used in turn), then the
// partials, until one chunk remains; mean sums the partials and divides
// once by the full size. `first`/`last`: this stage reads the node's input /
// writes its output (kiln_reduce_step_op).
static kiln_status_t kiln_lower_reduce_ranges(const kiln_lower_t* l, uint32_t op,
                                              kiln_emit_range_t in,
                                              const kiln_emit_range_t* out,
                                              uint64_t outer, uint64_t size,
                                              uint64_t inner, uint64_t scratch_offset,
                                              bool first, bool last) {
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, outer * inner));
  kiln_emit_range_t scratch = {0};
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
      return kiln_lower_reduce_dispatch(
          l, kiln_kernel_reduce_step_op(op, first && level == 0, last, true), &in, out, &p);
    }
    uint64_t chunks = (size + chunk - 1) / chunk;
    KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, outer * chunks * inner));
    // f16 partial sums could overflow where the whole (a mean) would not.
    if (kiln_emit_node_is_f16(l->program) && op != KILN_REDUCE_MAX && op != KILN_REDUCE_MIN) {
      return kiln_lower_refuse(l, "a sum over %llu values needs f16 partial sums, which could "
                               "overflow (compile with --precision=f32)",
                               (unsigned long long)total);
    }
    if (level == 0) {
      region = kiln_emit_align_up(outer * chunks * inner * sizeof(float));
      KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, scratch_offset + 2 * region, &scratch));
      scratch.offset += scratch_offset;
      scratch.length = 2 * region;
    }
    kiln_emit_range_t partial = scratch;
    partial.offset += (uint64_t)(level % 2) * region;
    partial.length = outer * chunks * inner * sizeof(float);
    p.chunk = (uint32_t)chunk;
    KILN_RETURN_IF_ERROR(kiln_lower_reduce_dispatch(
        l, kiln_kernel_reduce_step_op(op, first && level == 0, false, false), &in, &partial, &p));
    in = partial;
    size = chunks;
  }
}

static kiln_status_t kiln_lower_reduce_view(const kiln_lower_t* l, uint32_t op,
                                            uint64_t outer, uint64_t size,
                                            uint64_t inner) {
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  return kiln_lower_reduce_ranges(l, op, in, &out, outer, size, inner, 0, true, true);
}

// Reduced axes in several runs separated by kept axes (e.g. axes 0 and 2 of
// [A, B, C]): one reduction per run, innermost first, each into scratch
// (two regions in turn) and the last into the output. Sum, max and min
// compose; so does mean, every group having the same count.
static kiln_status_t kiln_lower_reduce_runs(const kiln_lower_t* l, uint32_t op,
                                            const kiln_graph_shape_t* x,
                                            const bool* reduced) {
  kiln_graph_shape_t cur = *x;
  // Runs with an axis longer than 1 (the others reduce nothing).
  int32_t run_count = 0;
  for (int32_t d = 0; d < x->rank; ++d) {
    if (!reduced[d]) continue;
    bool longer = false;
    for (; d < x->rank && reduced[d]; ++d) longer = longer || x->dims[d] != 1;
    run_count += longer;
  }
  // Every reduced axis has length 1: one pass applies the op's transform.
  if (run_count == 0) return kiln_lower_reduce_view(l, op, kiln_lower_count(x), 1, 1);
  kiln_emit_range_t in, out, scratch = {0};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  uint64_t region = 0;
  int32_t stage = 0;
  for (int32_t last = x->rank - 1; last >= 0; --last) {
    if (!reduced[last] || x->dims[last] == 1) continue;
    int32_t first = last;
    while (first > 0 && reduced[first - 1]) --first;
    uint64_t outer = kiln_lower_dims(&cur, 0, first);
    uint64_t size = kiln_lower_dims(&cur, first, last + 1);
    uint64_t inner = kiln_lower_dims(&cur, last + 1, cur.rank);
    for (int32_t d = first; d <= last; ++d) cur.dims[d] = 1;
    kiln_emit_range_t stage_out = out;
    if (stage + 1 < run_count) {
      if (stage == 0) {
        // The first stage's result is the largest intermediate.
        region = kiln_emit_align_up(outer * inner * sizeof(float));
        KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, 2 * region, &scratch));
      }
      stage_out = scratch;
      stage_out.offset += (uint64_t)(stage % 2) * region;
      stage_out.length = outer * inner * sizeof(float);
    }
    KILN_RETURN_IF_ERROR(kiln_lower_reduce_ranges(l, op, in, &stage_out, outer, size, inner,
                                                  2 * region, stage == 0,
                                                  stage + 1 == run_count));
    in = stage_out;
    ++stage;
    last = first;
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_global_pool(const kiln_lower_t* l, uint32_t op) {
  if (op == KILN_REDUCE_MEAN) {
    bool fused = false;
    KILN_RETURN_IF_ERROR(kiln_lower_squeeze_excite(l, &fused));
    if (fused) return kiln_ok_status();
  }
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
    if (!reduced[d] && x->dims[d] != 1) return kiln_lower_reduce_runs(l, op, x, reduced);
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

// LayerNorm's Mean and InvStdDev outputs (each [rows] of floats) from the
// rows_split statistics: (mean of x - shift, 1/std) pairs per row at float
// `final_at` of `stats`, shift the row's first value. Mean = that mean +
// x[row * size] (the shift added back), InvStdDev copied as is.
static kiln_status_t kiln_lower_norm_stats(const kiln_lower_t* l, uint64_t rows,
                                           uint64_t size, const kiln_emit_range_t* x,
                                           const kiln_emit_range_t* stats,
                                           uint64_t final_at) {
  // The statistics are float32 pairs: an f16 copy would read them as
  // halves (kiln_graph_precision_f16 keeps such nodes at float32).
  if (kiln_emit_node_is_f16(l->program)) {
    return kiln_lower_refuse(l, "LayerNormalization's Mean/InvStdDev outputs run at float32 "
                                "only");
  }
  kiln_graph_shape_t row_shape = {1, {(int64_t)rows}};
  int64_t pair_stride = 2, one = 1;
  for (size_t o = 1; o < 3 && o < l->node->output_count; ++o) {
    if (l->node->outputs[o] < 0 ||
        !kiln_graph_value_use_count(l->graph, l->node->outputs[o])) {
      continue;
    }
    kiln_emit_range_t out;
    KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, o, &out));
    KILN_RETURN_IF_ERROR(kiln_lower_strided_copy(l, stats, &out, &row_shape, &pair_stride,
                                                 &one, (int64_t)(final_at + (o - 1)), 0));
    if (o != 1) continue;
    kiln_kernel_binary_params_t p;
    memset(&p, 0, sizeof(p));
    p.count = (uint32_t)rows;
    for (int32_t d = 0; d < KILN_KERNEL_MAX_RANK; ++d) p.shape[d] = 1;
    p.shape[KILN_KERNEL_MAX_RANK - 1] = (uint32_t)rows;
    p.a_strides[KILN_KERNEL_MAX_RANK - 1] = 1;
    p.b_strides[KILN_KERNEL_MAX_RANK - 1] = (uint32_t)size;
    kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_BINARY, .push = &p,
                                      .binding_count = 3, .bindings = {out, *x, out},
                                      .written_mask = 4u, .grid = KILN_EMIT_GRID_LINEAR,
                                      .grid_count = p.count};
    kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_BINARY_OP, KILN_BINARY_ADD},
                                      {KILN_SPEC_BINARY_ACTIVATION, KILN_ACT_NONE}};
    desc.ops = ops;
    desc.op_count = 2;
    KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &desc));
  }
  return kiln_ok_status();
}

// `unit`: scale 1 and bias 0 (weights of `channels` values) instead of
// inputs 1 and 2 (GroupNormalization-21 applies its per-channel ones after).
static kiln_status_t kiln_lower_norm(const kiln_lower_t* l, uint32_t kind,
                                     uint64_t rows, uint64_t size,
                                     uint64_t channels, float epsilon, bool unit) {
  bool stats_used = false;
  for (size_t o = 1; o < l->node->output_count; ++o) {
    if (l->node->outputs[o] >= 0 &&
        kiln_graph_value_use_count(l->graph, l->node->outputs[o])) {
      stats_used = true;
    }
  }
  if (stats_used && (kind != KILN_NORM_LAYER || l->node->output_count > 3)) {
    return kiln_lower_refuse(l, "only LayerNormalization's Mean/InvStdDev outputs are "
                                "supported");
  }
  uint64_t params = kind == KILN_NORM_LAYER ? size : channels;
  const kiln_graph_value_t* scale = unit ? NULL : kiln_lower_in(l, 1);
  const kiln_graph_value_t* bias = unit ? NULL : kiln_lower_in(l, 2);
  if (!unit && (!scale || kiln_lower_count(&scale->shape) != params ||
                (bias && kiln_lower_count(&bias->shape) != params))) {
    return kiln_lower_refuse(l, "scale/bias must cover the normalized elements");
  }
  if (kind == KILN_NORM_LAYER && !unit && !stats_used && !kiln_lower_in(l, 3)) {
    bool done = false;
    KILN_RETURN_IF_ERROR(kiln_lower_norm_parts(l, rows, size, epsilon, &done));
    if (done) return kiln_ok_status();
  }
  kiln_kernel_norm_params_t p = {(uint32_t)rows, (uint32_t)size, (uint32_t)channels,
                                 epsilon};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_NORM, .push = &p,
                                    .binding_count = 4, .written_mask = 8u,
                                    .grid = KILN_EMIT_GRID_ROWS, .grid_count = rows};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  if (unit) {
    float* ones = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator,
                                               params * sizeof(float), (void**)&ones));
    for (uint64_t i = 0; i < params; ++i) ones[i] = 1.0f;
    // As floats of the node's storage (halves at f16; raw float32 bytes
    // here were read as halves: GroupNormalization-21 wrong at f16).
    kiln_status_t status = kiln_emit_add_float_weight(l->program, ones, params,
                                                      &desc.bindings[1]);
    kiln_allocator_free(l->program->allocator, ones);
    KILN_RETURN_IF_ERROR(status);
  } else {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  }
  if (bias) {
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  } else {
    // No bias: a zero vector in the weights.
    float* zeros = NULL;
    KILN_RETURN_IF_ERROR(kiln_allocator_calloc(l->program->allocator,
                                               params * sizeof(float), (void**)&zeros));
    kiln_status_t status = kiln_emit_add_float_weight(l->program, zeros, params,
                                                &desc.bindings[2]);
    kiln_allocator_free(l->program->allocator, zeros);
    KILN_RETURN_IF_ERROR(status);
  }
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[3]));
  uint64_t chunk = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_row_chunk(l, KILN_KERNEL_NORM, rows, size, &chunk));
  if (kiln_lower_in(l, 3)) {
    // A fused residual Add (kiln.residual): norm_residual reads both
    // addends; long rows sum them into scratch for the three-pass path.
    kiln_emit_range_t residual;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 3, &residual));
    if (size <= chunk && !stats_used) {
      kiln_kernel_spec_value_t kind_op[] = {{KILN_SPEC_NORM_KIND, kind}};
      desc.ops = kind_op;
      desc.op_count = 1;
      desc.kernel = KILN_KERNEL_NORM_RESIDUAL;
      desc.binding_count = 5;
      desc.bindings[4] = residual;
      return kiln_emit_add_dispatch(l->program, &desc);
    }
    KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, rows * size));
    kiln_emit_range_t sum;
    KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, rows * size * sizeof(float), &sum));
    kiln_kernel_binary_params_t add;
    memset(&add, 0, sizeof(add));
    add.count = (uint32_t)(rows * size);
    for (int32_t d = 0; d < KILN_KERNEL_MAX_RANK; ++d) add.shape[d] = 1;
    add.shape[KILN_KERNEL_MAX_RANK - 1] = add.count;
    add.a_strides[KILN_KERNEL_MAX_RANK - 1] = add.b_strides[KILN_KERNEL_MAX_RANK - 1] = 1;
    kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_BINARY_OP, KILN_BINARY_ADD},
                                      {KILN_SPEC_BINARY_ACTIVATION, KILN_ACT_NONE}};
    kiln_emit_dispatch_desc_t sum_desc = {
        .kernel = KILN_KERNEL_BINARY, .ops = ops, .op_count = 2, .push = &add,
        .binding_count = 3, .bindings = {desc.bindings[0], residual, sum},
        .written_mask = 4u, .grid = KILN_EMIT_GRID_LINEAR, .grid_count = add.count};
    KILN_RETURN_IF_ERROR(kiln_emit_add_dispatch(l->program, &sum_desc));
    desc.bindings[0] = sum;
  }
  // The statistics outputs come from rows_split's per-row statistics, so a
  // node that has them runs that way whatever its row length.
  if (size > chunk || stats_used) {
    KILN_RETURN_IF_ERROR(kiln_lower_row_chunk(l, KILN_KERNEL_ROWS_SPLIT, rows, size, &chunk));
    kiln_emit_range_t stats;
    uint64_t final_at = 0;
    kiln_rows_split_t split = {rows, size, 1, chunk, channels, epsilon,
                               desc.bindings[0], desc.bindings[1], desc.bindings[2],
                               desc.bindings[3], &stats, &final_at};
    KILN_RETURN_IF_ERROR(kiln_lower_rows_split(
        l, kind == KILN_NORM_LAYER ? KILN_ROWS_LAYER_NORM : KILN_ROWS_INSTANCE_NORM, &split));
    if (!stats_used) return kiln_ok_status();
    return kiln_lower_norm_stats(l, rows, size, &desc.bindings[0], &stats, final_at);
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
  return kiln_lower_norm(l, KILN_NORM_LAYER, rows, size, 1, epsilon, false);
}

kiln_status_t kiln_lower_instance_norm(const kiln_lower_t* l) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  float epsilon = 1e-5f;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "epsilon", 1e-5f, &epsilon));
  if (x->rank < 3) return kiln_lower_refuse(l, "input rank below 3");
  return kiln_lower_norm(l, KILN_NORM_INSTANCE, kiln_lower_dims(x, 0, 2),
                         kiln_lower_dims(x, 2, x->rank), (uint64_t)x->dims[1], epsilon, false);
}

// GroupNormalization: rows of (C / G) * spatial values per (n, group), the
// instance kind over G "channels". Opset 18 scales per group (the norm
// kernel's own scale/bias); from 21 per channel: a unit norm, then x * scale
// + bias broadcast over [C, 1, ...] (two binary dispatches).
kiln_status_t kiln_lower_group_norm(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  float epsilon = 1e-5f;
  int64_t groups = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "epsilon", 1e-5f, &epsilon));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "num_groups", 0, &groups));
  const kiln_graph_shape_t* shape = &x->shape;
  if (shape->rank < 3 || shape->rank > KILN_KERNEL_MAX_RANK) {
    return kiln_lower_refuse(l, "input rank must be 3 to %d", KILN_KERNEL_MAX_RANK);
  }
  uint64_t n = (uint64_t)shape->dims[0], rows = n * (uint64_t)groups;
  uint64_t size = kiln_lower_count(shape) / (rows ? rows : 1);
  bool per_channel = l->graph->opset >= 21;
  KILN_RETURN_IF_ERROR(kiln_lower_norm(l, KILN_NORM_INSTANCE, rows, size, (uint64_t)groups,
                                       epsilon, per_channel));
  if (!per_channel) return kiln_ok_status();
  kiln_emit_range_t out, scale, bias;
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &scale));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &bias));
  kiln_graph_shape_t c_shape = {shape->rank - 1, {0}};
  c_shape.dims[0] = shape->dims[1];
  for (int32_t d = 1; d < c_shape.rank; ++d) c_shape.dims[d] = 1;
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_MUL, &out, shape, &scale,
                                                &c_shape, &out, shape));
  return kiln_lower_binary_ranges(l, KILN_BINARY_ADD, &out, shape, &bias, &c_shape, &out,
                                  shape);
}

// ArgMax / ArgMin into an int64 tensor (a graph output: nothing on the GPU
// reads int64 data yet) with one argreduce dispatch; one invocation scans
// an axis, so the axis and the grid-stride passes must fit the loop budget.
kiln_status_t kiln_lower_argreduce(const kiln_lower_t* l) {
  const kiln_graph_shape_t* x = &kiln_lower_in(l, 0)->shape;
  int64_t axis_attr = 0, last = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", 0, &axis_attr));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "select_last_index", 0, &last));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, x->rank, &axis));
  uint64_t outer = kiln_lower_dims(x, 0, axis), size = (uint64_t)x->dims[axis];
  uint64_t inner = kiln_lower_dims(x, axis + 1, x->rank);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, 2 * outer * inner));
  // Grid-stride passes with the smallest workgroup (1 lane) bound below.
  uint64_t passes = (outer * inner + KILN_KERNEL_MAX_GRID_X - 1) / KILN_KERNEL_MAX_GRID_X;
  if (size * passes >= KILN_KERNEL_MAX_LOOP_ITERATIONS) {
    return kiln_lower_refuse(l, "an axis of %llu values over %llu outputs passes the %u loop "
                             "iterations one invocation may run",
                             (unsigned long long)size, (unsigned long long)(outer * inner),
                             KILN_KERNEL_MAX_LOOP_ITERATIONS);
  }
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (!y || y->dtype != KILN_GRAPH_DTYPE_I64 || !y->is_output) {
    return kiln_lower_refuse(l, "the int64 indices run on the GPU only as a graph output");
  }
  kiln_kernel_reduce_params_t p = {(uint32_t)outer, (uint32_t)size, (uint32_t)inner, 0, 0.0f};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_ARGREDUCE, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = outer * inner};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_emit_value_range(l->program, l->node->outputs[0], &desc.bindings[1]));
  kiln_kernel_spec_value_t ops[] = {
      {KILN_SPEC_ARG_MIN, strcmp(l->node->op_type, "ArgMin") == 0},
      {KILN_SPEC_ARG_SELECT_LAST, last != 0}};
  desc.ops = ops;
  desc.op_count = 2;
  return kiln_emit_add_dispatch(l->program, &desc);
}
