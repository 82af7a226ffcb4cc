// Resize (opsets 11-17): modes nearest (all four nearest_modes) and linear
// (N-linear), coordinate modes half_pixel, pytorch_half_pixel,
// align_corners, asymmetric, tf_half_pixel_for_nn. Scales and sizes must be
// constants (static shapes).
#include <math.h>
#include <string.h>

#include "ops.h"

static const char* const kResizeModes[] = {"nearest", "linear", NULL};
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

static kiln_status_t kiln_infer_resize(const kiln_op_infer_args_t* args) {
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
  int64_t exclude_outside = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "exclude_outside",
                                                0, &exclude_outside));
  if (exclude_outside) {
    return kiln_op_unsupported(args, "exclude_outside=1 (cubic only) is not "
                               "supported");
  }
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

static kiln_status_t kiln_run_resize(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  kiln_ref_tensor_t* y = &args->outputs[0];
  const char* mode = "nearest";
  const char* coord = "half_pixel";
  const char* nearest = "round_prefer_floor";
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_string(args->node, "mode", mode, &mode));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(
      args->node, "coordinate_transformation_mode", coord, &coord));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(args->node, "nearest_mode",
                                                   nearest, &nearest));
  bool linear = strcmp(mode, "linear") == 0;
  int32_t rank = x->shape.rank;
  bool have_scales = args->input_count > 2 && args->inputs[2].data &&
                     args->inputs[2].count > 0;
  // Per dim: source index pairs and the weight of the upper one.
  int64_t* lo[KILN_GRAPH_MAX_RANK] = {NULL};
  int64_t* hi[KILN_GRAPH_MAX_RANK] = {NULL};
  double* weight[KILN_GRAPH_MAX_RANK] = {NULL};
  kiln_status_t status = kiln_ok_status();
  for (int32_t d = 0; d < rank && kiln_status_is_ok(status); ++d) {
    int64_t in = x->shape.dims[d], out = y->shape.dims[d];
    size_t n = out ? (size_t)out : 1;
    status = kiln_allocator_malloc(args->allocator, n * sizeof(int64_t),
                                   (void**)&lo[d]);
    if (kiln_status_is_ok(status)) {
      status = kiln_allocator_malloc(args->allocator, n * sizeof(int64_t),
                                     (void**)&hi[d]);
    }
    if (kiln_status_is_ok(status)) {
      status = kiln_allocator_malloc(args->allocator, n * sizeof(double),
                                     (void**)&weight[d]);
    }
    if (!kiln_status_is_ok(status)) break;
    double scale = have_scales ? ((const float*)args->inputs[2].data)[d]
                               : (in ? (double)out / (double)in : 1.0);
    for (int64_t o = 0; o < out; ++o) {
      double length = have_scales ? (double)in * scale : (double)out;
      double s = kiln_resize_source(coord, (double)o, scale, in, length);
      if (linear) {
        double f = floor(s);
        lo[d][o] = kiln_clamp((int64_t)f, in);
        hi[d][o] = kiln_clamp((int64_t)f + 1, in);
        weight[d][o] = s - f;
      } else {
        lo[d][o] = hi[d][o] = kiln_clamp(kiln_nearest(nearest, s), in);
        weight[d][o] = 0.0;
      }
    }
  }
  if (kiln_status_is_ok(status) && y->count && x->count) {
    int64_t in_strides[KILN_GRAPH_MAX_RANK];
    kiln_ref_contiguous_strides(&x->shape, in_strides);
    int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
    const float* px = (const float*)x->data;
    float* py = (float*)y->data;
    size_t corners = linear ? (size_t)1 << rank : 1;
    for (size_t i = 0; i < y->count; ++i) {
      double sum = 0.0;
      for (size_t c = 0; c < corners; ++c) {
        double w = 1.0;
        int64_t offset = 0;
        for (int32_t d = 0; d < rank; ++d) {
          bool upper = (c >> d) & 1;
          int64_t o = coords[d];
          if (linear) w *= upper ? weight[d][o] : 1.0 - weight[d][o];
          offset += (upper ? hi[d][o] : lo[d][o]) * in_strides[d];
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
    kiln_allocator_free(args->allocator, lo[d]);
    kiln_allocator_free(args->allocator, hi[d]);
    kiln_allocator_free(args->allocator, weight[d]);
  }
  return status;
}

const kiln_op_def_t kiln_ops_resize[] = {
    {"Resize",
     "antialias,axes,coordinate_transformation_mode,cubic_coeff_a,"
     "exclude_outside,extrapolation_value,keep_aspect_ratio_policy,mode,"
     "nearest_mode",
     1, 4, 1, 1, kiln_infer_resize, kiln_run_resize, 11},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
