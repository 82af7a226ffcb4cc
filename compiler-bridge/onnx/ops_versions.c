// Rewrites newer op versions (opset 18+) and older ones (attributes that
// later became inputs: Clip-6, Pad-2, Slice-1) into the forms the rest of
// kiln already handles, at shape inference: the reference executor, the
// passes and the GPU lowering then see one form per op. Pad-18 `axes`,
// Resize-18 `axes` and Split-18 `num_outputs` are expanded here; the
// checkers call these before reading their inputs.
#include <float.h>
#include <string.h>

#include "ops.h"

kiln_status_t kiln_op_replace_input(const kiln_op_infer_args_t* args,
                                    size_t index, kiln_graph_dtype_t dtype,
                                    const void* data, size_t count) {
  if (index >= args->node->input_count) {
    return kiln_op_invalid(args, "no input %zu to replace", index);
  }
  kiln_graph_shape_t shape;
  memset(&shape, 0, sizeof(shape));
  shape.rank = 1;
  shape.dims[0] = (int64_t)count;
  int32_t id = -1;
  // Adding a value may move graph->values: callers re-read their pointers.
  KILN_RETURN_IF_ERROR(
      kiln_graph_add_constant(args->graph, NULL, dtype, &shape, data, &id));
  args->node->inputs[index] = id;
  return kiln_ok_status();
}

void kiln_op_drop_attr(const kiln_op_infer_args_t* args, const char* name) {
  kiln_graph_node_t* node = args->node;
  for (size_t i = 0; i < node->attr_count; ++i) {
    if (strcmp(node->attrs[i].name, name) == 0) {
      node->attrs[i] = node->attrs[--node->attr_count];
      return;
    }
  }
}

kiln_status_t kiln_op_axes_list(const kiln_op_infer_args_t* args,
                                const int64_t* axes, size_t count,
                                int32_t rank, int32_t* out_axes) {
  bool seen[KILN_GRAPH_MAX_RANK] = {false};
  for (size_t i = 0; i < count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_op_axis(args, axes[i], rank, &out_axes[i]));
    if (seen[out_axes[i]]) {
      return kiln_op_invalid(args, "axis %lld is listed twice",
                             (long long)axes[i]);
    }
    seen[out_axes[i]] = true;
  }
  return kiln_ok_status();
}

// Sets input `index` to a new 1-D constant, appending absent inputs first.
static kiln_status_t kiln_op_set_constant_input(const kiln_op_infer_args_t* args,
                                                size_t index, kiln_graph_dtype_t dtype,
                                                const void* data, size_t count) {
  int32_t node_id = (int32_t)(args->node - args->graph->nodes);
  while (args->node->input_count <= index) {
    KILN_RETURN_IF_ERROR(kiln_graph_node_append_input(args->graph, node_id, -1));
  }
  return kiln_op_replace_input(args, index, dtype, data, count);
}

// An attribute that became an input at `since`: refused as invalid at and
// after that opset (true when present before it).
static kiln_status_t kiln_op_legacy_attr(const kiln_op_infer_args_t* args,
                                         const char* name, int since, bool* out_present) {
  *out_present = kiln_graph_node_find_attr(args->node, name) != NULL;
  if (*out_present && args->graph->opset >= since) {
    return kiln_op_invalid(args, "'%s' is an input from opset %d on, not an "
                           "attribute", name, since);
  }
  return kiln_ok_status();
}

// Reads the int list attribute `name` into input `index` (int64).
static kiln_status_t kiln_op_ints_attr_to_input(const kiln_op_infer_args_t* args,
                                                const char* name, size_t index) {
  const int64_t* values = NULL;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(args->node, name, &values, &count));
  if (!values) return kiln_op_invalid(args, "attribute '%s' is required", name);
  KILN_RETURN_IF_ERROR(
      kiln_op_set_constant_input(args, index, KILN_GRAPH_DTYPE_I64, values, count));
  kiln_op_drop_attr(args, name);
  return kiln_ok_status();
}

// Clip-6: `min`/`max` attributes (defaults: the float range) -> inputs 1, 2.
kiln_status_t kiln_op_clip_v6(const kiln_op_infer_args_t* args) {
  bool has_min, has_max;
  KILN_RETURN_IF_ERROR(kiln_op_legacy_attr(args, "min", 11, &has_min));
  KILN_RETURN_IF_ERROR(kiln_op_legacy_attr(args, "max", 11, &has_max));
  if (args->graph->opset >= 11 || args->node->input_count != 1) return kiln_ok_status();
  float bounds[2];
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "min", -FLT_MAX, &bounds[0]));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "max", FLT_MAX, &bounds[1]));
  KILN_RETURN_IF_ERROR(kiln_op_set_constant_input(args, 1, KILN_GRAPH_DTYPE_F32, &bounds[0], 1));
  KILN_RETURN_IF_ERROR(kiln_op_set_constant_input(args, 2, KILN_GRAPH_DTYPE_F32, &bounds[1], 1));
  kiln_op_drop_attr(args, "min");
  kiln_op_drop_attr(args, "max");
  return kiln_ok_status();
}

// Pad-2: `pads` and `value` attributes -> inputs 1 and 2 (mode stays).
kiln_status_t kiln_op_pad_v2(const kiln_op_infer_args_t* args) {
  bool has_pads, has_value;
  KILN_RETURN_IF_ERROR(kiln_op_legacy_attr(args, "pads", 11, &has_pads));
  KILN_RETURN_IF_ERROR(kiln_op_legacy_attr(args, "value", 11, &has_value));
  if (args->graph->opset >= 11) {
    if (args->node->input_count < 2) {
      return kiln_op_invalid(args, "pads is input 1 from opset 11");
    }
    return kiln_ok_status();
  }
  if (args->node->input_count != 1) return kiln_ok_status();
  float value = 0.0f;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "value", 0.0f, &value));
  const kiln_graph_value_t* x = kiln_op_input(args, 0);
  if (x && x->dtype != KILN_GRAPH_DTYPE_F32) {
    return kiln_op_unsupported(args, "Pad before opset 11 on %s data",
                               kiln_graph_dtype_name(x->dtype));
  }
  KILN_RETURN_IF_ERROR(kiln_op_ints_attr_to_input(args, "pads", 1));
  KILN_RETURN_IF_ERROR(kiln_op_set_constant_input(args, 2, KILN_GRAPH_DTYPE_F32, &value, 1));
  kiln_op_drop_attr(args, "value");
  return kiln_ok_status();
}

// Slice-1: `starts`, `ends`, optional `axes` attributes -> inputs 1 to 3.
kiln_status_t kiln_op_slice_v1(const kiln_op_infer_args_t* args) {
  bool has_starts, has_ends, has_axes;
  KILN_RETURN_IF_ERROR(kiln_op_legacy_attr(args, "starts", 10, &has_starts));
  KILN_RETURN_IF_ERROR(kiln_op_legacy_attr(args, "ends", 10, &has_ends));
  KILN_RETURN_IF_ERROR(kiln_op_legacy_attr(args, "axes", 10, &has_axes));
  if (args->graph->opset >= 10) {
    if (args->node->input_count < 3) {
      return kiln_op_invalid(args, "starts and ends are inputs 1 and 2 from opset 10");
    }
    return kiln_ok_status();
  }
  if (args->node->input_count != 1) return kiln_ok_status();
  KILN_RETURN_IF_ERROR(kiln_op_ints_attr_to_input(args, "starts", 1));
  KILN_RETURN_IF_ERROR(kiln_op_ints_attr_to_input(args, "ends", 2));
  if (has_axes) KILN_RETURN_IF_ERROR(kiln_op_ints_attr_to_input(args, "axes", 3));
  return kiln_ok_status();
}

// Pad-18: `axes` (input 3) names the axes `pads` covers; the others get 0.
kiln_status_t kiln_op_expand_pad_axes(const kiln_op_infer_args_t* args) {
  if (!kiln_op_input(args, 3)) return kiln_ok_status();
  if (args->graph->opset < 18) {
    return kiln_op_invalid(args, "the axes input needs opset 18");
  }
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  int32_t rank = x->shape.rank;
  int64_t axes[KILN_GRAPH_MAX_RANK], pads[2 * KILN_GRAPH_MAX_RANK];
  size_t axes_count = 0, pad_count = 0;
  KILN_RETURN_IF_ERROR(
      kiln_op_constant_ints(args, 3, axes, KILN_GRAPH_MAX_RANK, &axes_count));
  KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, pads,
                                             2 * KILN_GRAPH_MAX_RANK, &pad_count));
  if (pad_count != 2 * axes_count) {
    return kiln_op_invalid(args, "pads has %zu values for %zu axes", pad_count,
                           axes_count);
  }
  int32_t normalized[KILN_GRAPH_MAX_RANK];
  KILN_RETURN_IF_ERROR(
      kiln_op_axes_list(args, axes, axes_count, rank, normalized));
  int64_t full[2 * KILN_GRAPH_MAX_RANK] = {0};
  for (size_t i = 0; i < axes_count; ++i) {
    full[normalized[i]] = pads[i];
    full[normalized[i] + rank] = pads[i + axes_count];
  }
  KILN_RETURN_IF_ERROR(kiln_op_replace_input(args, 1, KILN_GRAPH_DTYPE_I64,
                                             full, 2 * (size_t)rank));
  args->node->inputs[3] = -1;
  return kiln_ok_status();
}

// Resize-18: `axes` names the axes scales/sizes cover (the others keep
// scale 1 / their size); antialias only changes linear/cubic downsampling
// and keep_aspect_ratio_policy only sizes, so those forms are refused.
kiln_status_t kiln_op_resize_v18(const kiln_op_infer_args_t* args) {
  const kiln_graph_node_t* node = args->node;
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  int32_t rank = x->shape.rank;
  int64_t in_dims[KILN_GRAPH_MAX_RANK];
  memcpy(in_dims, x->shape.dims, sizeof(in_dims));
  const kiln_graph_value_t* scales = kiln_op_input(args, 2);
  const kiln_graph_value_t* sizes = kiln_op_input(args, 3);
  size_t scale_count = 0, size_count = 0;
  if (scales) KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&scales->shape, &scale_count));
  if (sizes) KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&sizes->shape, &size_count));
  const char* policy = "stretch";
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(
      node, "keep_aspect_ratio_policy", "stretch", &policy));
  if (strcmp(policy, "stretch") != 0 && size_count) {
    return kiln_op_unsupported(args, "keep_aspect_ratio_policy='%s' is not "
                               "supported; supported: stretch", policy);
  }
  const kiln_graph_attr_t* axes_attr = kiln_graph_node_find_attr(node, "axes");
  if (axes_attr) {
    if (axes_attr->type != KILN_GRAPH_ATTR_INTS ||
        axes_attr->count > (size_t)rank) {
      return kiln_op_invalid(args, "axes must list at most %d axes", (int)rank);
    }
    int32_t axes[KILN_GRAPH_MAX_RANK];
    KILN_RETURN_IF_ERROR(
        kiln_op_axes_list(args, axes_attr->ints, axes_attr->count, rank, axes));
    size_t count = axes_attr->count;
    if (scale_count) {
      if (scale_count != count || !scales->data ||
          scales->dtype != KILN_GRAPH_DTYPE_F32) {
        return kiln_op_unsupported(args, "with axes, scales must be a constant "
                                   "float tensor of %zu values", count);
      }
      float full[KILN_GRAPH_MAX_RANK];
      for (int32_t d = 0; d < rank; ++d) full[d] = 1.0f;
      for (size_t i = 0; i < count; ++i) full[axes[i]] = ((const float*)scales->data)[i];
      KILN_RETURN_IF_ERROR(kiln_op_replace_input(args, 2, KILN_GRAPH_DTYPE_F32,
                                                 full, (size_t)rank));
    } else if (size_count) {
      int64_t given[KILN_GRAPH_MAX_RANK], full[KILN_GRAPH_MAX_RANK];
      size_t got = 0;
      KILN_RETURN_IF_ERROR(
          kiln_op_constant_ints(args, 3, given, KILN_GRAPH_MAX_RANK, &got));
      if (got != count) {
        return kiln_op_invalid(args, "sizes has %zu values for %zu axes", got,
                               count);
      }
      memcpy(full, in_dims, sizeof(full));
      for (size_t i = 0; i < count; ++i) full[axes[i]] = given[i];
      KILN_RETURN_IF_ERROR(kiln_op_replace_input(args, 3, KILN_GRAPH_DTYPE_I64,
                                                 full, (size_t)rank));
    }
    kiln_op_drop_attr(args, "axes");
  }
  int64_t antialias = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "antialias", 0, &antialias));
  const char* mode = "nearest";
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(args->node, "mode", "nearest", &mode));
  if (antialias && strcmp(mode, "nearest") != 0) {
    // Without downsampling the antialias filter is the plain one.
    scales = kiln_op_input(args, 2);
    scale_count = 0;
    if (scales) KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&scales->shape, &scale_count));
    int64_t out_sizes[KILN_GRAPH_MAX_RANK];
    size_t got = 0;
    if (kiln_op_input(args, 3) && size_count) {
      KILN_RETURN_IF_ERROR(
          kiln_op_constant_ints(args, 3, out_sizes, KILN_GRAPH_MAX_RANK, &got));
    }
    for (int32_t d = 0; d < rank; ++d) {
      bool down = true;  // not known here: refused
      if (scales && scales->data && scale_count && (size_t)d < scale_count) {
        down = ((const float*)scales->data)[d] < 1.0f;
      } else if ((size_t)d < got) {
        down = out_sizes[d] < in_dims[d];
      }
      if (down) {
        return kiln_op_unsupported(args, "antialias=1 when downsampling (axis "
                                   "%d) is not supported", (int)d);
      }
    }
  }
  return kiln_ok_status();
}

// CastLike (opset 15+; saturate from 19): a Cast to input 1's dtype. The
// node becomes that Cast so every later stage sees one op.
static kiln_status_t kiln_infer_cast_like(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* like = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_ANY, &like));
  static const int64_t kProtoCodes[] = {
      [KILN_GRAPH_DTYPE_F32] = 1, [KILN_GRAPH_DTYPE_I32] = 6,
      [KILN_GRAPH_DTYPE_I64] = 7, [KILN_GRAPH_DTYPE_BOOL] = 9};
  if ((size_t)like->dtype >= sizeof(kProtoCodes) / sizeof(kProtoCodes[0]) ||
      !kProtoCodes[like->dtype]) {
    return kiln_op_unsupported(args, "target_type input has dtype %s",
                               kiln_graph_dtype_name(like->dtype));
  }
  kiln_graph_attr_t to;
  memset(&to, 0, sizeof(to));
  to.name = "to";
  to.type = KILN_GRAPH_ATTR_INT;
  to.i = kProtoCodes[like->dtype];
  int32_t node_id = (int32_t)(args->node - args->graph->nodes);
  KILN_RETURN_IF_ERROR(kiln_graph_node_set_attr(args->graph, node_id, &to));
  args->node->op_type = "Cast";
  args->node->input_count = 1;
  return kiln_op_find("Cast")->infer(args);
}

static kiln_status_t kiln_run_cast_like(const kiln_op_run_args_t* args) {
  return kiln_op_find("Cast")->run(args);  // the output's dtype is the target
}

// CenterCropPad (opset 18): each listed axis cropped or zero-padded to its
// target length around the centre (the extra element of an odd difference
// at the end, as ONNX's reference): exactly a constant Pad with negative
// pads for crops, which the node becomes.
static kiln_status_t kiln_infer_center_crop_pad(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  int32_t rank = x->shape.rank;
  int64_t dims[KILN_GRAPH_MAX_RANK], target[KILN_GRAPH_MAX_RANK];
  memcpy(dims, x->shape.dims, sizeof(dims));
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_op_constant_ints(args, 1, target, KILN_GRAPH_MAX_RANK, &count));
  const int64_t* axes = NULL;
  size_t axes_count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_ints(args->node, "axes", &axes, &axes_count));
  int32_t normalized[KILN_GRAPH_MAX_RANK];
  if (axes) {
    if (axes_count > (size_t)rank) return kiln_op_invalid(args, "more axes than the rank");
    KILN_RETURN_IF_ERROR(kiln_op_axes_list(args, axes, axes_count, rank, normalized));
  } else {
    axes_count = (size_t)rank;
    for (int32_t d = 0; d < rank; ++d) normalized[d] = d;
  }
  if (count != axes_count) {
    return kiln_op_invalid(args, "shape has %zu values for %zu axes", count, axes_count);
  }
  int64_t pads[2 * KILN_GRAPH_MAX_RANK] = {0};
  for (size_t i = 0; i < axes_count; ++i) {
    if (target[i] < 0) return kiln_op_invalid(args, "shape[%zu] is negative", i);
    int64_t delta = target[i] - dims[normalized[i]];
    int64_t begin = delta >= 0 ? delta / 2 : -((-delta) / 2);
    pads[normalized[i]] = begin;
    pads[normalized[i] + rank] = delta - begin;
  }
  KILN_RETURN_IF_ERROR(kiln_op_replace_input(args, 1, KILN_GRAPH_DTYPE_I64, pads,
                                             2 * (size_t)rank));
  kiln_op_drop_attr(args, "axes");
  args->node->op_type = "Pad";
  return kiln_op_find("Pad")->infer(args);
}

static kiln_status_t kiln_run_center_crop_pad(const kiln_op_run_args_t* args) {
  return kiln_op_find("Pad")->run(args);  // the node became a Pad at inference
}

const kiln_op_def_t kiln_ops_versions[] = {
    {"CenterCropPad", "axes", 2, 2, 1, 1, kiln_infer_center_crop_pad,
     kiln_run_center_crop_pad, 18},
    {"CastLike", "saturate", 2, 2, 1, 1, kiln_infer_cast_like,
     kiln_run_cast_like, 15},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
