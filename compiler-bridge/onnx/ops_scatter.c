// Element-indexed ops. ScatterND: what exporters emit for in-place slice
// assignment (x[a:b, c:d] = v), typically on constant masks that folding
// evaluates (Swin's shifted-window attention mask); reference only, the GPU
// path sees it folded away or refuses it. GatherElements (torch.gather):
// Hugging Face BERT's token-type ids gather a constant buffer by constant
// positions, which folding evaluates; with constant indices and run-time
// data it lowers to the gather kernel (onnx-emit/lower_data.c).
#include <string.h>

#include "ops.h"

static const char* const kKiln_scatter_reductions[] = {"none", "add", "mul", "max", "min", NULL};

static kiln_status_t kiln_infer_scatter_nd(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* data = NULL;
  const kiln_graph_value_t* indices = NULL;
  const kiln_graph_value_t* updates = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &data));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_I64, &indices));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 2, 1u << data->dtype, &updates));
  const char* reduction = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_op_attr_choice(args, "reduction", "none", kKiln_scatter_reductions, &reduction));
  // max/min came with ScatterND-18.
  if ((strcmp(reduction, "max") == 0 || strcmp(reduction, "min") == 0) &&
      args->graph->opset < 18) {
    return kiln_op_invalid(args, "reduction '%s' needs opset 18", reduction);
  }
  if (strcmp(reduction, "none") != 0 && data->dtype == KILN_GRAPH_DTYPE_BOOL) {
    return kiln_op_unsupported(args, "reduction '%s' on bool data", reduction);
  }
  int32_t q = indices->shape.rank, r = data->shape.rank;
  if (q < 1) return kiln_op_invalid(args, "indices must have rank >= 1");
  int64_t k = indices->shape.dims[q - 1];
  if (k < 1 || k > r) {
    return kiln_op_invalid(args, "indices' last dim %lld must be in [1, %d]", (long long)k,
                           (int)r);
  }
  // updates.shape == indices.shape[:-1] + data.shape[k:]
  kiln_graph_shape_t expected;
  memset(&expected, 0, sizeof(expected));
  for (int32_t d = 0; d < q - 1; ++d) expected.dims[expected.rank++] = indices->shape.dims[d];
  for (int32_t d = (int32_t)k; d < r; ++d) {
    if (expected.rank == KILN_GRAPH_MAX_RANK) {
      return kiln_op_unsupported(args, "updates rank exceeds %d", KILN_GRAPH_MAX_RANK);
    }
    expected.dims[expected.rank++] = data->shape.dims[d];
  }
  if (!kiln_graph_shape_equal(&expected, &updates->shape)) {
    return kiln_op_invalid(args, "updates shape does not match indices and data");
  }
  return kiln_op_set_output(args, 0, data->dtype, &data->shape);
}

static void kiln_scatter_combine(kiln_graph_dtype_t dtype, char reduction, void* dst,
                                 const void* src, size_t count) {
  size_t elem = kiln_graph_dtype_size(dtype);
  if (reduction == 'n') {
    memcpy(dst, src, count * elem);
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    switch (dtype) {
      case KILN_GRAPH_DTYPE_F32: {
        float* d = (float*)dst + i;
        float s = ((const float*)src)[i];
        *d = reduction == 'a' ? *d + s : reduction == 'x' ? (s > *d ? s : *d)
             : reduction == 'i' ? (s < *d ? s : *d) : *d * s;
        break;
      }
      case KILN_GRAPH_DTYPE_I64: {
        int64_t* d = (int64_t*)dst + i;
        uint64_t s = (uint64_t)((const int64_t*)src)[i];
        int64_t v = (int64_t)s;
        *d = reduction == 'x' ? (v > *d ? v : *d) : reduction == 'i' ? (v < *d ? v : *d)
             : (int64_t)(reduction == 'a' ? (uint64_t)*d + s : (uint64_t)*d * s);
        break;
      }
      case KILN_GRAPH_DTYPE_I32: {
        int32_t* d = (int32_t*)dst + i;
        uint32_t s = (uint32_t)((const int32_t*)src)[i];
        int32_t v = (int32_t)s;
        *d = reduction == 'x' ? (v > *d ? v : *d) : reduction == 'i' ? (v < *d ? v : *d)
             : (int32_t)(reduction == 'a' ? (uint32_t)*d + s : (uint32_t)*d * s);
        break;
      }
      default:
        break;  // bool reductions are refused by the checker
    }
  }
}

static kiln_status_t kiln_run_scatter_nd(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* data = &args->inputs[0];
  const kiln_ref_tensor_t* indices = &args->inputs[1];
  const kiln_ref_tensor_t* updates = &args->inputs[2];
  kiln_ref_tensor_t* out = &args->outputs[0];
  const char* reduction = "none";
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(args->node, "reduction", "none", &reduction));
  // 'n'one, 'a'dd, 'm'ul, ma'x', m'i'n.
  char code = strcmp(reduction, "max") == 0   ? 'x'
              : strcmp(reduction, "min") == 0 ? 'i'
                                              : reduction[0];
  size_t elem = kiln_graph_dtype_size(data->dtype);
  if (data->count) memcpy(out->data, data->data, data->count * elem);
  int32_t q = indices->shape.rank, r = data->shape.rank;
  int64_t k = indices->shape.dims[q - 1];
  size_t slice = 1;  // elements per index tuple
  for (int32_t d = (int32_t)k; d < r; ++d) slice *= (size_t)data->shape.dims[d];
  size_t tuples = k ? indices->count / (size_t)k : 0;
  const int64_t* index = (const int64_t*)indices->data;
  for (size_t t = 0; t < tuples; ++t) {
    size_t offset = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t dim = data->shape.dims[j];
      int64_t i = index[t * (size_t)k + (size_t)j];
      if (i < 0) i += dim;
      if (i < 0 || i >= dim) {
        return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                                "node '%s' (ScatterND): index %lld out of range for dim %lld",
                                args->node->name,
                                (long long)index[t * (size_t)k + (size_t)j], (long long)dim);
      }
      offset = offset * (size_t)dim + (size_t)i;
    }
    kiln_scatter_combine(data->dtype, code, (uint8_t*)out->data + offset * slice * elem,
                         (const uint8_t*)updates->data + t * slice * elem, slice);
  }
  return kiln_ok_status();
}

// GatherElements: y has the indices' shape; y[..., j, ...] = data[...,
// indices[..., j, ...], ...] along `axis`. Every other dim of indices is at
// most data's (the operator's rule; each index tuple reads inside data).
static kiln_status_t kiln_infer_gather_elements(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* data = NULL;
  const kiln_graph_value_t* indices = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &data));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_INDEX, &indices));
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  int32_t axis;
  KILN_RETURN_IF_ERROR(kiln_op_axis(args, axis_attr, data->shape.rank, &axis));
  if (indices->shape.rank != data->shape.rank) {
    return kiln_op_invalid(args, "indices have rank %d, data rank %d",
                           (int)indices->shape.rank, (int)data->shape.rank);
  }
  for (int32_t d = 0; d < data->shape.rank; ++d) {
    if (d != axis && indices->shape.dims[d] > data->shape.dims[d]) {
      return kiln_op_invalid(args, "indices dim %d is %lld, past data's %lld", (int)d,
                             (long long)indices->shape.dims[d], (long long)data->shape.dims[d]);
    }
  }
  return kiln_op_set_output(args, 0, data->dtype, &indices->shape);
}

kiln_status_t kiln_gather_elements_offset(const kiln_graph_shape_t* data,
                                          const kiln_graph_shape_t* indices, int32_t axis,
                                          size_t position, int64_t index, size_t* out_offset) {
  const int64_t dim = data->dims[axis];
  if (index < 0) index += dim;
  if (index < 0 || index >= dim) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "index out of range for dim %lld",
                            (long long)dim);
  }
  // position's coordinates in indices (last dim fastest), axis replaced.
  size_t offset = 0, stride = 1, rest = position;
  for (int32_t d = indices->rank - 1; d >= 0; --d) {
    const size_t extent = (size_t)indices->dims[d];
    const size_t coord = d == axis ? (size_t)index : rest % extent;
    rest /= extent;
    offset += coord * stride;
    stride *= (size_t)data->dims[d];
  }
  *out_offset = offset;
  return kiln_ok_status();
}

static kiln_status_t kiln_run_gather_elements(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* data = &args->inputs[0];
  const kiln_ref_tensor_t* indices = &args->inputs[1];
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", 0, &axis_attr));
  const int32_t axis = (int32_t)(axis_attr < 0 ? axis_attr + data->shape.rank : axis_attr);
  const size_t elem = kiln_graph_dtype_size(data->dtype);
  uint8_t* dst = (uint8_t*)args->outputs[0].data;
  for (size_t i = 0; i < indices->count; ++i) {
    size_t offset = 0;
    kiln_status_t status = kiln_gather_elements_offset(
        &data->shape, &indices->shape, axis, i, kiln_ref_index_at(indices, i), &offset);
    if (status) {
      kiln_status_free(status);
      return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                              "node '%s' (GatherElements): index %lld at %zu out of range for "
                              "dim %lld",
                              args->node->name, (long long)kiln_ref_index_at(indices, i), i,
                              (long long)data->shape.dims[axis]);
    }
    memcpy(dst + i * elem, (const uint8_t*)data->data + offset * elem, elem);
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_scatter[] = {
    {"ScatterND", "reduction", 3, 3, 1, 1, kiln_infer_scatter_nd, kiln_run_scatter_nd, 11},
    {"GatherElements", "axis", 2, 2, 1, 1, kiln_infer_gather_elements, kiln_run_gather_elements,
     11},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
