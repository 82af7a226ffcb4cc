// Resize (opsets 11-17): modes nearest (all four nearest_modes), linear
// (N-linear) and cubic (cubic_coeff_a, exclude_outside); coordinate modes
// half_pixel, pytorch_half_pixel, align_corners, asymmetric,
// tf_half_pixel_for_nn. Scales and sizes must be
// constants (static shapes). Upsample (opsets 7-9) is its asymmetric,
// round-down special case.
#include <math.h>
#include <string.h>

#include "ops.h"

static const char* const kResizeModes[] = {"nearest", "linear", "cubic", NULL};
static const char* const kCoordModes[] = {
    "half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
    "tf_half_pixel_for_nn", NULL};
static const char* const kNearestModes[] = {
    "round_prefer_floor", "round_prefer_ceil", "floor", "ceil", NULL};

static kiln_status_t kiln_read_floats(const kiln_op_infer_args_t* args,
                                      size_t index, float* values,
                                      size_t capacity, size_t* out_count) {
  *out_count = 0;
  const kiln_graph_value_t* v = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, index, KILN_OP_F32, &v));
  if (!v->data) {
    return kiln_op_unsupported(args, "input %zu must be a constant", index);
  }
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&v->shape, &count));
  if (count > capacity) return kiln_op_invalid(args, "too many scales");
  memcpy(values, v->data, count * sizeof(float));
  *out_count = count;
  return kiln_ok_status();
}

// Resize-10 (X, scales; `mode` only): Upsample-9's asymmetric transform and
// nearest rounding down, so upsampling becomes that Upsample; downsampling
// (where onnxruntime rounds nearest up) is refused.
static kiln_status_t kiln_infer_resize_v10(const kiln_op_infer_args_t* args) {
  for (size_t i = 0; i < args->node->attr_count; ++i) {
    if (strcmp(args->node->attrs[i].name, "mode") != 0) {
      return kiln_op_invalid(args, "attribute '%s' needs opset 11 (Resize-10 has "
                             "mode only)", args->node->attrs[i].name);
    }
  }
  if (args->node->input_count != 2) {
    return kiln_op_invalid(args, "Resize-10 takes X and scales");
  }
  float scales[KILN_GRAPH_MAX_RANK];
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_read_floats(args, 1, scales, KILN_GRAPH_MAX_RANK, &count));
  for (size_t d = 0; d < count; ++d) {
    if (!(scales[d] >= 1.0f)) {
      return kiln_op_unsupported(args, "Resize-10 with scales[%zu] = %g (downsampling) is "
                                 "not supported; scales >= 1 run as Upsample", d,
                                 (double)scales[d]);
    }
  }
  args->node->op_type = "Upsample";
  return kiln_op_find("Upsample")->infer(args);
}

static kiln_status_t kiln_infer_resize(const kiln_op_infer_args_t* args) {
  if (args->graph->opset < 11) return kiln_infer_resize_v10(args);
  KILN_RETURN_IF_ERROR(kiln_op_resize_v18(args));  // axes, antialias, policy
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  const char* mode;
  const char* coord;
  const char* nearest;
  KILN_RETURN_IF_ERROR(
      kiln_op_attr_choice(args, "mode", "nearest", kResizeModes, &mode));
  KILN_RETURN_IF_ERROR(kiln_op_attr_choice(args,
                                           "coordinate_transformation_mode",
                                           "half_pixel", kCoordModes, &coord));
  KILN_RETURN_IF_ERROR(kiln_op_attr_choice(
      args, "nearest_mode", "round_prefer_floor", kNearestModes, &nearest));
  int32_t rank = x->shape.rank;
  float scales[KILN_GRAPH_MAX_RANK];
  int64_t sizes[KILN_GRAPH_MAX_RANK];
  size_t scale_count = 0, size_count = 0;
  if (kiln_op_input(args, 2)) {
    KILN_RETURN_IF_ERROR(
        kiln_read_floats(args, 2, scales, KILN_GRAPH_MAX_RANK, &scale_count));
  }
  if (kiln_op_input(args, 3)) {
    KILN_RETURN_IF_ERROR(
        kiln_op_constant_ints(args, 3, sizes, KILN_GRAPH_MAX_RANK, &size_count));
  }
  if ((scale_count == 0) == (size_count == 0)) {
    return kiln_op_invalid(args, "exactly one of scales and sizes must be "
                           "given");
  }
  kiln_graph_shape_t shape = x->shape;
  for (int32_t d = 0; d < rank; ++d) {
    if (size_count) {
      if (size_count != (size_t)rank || sizes[d] < 0) {
        return kiln_op_invalid(args, "sizes must have %d non-negative values",
                               (int)rank);
      }
      shape.dims[d] = sizes[d];
    } else {
      if (scale_count != (size_t)rank || !(scales[d] > 0.0f) ||
          scales[d] > 1e6f) {
        return kiln_op_invalid(args, "scales must have %d positive values",
                               (int)rank);
      }
      shape.dims[d] = (int64_t)floor((double)x->shape.dims[d] * scales[d]);
    }
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
}

// How one axis is sampled.
typedef struct kiln_resize_mode_t {
  int taps;             // 1 nearest, 2 linear, 4 cubic
  const char* nearest;  // nearest_mode
  double cubic_a;
  bool exclude_outside;
} kiln_resize_mode_t;

// `out` is the resized length before flooring (in * scale with scales), as
// ONNX's reference uses it for align_corners and pytorch_half_pixel.
static double kiln_resize_source(const char* coord, double x, double scale,
                                 int64_t in, double out) {
  if (strcmp(coord, "half_pixel") == 0) return (x + 0.5) / scale - 0.5;
  if (strcmp(coord, "pytorch_half_pixel") == 0) {
    return out > 1.0 ? (x + 0.5) / scale - 0.5 : 0.0;
  }
  if (strcmp(coord, "align_corners") == 0) {
    return out == 1.0 ? 0.0 : x * (double)(in - 1) / (out - 1.0);
  }
  if (strcmp(coord, "tf_half_pixel_for_nn") == 0) return (x + 0.5) / scale;
  return x / scale;  // asymmetric
}

static int64_t kiln_nearest(const char* mode, double x) {
  double f = floor(x);
  if (strcmp(mode, "floor") == 0) return (int64_t)f;
  if (strcmp(mode, "ceil") == 0) return (int64_t)ceil(x);
  double frac = x - f;
  if (frac == 0.5) {
    return strcmp(mode, "round_prefer_ceil") == 0 ? (int64_t)f + 1 : (int64_t)f;
  }
  return (int64_t)(frac < 0.5 ? f : f + 1);
}

static int64_t kiln_clamp(int64_t v, int64_t in) {
  return v < 0 ? 0 : (v >= in ? in - 1 : v);
}

// `scales` (one per dim) or NULL to take output / input sizes.
// ONNX's cubic convolution weights for the taps at base - 1 .. base + 2 of
// a source coordinate base + t, t in (0, 1] (ONNX prefers the left pixel).
static void kiln_resize_cubic_weights(double t, double a, double* w) {
  double u = 1.0 - t;
  w[0] = ((a * (t + 1) - 5 * a) * (t + 1) + 8 * a) * (t + 1) - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * u - (a + 3)) * u * u + 1;
  w[3] = ((a * (u + 1) - 5 * a) * (u + 1) + 8 * a) * (u + 1) - 4 * a;
}

// The taps (source index, weight) of output coordinate `s` along an axis of
// length `in`: 1 (nearest), 2 (linear) or 4 (cubic) of them.
static void kiln_resize_taps(const kiln_resize_mode_t* m, double s, int64_t in,
                             int64_t* idx, double* w) {
  if (m->taps == 1) {
    idx[0] = kiln_clamp(kiln_nearest(m->nearest, s), in);
    w[0] = 1.0;
  } else if (m->taps == 2) {
    double f = floor(s);
    idx[0] = kiln_clamp((int64_t)f, in);
    idx[1] = kiln_clamp((int64_t)f + 1, in);
    w[1] = s - f;
    w[0] = 1.0 - w[1];
  } else {
    double base = ceil(s) - 1.0;
    kiln_resize_cubic_weights(s - base, m->cubic_a, w);
    double total = 0.0;
    for (int t = 0; t < 4; ++t) {
      int64_t i = (int64_t)base - 1 + t;
      if (m->exclude_outside && (i < 0 || i >= in)) w[t] = 0.0;
      total += w[t];
      idx[t] = kiln_clamp(i, in);
    }
    if (m->exclude_outside && total != 0.0) {
      for (int t = 0; t < 4; ++t) w[t] /= total;
    }
  }
}

// `scales` (one per dim) or NULL to take output / input sizes.
static kiln_status_t kiln_resize_run(const kiln_op_run_args_t* args,
                                     const kiln_resize_mode_t* m, const char* coord,
                                     const float* scales) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  kiln_ref_tensor_t* y = &args->outputs[0];
  int32_t rank = x->shape.rank;
  bool have_scales = scales != NULL;
  const size_t taps = (size_t)m->taps;
  // Per dim and output coordinate: `taps` source indices and weights.
  int64_t* idx[KILN_GRAPH_MAX_RANK] = {NULL};
  double* weight[KILN_GRAPH_MAX_RANK] = {NULL};
  kiln_status_t status = kiln_ok_status();
  for (int32_t d = 0; d < rank && kiln_status_is_ok(status); ++d) {
    int64_t in = x->shape.dims[d], out = y->shape.dims[d];
    size_t n = (out ? (size_t)out : 1) * taps;
    status = kiln_allocator_malloc(args->allocator, n * sizeof(int64_t), (void**)&idx[d]);
    if (kiln_status_is_ok(status)) {
      status = kiln_allocator_malloc(args->allocator, n * sizeof(double), (void**)&weight[d]);
    }
    if (!kiln_status_is_ok(status)) break;
    double scale = have_scales ? scales[d] : (in ? (double)out / (double)in : 1.0);
    for (int64_t o = 0; o < out; ++o) {
      double length = have_scales ? (double)in * scale : (double)out;
      double s = kiln_resize_source(coord, (double)o, scale, in, length);
      kiln_resize_taps(m, s, in, &idx[d][o * taps], &weight[d][o * taps]);
    }
  }
  if (kiln_status_is_ok(status) && y->count && x->count) {
    int64_t in_strides[KILN_GRAPH_MAX_RANK];
    kiln_ref_contiguous_strides(&x->shape, in_strides);
    int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
    const float* px = (const float*)x->data;
    float* py = (float*)y->data;
    size_t corners = 1;
    for (int32_t d = 0; d < rank; ++d) corners *= taps;
    for (size_t i = 0; i < y->count; ++i) {
      double sum = 0.0;
      for (size_t c = 0; c < corners; ++c) {
        double w = 1.0;
        int64_t offset = 0;
        size_t rest = c;
        for (int32_t d = 0; d < rank; ++d) {
          size_t t = coords[d] * taps + rest % taps;
          rest /= taps;
          w *= weight[d][t];
          offset += idx[d][t] * in_strides[d];
        }
        if (w != 0.0) sum += w * px[offset];
      }
      py[i] = (float)sum;
      for (int32_t d = rank; d-- > 0;) {
        if (++coords[d] < y->shape.dims[d]) break;
        coords[d] = 0;
      }
    }
  }
  for (int32_t d = 0; d < rank; ++d) {
    kiln_allocator_free(args->allocator, idx[d]);
    kiln_allocator_free(args->allocator, weight[d]);
  }
  return status;
}

static int kiln_resize_taps_of(const char* mode) {
  return strcmp(mode, "cubic") == 0 ? 4 : strcmp(mode, "linear") == 0 ? 2 : 1;
}

static kiln_status_t kiln_run_resize(const kiln_op_run_args_t* args) {
  const char* mode = "nearest";
  const char* coord = "half_pixel";
  kiln_resize_mode_t m = {1, "round_prefer_floor", -0.75, false};
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(args->node, "mode", mode, &mode));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(
      args->node, "coordinate_transformation_mode", coord, &coord));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(args->node, "nearest_mode",
                                                   m.nearest, &m.nearest));
  float a = -0.75f;
  int64_t exclude = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "cubic_coeff_a", a, &a));
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "exclude_outside", 0, &exclude));
  m.taps = kiln_resize_taps_of(mode);
  m.cubic_a = a;
  m.exclude_outside = exclude != 0;
  bool have_scales = args->input_count > 2 && args->inputs[2].data &&
                     args->inputs[2].count > 0;
  return kiln_resize_run(args, &m, coord,
                         have_scales ? (const float*)args->inputs[2].data : NULL);
}

// Upsample (opsets 7-9, deprecated since 10): Resize with the asymmetric
// transform, nearest rounding down, and scales from the `scales` attribute
// (opset 7) or input 1 (opset 9).
static kiln_status_t kiln_upsample_scales(const kiln_graph_node_t* node,
                                          const float* input, size_t input_count,
                                          const float** out_scales, size_t* out_count) {
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(node, "scales");
  *out_scales = input;
  *out_count = input_count;
  if (attr) {
    if (attr->type != KILN_GRAPH_ATTR_FLOATS) {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "node '%s' (op Upsample): scales must be floats", node->name);
    }
    *out_scales = attr->floats;
    *out_count = attr->count;
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_upsample(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  const char* mode;
  static const char* const kUpsampleModes[] = {"nearest", "linear", NULL};
  KILN_RETURN_IF_ERROR(kiln_op_attr_choice(args, "mode", "nearest", kUpsampleModes, &mode));
  float input[KILN_GRAPH_MAX_RANK];
  size_t input_count = 0;
  if (kiln_op_input(args, 1)) {
    KILN_RETURN_IF_ERROR(kiln_read_floats(args, 1, input, KILN_GRAPH_MAX_RANK, &input_count));
  }
  const float* scales = NULL;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_upsample_scales(args->node, input, input_count, &scales, &count));
  if (count != (size_t)x->shape.rank) {
    return kiln_op_invalid(args, "scales must have %d values", (int)x->shape.rank);
  }
  kiln_graph_shape_t shape = x->shape;
  for (int32_t d = 0; d < x->shape.rank; ++d) {
    if (!(scales[d] >= 1.0f) || scales[d] > 1e6f) {
      return kiln_op_invalid(args, "scales must be at least 1");
    }
    shape.dims[d] = (int64_t)floor((double)x->shape.dims[d] * scales[d]);
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
}

static kiln_status_t kiln_run_upsample(const kiln_op_run_args_t* args) {
  const char* mode = "nearest";
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(args->node, "mode", mode, &mode));
  bool has_input = args->input_count > 1 && args->inputs[1].data;
  const float* scales = NULL;
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_upsample_scales(
      args->node, has_input ? (const float*)args->inputs[1].data : NULL,
      has_input ? args->inputs[1].count : 0, &scales, &count));
  kiln_resize_mode_t m = {kiln_resize_taps_of(mode), "floor", -0.75, false};
  return kiln_resize_run(args, &m, "asymmetric", scales);
}

const kiln_op_def_t kiln_ops_resize[] = {
    {"Resize",
     "antialias,axes,coordinate_transformation_mode,cubic_coeff_a,"
     "exclude_outside,extrapolation_value,keep_aspect_ratio_policy,mode,"
     "nearest_mode",
     1, 4, 1, 1, kiln_infer_resize, kiln_run_resize, 10},
    {"Upsample", "mode,scales", 1, 2, 1, 1, kiln_infer_upsample, kiln_run_upsample, 7},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
