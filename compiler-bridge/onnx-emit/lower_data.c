// Data movement: Transpose, Concat and Slice (strided_copy), Gather with
// constant or run-time (token id) indices, Pad.
#include <stdint.h>
#include <string.h>

#include "lower_util.h"

static void kiln_lower_contiguous(const kiln_graph_shape_t* shape, int64_t* strides) {
  int64_t stride = 1;
  for (int32_t d = shape->rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape->dims[d];
  }
}

kiln_status_t kiln_lower_strided_copy(const kiln_lower_t* l,
                                             const kiln_emit_range_t* in,
                                             const kiln_emit_range_t* out,
                                             const kiln_graph_shape_t* shape,
                                             const int64_t* in_strides,
                                             const int64_t* out_strides,
                                             int64_t in_offset, int64_t out_offset) {
  if (shape->rank > KILN_KERNEL_MAX_RANK) {
    return kiln_lower_refuse(l, "rank %d exceeds the kernels' %d", shape->rank,
                             KILN_KERNEL_MAX_RANK);
  }
  kiln_kernel_strided_copy_params_t p;
  memset(&p, 0, sizeof(p));
  p.count = (uint32_t)kiln_lower_count(shape);
  if (p.count == 0) return kiln_ok_status();
  // Fewer dims, fewer divisions per element (the kernel's cost): dims of 1
  // go, and a dim merges into the one inside it where both sides step
  // through them as through one (a conv's images and channels in its
  // column gather; a transpose's untouched dims).
  int64_t dims[KILN_KERNEL_MAX_RANK], in_s[KILN_KERNEL_MAX_RANK], out_s[KILN_KERNEL_MAX_RANK];
  int32_t rank = 0;
  for (int32_t d = 0; d < shape->rank; ++d) {
    if (shape->dims[d] == 1) continue;
    if (rank > 0 && in_s[rank - 1] == in_strides[d] * shape->dims[d] &&
        out_s[rank - 1] == out_strides[d] * shape->dims[d]) {
      dims[rank - 1] *= shape->dims[d];
      in_s[rank - 1] = in_strides[d];
      out_s[rank - 1] = out_strides[d];
      continue;
    }
    dims[rank] = shape->dims[d], in_s[rank] = in_strides[d], out_s[rank] = out_strides[d];
    ++rank;
  }
  // The outermost dim at 0 (the kernel does not divide by it), the rest
  // right-aligned after ones.
  for (int32_t d = 0; d < KILN_KERNEL_MAX_RANK; ++d) p.shape[d] = 1;
  for (int32_t d = 0; d < rank; ++d) {
    const int32_t at = d == 0 ? 0 : KILN_KERNEL_MAX_RANK - rank + d;
    p.shape[at] = (uint32_t)dims[d];
    p.in_strides[at] = (int32_t)in_s[d];
    p.out_strides[at] = (uint32_t)out_s[d];
  }
  p.in_offset = (int32_t)in_offset;
  p.out_offset = (uint32_t)out_offset;
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_STRIDED_COPY, .push = &p,
                                    .binding_count = 2, .bindings = {*in, *out},
                                    .written_mask = 2u, .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = p.count};
  return kiln_emit_add_dispatch(l->program, &desc);
}

kiln_status_t kiln_lower_transpose(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  const int64_t* perm = NULL;
  size_t perm_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(l->node, "perm", &perm, &perm_count));
  int64_t in_strides[KILN_GRAPH_MAX_RANK], strides[KILN_GRAPH_MAX_RANK];
  int64_t out_strides[KILN_GRAPH_MAX_RANK];
  kiln_lower_contiguous(&x->shape, in_strides);
  kiln_lower_contiguous(&y->shape, out_strides);
  for (int32_t d = 0; d < y->shape.rank; ++d) {
    int64_t source = perm_count ? perm[d] : y->shape.rank - 1 - d;
    strides[d] = in_strides[source];
  }
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  // Moving only dims of size 1 keeps the bytes in order: no copy where the
  // plan gave the output its input's place, else a plain one.
  if (kiln_graph_transpose_is_view(l->graph, l->node)) {
    if (kiln_emit_same_range(&in, &out)) return kiln_ok_status();
    return kiln_lower_emit_copy(l->program, &in, &out,
                                out.length / kiln_emit_float_bytes(l->program),
                                KILN_EMIT_STORAGE_NODE);
  }
  return kiln_lower_strided_copy(l, &in, &out, &y->shape, strides, out_strides, 0, 0);
}

// Tile dispatches past this many are refused (each is one strided_copy).
#define KILN_LOWER_MAX_TILE_DISPATCHES 4096u

// Tile as strided copies: each tiled axis of length d repeated r times is
// viewed as two, [r, d], with input strides [0, stride]; axes of length 1
// need only the [r] part. A view past the kernel's rank 6 runs as one
// dispatch per index of its leading axes (at most 2 * rank - 6 of them).
kiln_status_t kiln_lower_tile(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (kiln_lower_count(&y->shape) == 0) return kiln_ok_status();
  int64_t x_strides[KILN_GRAPH_MAX_RANK];
  kiln_lower_contiguous(&x->shape, x_strides);
  enum { kMaxView = 2 * KILN_GRAPH_MAX_RANK };
  int64_t dims[kMaxView], in_strides[kMaxView], out_strides[kMaxView];
  int32_t rank = 0;
  for (int32_t d = 0; d < x->shape.rank; ++d) {
    int64_t dim = x->shape.dims[d], repeat = y->shape.dims[d] / dim;
    if (repeat != 1) {
      in_strides[rank] = 0;
      dims[rank++] = repeat;
    }
    if (dim != 1 || repeat == 1) {
      in_strides[rank] = x_strides[d];
      dims[rank++] = dim;
    }
  }
  int64_t stride = 1;
  for (int32_t d = rank; d-- > 0;) {
    out_strides[d] = stride;
    stride *= dims[d];
  }
  int32_t lead = rank > KILN_KERNEL_MAX_RANK ? rank - KILN_KERNEL_MAX_RANK : 0;
  uint64_t dispatches = 1;
  for (int32_t d = 0; d < lead; ++d) dispatches *= (uint64_t)dims[d];
  if (dispatches > KILN_LOWER_MAX_TILE_DISPATCHES) {
    return kiln_lower_refuse(l, "tiling needs %llu dispatches (more than %u)",
                             (unsigned long long)dispatches, KILN_LOWER_MAX_TILE_DISPATCHES);
  }
  kiln_graph_shape_t view = {rank - lead, {0}};
  for (int32_t d = lead; d < rank; ++d) view.dims[d - lead] = dims[d];
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  for (uint64_t i = 0; i < dispatches; ++i) {
    int64_t in_offset = 0, out_offset = 0;
    uint64_t rest = i;
    for (int32_t d = lead; d-- > 0;) {
      int64_t c = (int64_t)(rest % (uint64_t)dims[d]);
      rest /= (uint64_t)dims[d];
      in_offset += c * in_strides[d];
      out_offset += c * out_strides[d];
    }
    KILN_RETURN_IF_ERROR(kiln_lower_strided_copy(l, &in, &out, &view, in_strides + lead,
                                                 out_strides + lead, in_offset, out_offset));
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_concat(const kiln_lower_t* l) {
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", 0, &axis_attr));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, y->shape.rank, &axis));
  int64_t out_strides[KILN_GRAPH_MAX_RANK];
  kiln_lower_contiguous(&y->shape, out_strides);
  kiln_emit_range_t out;
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  int64_t position = 0;
  // The pieces write disjoint parts of the output: no barriers between them.
  l->program->disjoint_group = (uint32_t)(l->node - l->graph->nodes) + 1;
  kiln_status_t status = kiln_ok_status();
  for (size_t i = 0; i < l->node->input_count && !status; ++i) {
    const kiln_graph_value_t* x = kiln_lower_in(l, i);
    if (!x) continue;
    if (kiln_lower_count(&x->shape) == 0) continue;
    int64_t in_strides[KILN_GRAPH_MAX_RANK];
    kiln_lower_contiguous(&x->shape, in_strides);
    kiln_emit_range_t in;
    status = kiln_lower_in_range(l, i, &in);
    if (!status) {
      status = kiln_lower_strided_copy(l, &in, &out, &x->shape, in_strides, out_strides, 0,
                                       position * out_strides[axis]);
    }
    position += x->shape.dims[axis];
  }
  l->program->disjoint_group = 0;
  return status;
}

kiln_status_t kiln_lower_slice(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  const int64_t *starts = NULL, *axes = NULL, *steps = NULL, *ends = NULL;
  size_t count = 0, axes_count = 0, steps_count = 0, ends_count = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_const_ints(l, 1, &starts, &count));
  KILN_RETURN_IF_ERROR(kiln_lower_const_ints(l, 2, &ends, &ends_count));
  KILN_RETURN_IF_ERROR(kiln_lower_const_ints(l, 3, &axes, &axes_count));
  KILN_RETURN_IF_ERROR(kiln_lower_const_ints(l, 4, &steps, &steps_count));
  if (!starts) return kiln_lower_refuse(l, "Slice needs starts as an input (opset 10+)");
  int64_t in_strides[KILN_GRAPH_MAX_RANK], strides[KILN_GRAPH_MAX_RANK];
  int64_t out_strides[KILN_GRAPH_MAX_RANK];
  kiln_lower_contiguous(&x->shape, in_strides);
  kiln_lower_contiguous(&y->shape, out_strides);
  memcpy(strides, in_strides, sizeof(strides));
  int64_t offset = 0;
  for (size_t i = 0; i < count; ++i) {
    int32_t axis = 0;
    KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axes ? axes[i] : (int64_t)i, x->shape.rank, &axis));
    int64_t dim = x->shape.dims[axis];
    int64_t step = steps ? steps[i] : 1;
    int64_t start = starts[i];
    if (start < 0) start += dim;
    // Clamping as ONNX does: [0, dim] for positive steps, [0, dim-1] else.
    if (step > 0) {
      start = start < 0 ? 0 : (start > dim ? dim : start);
    } else {
      start = start < 0 ? 0 : (start > dim - 1 ? dim - 1 : start);
    }
    offset += start * in_strides[axis];
    strides[axis] = in_strides[axis] * step;
  }
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  return kiln_lower_strided_copy(l, &in, &out, &y->shape, strides, out_strides, offset, 0);
}

static kiln_status_t kiln_lower_gather_constant_indices(const kiln_lower_t* l,
                                                        const kiln_graph_value_t* indices,
                                                        int64_t axis_size,
                                                        size_t index_count,
                                                        kiln_emit_range_t* out_range);

kiln_status_t kiln_lower_gather(const kiln_lower_t* l) {
  const kiln_graph_value_t* data = kiln_lower_in(l, 0);
  const kiln_graph_value_t* indices = kiln_lower_in(l, 1);
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", 0, &axis_attr));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, data->shape.rank, &axis));
  int64_t axis_size = data->shape.dims[axis];
  size_t index_count = (size_t)kiln_lower_count(&indices->shape);
  if (index_count == 0) return kiln_lower_refuse(l, "no indices");
  kiln_emit_range_t index_range;
  uint32_t index_words = 1;
  if (indices->data) {
    KILN_RETURN_IF_ERROR(kiln_lower_gather_constant_indices(l, indices, axis_size,
                                                            index_count, &index_range));
  } else {
    // Run-time indices (token ids): the int64/int32 graph input bound as
    // is; the kernel reads int64 as two words per index, wraps negative ids
    // and yields zeros for ids still out of range (never an OOB read).
    KILN_RETURN_IF_ERROR(
        kiln_lower_int_range(l, l->node->inputs[1], &index_range, &index_words));
  }
  kiln_kernel_gather_params_t p = {
      (uint32_t)kiln_lower_dims(&data->shape, 0, axis), (uint32_t)axis_size,
      (uint32_t)kiln_lower_dims(&data->shape, axis + 1, data->shape.rank),
      (uint32_t)index_count};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_GATHER, .push = &p,
                                    .binding_count = 3, .written_mask = 4u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = (uint64_t)p.outer * p.index_count * p.inner};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  desc.bindings[1] = index_range;
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[2]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_GATHER_INDEX_WORDS, index_words}};
  desc.ops = ops;
  desc.op_count = index_words == 1 ? 0 : 1;
  return kiln_lower_add_gather(l, &desc, index_words);
}

// GatherElements with constant indices (torch.gather by positions known at
// export): each output's element of data is known at compile time, so it
// is one Gather of data viewed as [1, count, 1] by a table of flat int32
// offsets. Run-time indices have no kernel: refused.
kiln_status_t kiln_lower_gather_elements(const kiln_lower_t* l) {
  const kiln_graph_value_t* data = kiln_lower_in(l, 0);
  const kiln_graph_value_t* indices = kiln_lower_in(l, 1);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (!data || !indices || !y) return kiln_lower_refuse(l, "an absent input or output");
  if (!indices->data) {
    return kiln_lower_refuse(l, "indices '%s' are computed at run time; only constant "
                             "indices lower to the GPU", indices->name);
  }
  if (data->dtype != KILN_GRAPH_DTYPE_F32 && data->dtype != KILN_GRAPH_DTYPE_F16) {
    return kiln_lower_refuse(l, "data '%s' of type %s at run time (float data only)",
                             data->name, kiln_graph_dtype_name(data->dtype));
  }
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", 0, &axis_attr));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, data->shape.rank, &axis));
  const uint64_t data_count = kiln_lower_count(&data->shape);
  const uint64_t count = kiln_lower_count(&indices->shape);
  if (count == 0) return kiln_lower_refuse(l, "no indices");
  // The table holds int32 offsets (the kernel wraps negative ones): data
  // of more elements than int32 reaches is refused, never wrapped.
  if (data_count > (uint64_t)INT32_MAX) {
    return kiln_lower_refuse(l, "data '%s' has %llu elements; GatherElements reads at most "
                             "%d", data->name, (unsigned long long)data_count, INT32_MAX);
  }
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, count));
  int32_t* table = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator, count * sizeof(int32_t),
                                             (void**)&table));
  kiln_status_t status = kiln_ok_status();
  for (uint64_t i = 0; i < count && !status; ++i) {
    const int64_t index = indices->dtype == KILN_GRAPH_DTYPE_I64
                              ? ((const int64_t*)indices->data)[i]
                              : ((const int32_t*)indices->data)[i];
    size_t offset = 0;
    status = kiln_gather_elements_offset(&data->shape, &indices->shape, axis, (size_t)i, index,
                                         &offset);
    if (status) {
      kiln_status_free(status);
      status = kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                                "node '%s' (op GatherElements): index %lld at %llu out of "
                                "range for dim %lld",
                                l->node->name, (long long)index, (unsigned long long)i,
                                (long long)data->shape.dims[axis]);
    }
    table[i] = (int32_t)offset;
  }
  kiln_emit_range_t table_range;
  if (!status) {
    status = kiln_emit_add_weight(l->program, table, count * sizeof(int32_t), &table_range);
  }
  kiln_allocator_free(l->program->allocator, table);
  KILN_RETURN_IF_ERROR(status);
  kiln_kernel_gather_params_t p = {1, (uint32_t)data_count, 1, (uint32_t)count};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_GATHER, .push = &p,
                                    .binding_count = 3, .written_mask = 4u,
                                    .grid = KILN_EMIT_GRID_LINEAR, .grid_count = count};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  desc.bindings[1] = table_range;
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[2]));
  return kiln_lower_add_gather(l, &desc, 1);
}

// Constant indices are checked and narrowed to int32 at compile time.
static kiln_status_t kiln_lower_gather_constant_indices(const kiln_lower_t* l,
                                                        const kiln_graph_value_t* indices,
                                                        int64_t axis_size,
                                                        size_t index_count,
                                                        kiln_emit_range_t* out_range) {
  memset(out_range, 0, sizeof(*out_range));
  int32_t* converted = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator,
                                             index_count * sizeof(int32_t),
                                             (void**)&converted));
  for (size_t i = 0; i < index_count; ++i) {
    int64_t index = indices->dtype == KILN_GRAPH_DTYPE_I64
                        ? ((const int64_t*)indices->data)[i]
                        : ((const int32_t*)indices->data)[i];
    if (index < 0) index += axis_size;
    if (index < 0 || index >= axis_size) {
      kiln_allocator_free(l->program->allocator, converted);
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op Gather): index %zu out of range",
                              l->node->name, i);
    }
    converted[i] = (int32_t)index;
  }
  kiln_status_t status = kiln_emit_add_weight(l->program, converted,
                                              index_count * sizeof(int32_t), out_range);
  kiln_allocator_free(l->program->allocator, converted);
  return status;
}

kiln_status_t kiln_lower_pad(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  const char* mode = NULL;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(l->node, "mode", "constant", &mode));
  uint32_t mode_code = strcmp(mode, "reflect") == 0 ? KILN_PAD_REFLECT
                       : strcmp(mode, "edge") == 0  ? KILN_PAD_EDGE
                                                    : KILN_PAD_CONSTANT;
  const int64_t* pads = NULL;
  size_t pad_count = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_const_ints(l, 1, &pads, &pad_count));
  const int64_t *axes = NULL;
  size_t axes_count = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_const_ints(l, 3, &axes, &axes_count));
  if (axes || !pads || pad_count != 2 * (size_t)x->shape.rank) {
    return kiln_lower_refuse(l, "Pad needs constant pads for every axis");
  }
  float value = 0.0f;
  const kiln_graph_value_t* constant = kiln_lower_in(l, 2);
  if (constant) {
    if (!constant->data || constant->dtype != KILN_GRAPH_DTYPE_F32) {
      return kiln_lower_refuse(l, "constant_value must be a constant float");
    }
    memcpy(&value, constant->data, sizeof(float));
  }
  if (x->shape.rank > KILN_KERNEL_MAX_RANK) return kiln_lower_refuse(l, "rank > 6");
  kiln_kernel_pad_params_t p;
  memset(&p, 0, sizeof(p));
  p.count = (uint32_t)kiln_lower_count(&y->shape);
  p.value = value;
  // The outermost dim at the kernel's dim 0 (it does not divide by it),
  // the rest right-aligned after ones.
  const int32_t lead = KILN_KERNEL_MAX_RANK - x->shape.rank;
  for (int32_t d = 0; d < KILN_KERNEL_MAX_RANK; ++d) {
    const int32_t v = d == 0 ? 0 : d - lead;
    const bool one = x->shape.rank == 0 || (d != 0 && v < 1);
    p.out_shape[d] = one ? 1 : (uint32_t)y->shape.dims[v];
    p.in_shape[d] = one ? 1 : (uint32_t)x->shape.dims[v];
    // A negative pad crops: the kernel reads from -pad_begin on.
    p.pad_begin[d] = one ? 0 : (int32_t)pads[v];
  }
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_PAD, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR, .grid_count = p.count};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[1]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_PAD_MODE, mode_code}};
  desc.ops = ops;
  desc.op_count = 1;
  return kiln_emit_add_dispatch(l->program, &desc);
}
