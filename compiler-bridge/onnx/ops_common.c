// Helpers every op family uses: error messages, input checks, constants,
// axes, broadcasting, strides.
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

char* kiln_op_format_alloc_v(const char* format, va_list list) {
  va_list copy;
  va_copy(copy, list);
  int length = vsnprintf(NULL, 0, format, copy);
  va_end(copy);
  if (length < 0) return NULL;
  char* text = (char*)malloc((size_t)length + 1);
  if (text) vsnprintf(text, (size_t)length + 1, format, list);
  return text;
}

// The detail is formatted at its full length: a refusal that lists the
// supported ops must not be cut off.
static kiln_status_t kiln_op_status_v(const kiln_op_infer_args_t* args,
                                      kiln_status_code_t code,
                                      const char* suffix, const char* format,
                                      va_list list) {
  char* detail = kiln_op_format_alloc_v(format, list);
  kiln_status_t status = kiln_make_status(
      code, "node '%s' (op %s, opset %lld): %s%s", args->node->name,
      args->node->op_type, (long long)args->graph->opset,
      detail ? detail : format, suffix);
  free(detail);
  return status;
}

kiln_status_t kiln_op_unsupported(const kiln_op_infer_args_t* args,
                                  const char* format, ...) {
  va_list list;
  va_start(list, format);
  kiln_status_t status =
      kiln_op_status_v(args, KILN_STATUS_UNIMPLEMENTED, "", format, list);
  va_end(list);
  return status;
}

kiln_status_t kiln_op_invalid(const kiln_op_infer_args_t* args,
                              const char* format, ...) {
  va_list list;
  va_start(list, format);
  kiln_status_t status =
      kiln_op_status_v(args, KILN_STATUS_INVALID_ARGUMENT, "", format, list);
  va_end(list);
  return status;
}

const kiln_graph_value_t* kiln_op_input(const kiln_op_infer_args_t* args,
                                        size_t index) {
  return kiln_graph_node_input(args->graph, args->node, index);
}

static void kiln_op_mask_names(unsigned mask, char* buffer, size_t size) {
  buffer[0] = 0;
  for (int d = KILN_GRAPH_DTYPE_F32; d <= KILN_GRAPH_DTYPE_U8; ++d) {
    if (!(mask & (1u << d))) continue;
    size_t used = strlen(buffer);
    snprintf(buffer + used, size - used, "%s%s", used ? ", " : "",
             kiln_graph_dtype_name((kiln_graph_dtype_t)d));
  }
}

kiln_status_t kiln_op_require_input(const kiln_op_infer_args_t* args,
                                    size_t index, unsigned dtype_mask,
                                    const kiln_graph_value_t** out_value) {
  *out_value = NULL;
  const kiln_graph_value_t* value = kiln_op_input(args, index);
  if (!value) {
    return kiln_op_invalid(args, "input %zu is required", index);
  }
  if (!value->has_shape) {
    return kiln_op_invalid(args, "input %zu ('%s') has no known shape", index,
                           value->name);
  }
  if (!(dtype_mask & (1u << value->dtype))) {
    char names[96];
    kiln_op_mask_names(dtype_mask, names, sizeof(names));
    return kiln_op_unsupported(args,
                               "input %zu ('%s') has dtype %s; supported: %s",
                               index, value->name,
                               kiln_graph_dtype_name(value->dtype), names);
  }
  *out_value = value;
  return kiln_ok_status();
}

kiln_status_t kiln_op_set_output(const kiln_op_infer_args_t* args,
                                 size_t index, kiln_graph_dtype_t dtype,
                                 const kiln_graph_shape_t* shape) {
  if (index >= args->node->output_count || args->node->outputs[index] < 0) {
    return kiln_ok_status();
  }
  size_t count = 0;
  KILN_RETURN_IF_ERROR_ANNOTATE(kiln_graph_shape_element_count(shape, &count),
                                "node '%s' (op %s): output %zu",
                                args->node->name, args->node->op_type, index);
  kiln_graph_value_t* value = &args->graph->values[args->node->outputs[index]];
  value->dtype = dtype;
  value->shape = *shape;
  value->has_shape = true;
  return kiln_ok_status();
}

kiln_status_t kiln_op_constant_ints(const kiln_op_infer_args_t* args,
                                    size_t index, int64_t* values,
                                    size_t capacity, size_t* out_count) {
  *out_count = 0;
  const kiln_graph_value_t* value = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_op_require_input(args, index, KILN_OP_INDEX, &value));
  if (!value->data) {
    return kiln_op_unsupported(
        args, "input %zu ('%s') must be a constant (static shapes only)", index,
        value->name);
  }
  if (value->shape.rank > 1) {
    return kiln_op_invalid(args, "input %zu ('%s') must be 1-D", index,
                           value->name);
  }
  size_t count = value->shape.rank == 0 ? 1 : (size_t)value->shape.dims[0];
  if (count > capacity) {
    return kiln_op_unsupported(args, "input %zu ('%s') has %zu values; at "
                               "most %zu", index, value->name, count, capacity);
  }
  for (size_t i = 0; i < count; ++i) {
    values[i] = value->dtype == KILN_GRAPH_DTYPE_I64
                    ? ((const int64_t*)value->data)[i]
                    : ((const int32_t*)value->data)[i];
  }
  *out_count = count;
  return kiln_ok_status();
}

kiln_status_t kiln_op_axis(const kiln_op_infer_args_t* args, int64_t axis,
                           int32_t rank, int32_t* out_axis) {
  *out_axis = 0;
  if (axis < -(int64_t)rank || axis >= rank) {
    return kiln_op_invalid(args, "axis %lld is out of range for rank %d",
                           (long long)axis, (int)rank);
  }
  *out_axis = (int32_t)(axis < 0 ? axis + rank : axis);
  return kiln_ok_status();
}

kiln_status_t kiln_op_attr_choice(const kiln_op_infer_args_t* args,
                                  const char* name, const char* fallback,
                                  const char* const* choices,
                                  const char** out_value) {
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(args->node, name, fallback, out_value));
  char list[256] = {0};
  for (size_t i = 0; choices[i]; ++i) {
    if (strcmp(*out_value, choices[i]) == 0) return kiln_ok_status();
    size_t used = strlen(list);
    snprintf(list + used, sizeof(list) - used, "%s%s", i ? ", " : "",
             choices[i]);
  }
  return kiln_op_unsupported(args, "%s='%s' is not supported; supported: %s",
                             name, *out_value, list);
}

kiln_status_t kiln_op_broadcast(const kiln_op_infer_args_t* args,
                                const kiln_graph_shape_t* a,
                                const kiln_graph_shape_t* b,
                                kiln_graph_shape_t* out_shape) {
  memset(out_shape, 0, sizeof(*out_shape));
  int32_t rank = a->rank > b->rank ? a->rank : b->rank;
  out_shape->rank = rank;
  for (int32_t i = 0; i < rank; ++i) {
    int32_t ia = i - (rank - a->rank);
    int32_t ib = i - (rank - b->rank);
    int64_t da = ia >= 0 ? a->dims[ia] : 1;
    int64_t db = ib >= 0 ? b->dims[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      return kiln_op_invalid(args, "shapes do not broadcast (dim %d: %lld vs "
                             "%lld)", (int)i, (long long)da, (long long)db);
    }
    out_shape->dims[i] = da == 1 ? db : da;
  }
  return kiln_ok_status();
}

int64_t kiln_ref_index_at(const kiln_ref_tensor_t* tensor, size_t i) {
  if (tensor->dtype == KILN_GRAPH_DTYPE_I64) {
    return ((const int64_t*)tensor->data)[i];
  }
  return ((const int32_t*)tensor->data)[i];
}

void kiln_ref_contiguous_strides(const kiln_graph_shape_t* shape,
                                 int64_t* strides) {
  int64_t stride = 1;
  for (int32_t i = shape->rank; i-- > 0;) {
    strides[i] = stride;
    stride *= shape->dims[i];
  }
}

void kiln_ref_broadcast_strides(const kiln_graph_shape_t* shape,
                                const kiln_graph_shape_t* out_shape,
                                int64_t* strides) {
  int64_t own[KILN_GRAPH_MAX_RANK];
  kiln_ref_contiguous_strides(shape, own);
  int32_t offset = out_shape->rank - shape->rank;
  for (int32_t i = 0; i < out_shape->rank; ++i) {
    int32_t j = i - offset;
    strides[i] = (j < 0 || shape->dims[j] == 1) ? 0 : own[j];
  }
}
