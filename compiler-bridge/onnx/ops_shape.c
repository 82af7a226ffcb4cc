// Shape and metadata ops: Shape, Constant, Reshape, Flatten, Squeeze,
// Unsqueeze. They only reinterpret bytes, so every dtype works.
#include <string.h>

#include "ops.h"

#define KILN_MAX_LIST 64

static size_t kiln_elem(const kiln_ref_tensor_t* t) {
  return kiln_graph_dtype_size(t->dtype);
}

static kiln_status_t kiln_run_copy_bytes(const kiln_op_run_args_t* args) {
  size_t bytes = args->outputs[0].count * kiln_elem(&args->outputs[0]);
  if (bytes) memcpy(args->outputs[0].data, args->inputs[0].data, bytes);
  return kiln_ok_status();
}

// ---- Shape ---------------------------------------------------------------

static void kiln_shape_range(const kiln_graph_node_t* node, int32_t rank,
                             int64_t* out_start, int64_t* out_end) {
  int64_t start = 0, end = rank;
  const kiln_graph_attr_t* a = kiln_graph_node_find_attr(node, "start");
  const kiln_graph_attr_t* b = kiln_graph_node_find_attr(node, "end");
  if (a && a->type == KILN_GRAPH_ATTR_INT) start = a->i;
  if (b && b->type == KILN_GRAPH_ATTR_INT) end = b->i;
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = start < 0 ? 0 : (start > rank ? rank : start);
  end = end < 0 ? 0 : (end > rank ? rank : end);
  if (end < start) end = start;
  *out_start = start;
  *out_end = end;
}

static kiln_status_t kiln_infer_shape(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY | KILN_OP_QUANT, &x));
  int64_t ignored;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "start", 0, &ignored));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "end", 0, &ignored));
  int64_t start, end;
  kiln_shape_range(args->node, x->shape.rank, &start, &end);
  kiln_graph_shape_t shape = {1, {end - start}};
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I64, &shape);
}

static kiln_status_t kiln_run_shape(const kiln_op_run_args_t* args) {
  int64_t start, end;
  kiln_shape_range(args->node, args->inputs[0].shape.rank, &start, &end);
  for (int64_t i = start; i < end; ++i) {
    ((int64_t*)args->outputs[0].data)[i - start] =
        args->inputs[0].shape.dims[i];
  }
  return kiln_ok_status();
}

// ---- Constant ------------------------------------------------------------

static kiln_status_t kiln_infer_constant_shape(
    const kiln_op_infer_args_t* args) {
  const kiln_graph_node_t* node = args->node;
  if (node->attr_count != 1) {
    return kiln_op_invalid(args, "needs exactly one value attribute");
  }
  const kiln_graph_attr_t* attr = &node->attrs[0];
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  if (strcmp(attr->name, "value") == 0 && attr->type == KILN_GRAPH_ATTR_TENSOR) {
    const kiln_graph_value_t* t = &args->graph->values[attr->tensor];
    return kiln_op_set_output(args, 0, t->dtype, &t->shape);
  }
  if (strcmp(attr->name, "value_float") == 0 &&
      attr->type == KILN_GRAPH_ATTR_FLOAT) {
    return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
  }
  if (strcmp(attr->name, "value_int") == 0 &&
      attr->type == KILN_GRAPH_ATTR_INT) {
    return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I64, &shape);
  }
  shape.rank = 1;
  shape.dims[0] = (int64_t)attr->count;
  if (strcmp(attr->name, "value_floats") == 0 &&
      attr->type == KILN_GRAPH_ATTR_FLOATS) {
    return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
  }
  if (strcmp(attr->name, "value_ints") == 0 &&
      attr->type == KILN_GRAPH_ATTR_INTS) {
    return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I64, &shape);
  }
  return kiln_op_unsupported(args, "attribute '%s' is not supported; "
                             "supported: value (tensor), value_float, "
                             "value_floats, value_int, value_ints",
                             attr->name);
}

// Constant's output gets its contents during inference (below), so it is
// never executed.
static kiln_status_t kiln_run_constant(const kiln_op_run_args_t* args) {
  return kiln_make_status(KILN_STATUS_INTERNAL,
                          "node '%s' (Constant) should have been folded at "
                          "import", args->node->name);
}

static kiln_status_t kiln_infer_constant(const kiln_op_infer_args_t* args) {
  KILN_RETURN_IF_ERROR(kiln_infer_constant_shape(args));
  int32_t out = args->node->outputs[0];
  if (out < 0) return kiln_ok_status();
  const kiln_graph_attr_t* attr = &args->node->attrs[0];
  const void* data = NULL;
  switch (attr->type) {
    case KILN_GRAPH_ATTR_TENSOR: data = args->graph->values[attr->tensor].data; break;
    case KILN_GRAPH_ATTR_FLOAT: data = &attr->f; break;
    case KILN_GRAPH_ATTR_INT: data = &attr->i; break;
    case KILN_GRAPH_ATTR_FLOATS: data = attr->floats; break;
    default: data = attr->ints; break;
  }
  return kiln_graph_value_set_data(args->graph, out, data);
}

// ---- Reshape, Flatten, Squeeze, Unsqueeze --------------------------------

static kiln_status_t kiln_infer_reshape(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY | KILN_OP_QUANT, &x));
  int64_t dims[KILN_MAX_LIST];
  size_t count = 0;
  KILN_RETURN_IF_ERROR(
      kiln_op_constant_ints(args, 1, dims, KILN_GRAPH_MAX_RANK, &count));
  int64_t allowzero = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "allowzero", 0, &allowzero));
  size_t total = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&x->shape, &total));
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = (int32_t)count;
  int inferred = -1;
  size_t known = 1;
  for (size_t i = 0; i < count; ++i) {
    int64_t d = dims[i];
    if (d == 0 && !allowzero) {
      if ((int32_t)i >= x->shape.rank) {
        return kiln_op_invalid(args, "shape[%zu] = 0 copies a dim the input "
                               "lacks", i);
      }
      d = x->shape.dims[i];
    }
    if (d == -1) {
      if (inferred >= 0) return kiln_op_invalid(args, "more than one -1");
      inferred = (int)i;
      continue;
    }
    if (d < 0) return kiln_op_invalid(args, "shape[%zu] = %lld", i, (long long)d);
    shape.dims[i] = d;
    known *= (size_t)d;
    if (known > (size_t)KILN_GRAPH_MAX_ELEMENTS) {
      return kiln_op_invalid(args, "shape too large");
    }
  }
  if (inferred >= 0) {
    if (known == 0 || total % known) {
      return kiln_op_invalid(args, "cannot infer -1: %zu elements into %zu",
                             total, known);
    }
    shape.dims[inferred] = (int64_t)(total / known);
    known = total;
  }
  if (known != total) {
    return kiln_op_invalid(args, "reshape of %zu elements into %zu", total,
                           known);
  }
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

static kiln_status_t kiln_infer_flatten(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY | KILN_OP_QUANT, &x));
  int64_t axis = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", 1, &axis));
  int32_t rank = x->shape.rank;
  if (axis < -rank || axis > rank) {
    return kiln_op_invalid(args, "axis %lld out of range", (long long)axis);
  }
  if (axis < 0) axis += rank;
  kiln_graph_shape_t shape = {2, {1, 1}};
  for (int32_t i = 0; i < rank; ++i) shape.dims[i < axis ? 0 : 1] *= x->shape.dims[i];
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

// Axes from the attribute (old opsets) or input 1 (opset 13+).
static kiln_status_t kiln_axes_list(const kiln_op_infer_args_t* args,
                                    int64_t* axes, size_t* out_count,
                                    bool* out_present) {
  *out_count = 0;
  *out_present = false;
  if (args->graph->opset >= 13) {
    if (!kiln_op_input(args, 1)) return kiln_ok_status();
    *out_present = true;
    return kiln_op_constant_ints(args, 1, axes, KILN_MAX_LIST, out_count);
  }
  const int64_t* list = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_ints(args->node, "axes", &list, out_count));
  if (*out_count > KILN_MAX_LIST) return kiln_op_invalid(args, "too many axes");
  *out_present = list != NULL;
  if (*out_count) memcpy(axes, list, *out_count * sizeof(int64_t));
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_squeeze(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY | KILN_OP_QUANT, &x));
  int64_t axes[KILN_MAX_LIST];
  size_t count = 0;
  bool present = false;
  KILN_RETURN_IF_ERROR(kiln_axes_list(args, axes, &count, &present));
  bool drop[KILN_GRAPH_MAX_RANK] = {false};
  if (!present) {
    for (int32_t i = 0; i < x->shape.rank; ++i) drop[i] = x->shape.dims[i] == 1;
  }
  for (size_t i = 0; i < count; ++i) {
    int32_t axis;
    KILN_RETURN_IF_ERROR(kiln_op_axis(args, axes[i], x->shape.rank, &axis));
    if (x->shape.dims[axis] != 1) {
      return kiln_op_invalid(args, "cannot squeeze axis %d of size %lld",
                             (int)axis, (long long)x->shape.dims[axis]);
    }
    drop[axis] = true;
  }
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  for (int32_t i = 0; i < x->shape.rank; ++i) {
    if (!drop[i]) shape.dims[shape.rank++] = x->shape.dims[i];
  }
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

static kiln_status_t kiln_infer_unsqueeze(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY | KILN_OP_QUANT, &x));
  int64_t axes[KILN_MAX_LIST];
  size_t count = 0;
  bool present = false;
  KILN_RETURN_IF_ERROR(kiln_axes_list(args, axes, &count, &present));
  if (!present) return kiln_op_invalid(args, "axes are required");
  int32_t rank = x->shape.rank + (int32_t)count;
  if (rank > KILN_GRAPH_MAX_RANK) {
    return kiln_op_unsupported(args, "result rank %d exceeds %d", (int)rank,
                               KILN_GRAPH_MAX_RANK);
  }
  bool inserted[KILN_GRAPH_MAX_RANK] = {false};
  for (size_t i = 0; i < count; ++i) {
    int32_t axis;
    KILN_RETURN_IF_ERROR(kiln_op_axis(args, axes[i], rank, &axis));
    if (inserted[axis]) return kiln_op_invalid(args, "repeated axis %d", (int)axis);
    inserted[axis] = true;
  }
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = rank;
  int32_t source = 0;
  for (int32_t i = 0; i < rank; ++i) {
    shape.dims[i] = inserted[i] ? 1 : x->shape.dims[source++];
  }
  return kiln_op_set_output(args, 0, x->dtype, &shape);
}

const kiln_op_def_t kiln_ops_shape[] = {
    {"Shape", "start,end", 1, 1, 1, 1, kiln_infer_shape, kiln_run_shape},
    {"Constant", "value,value_float,value_floats,value_int,value_ints", 0, 0,
     1, 1, kiln_infer_constant, kiln_run_constant},
    {"Reshape", "allowzero", 2, 2, 1, 1, kiln_infer_reshape,
     kiln_run_copy_bytes, 5},
    {"Flatten", "axis", 1, 1, 1, 1, kiln_infer_flatten, kiln_run_copy_bytes},
    {"Squeeze", "axes", 1, 2, 1, 1, kiln_infer_squeeze, kiln_run_copy_bytes},
    {"Unsqueeze", "axes", 1, 2, 1, 1, kiln_infer_unsqueeze,
     kiln_run_copy_bytes},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
