// Ops lowered onto other kernels' building blocks: Split and Expand
// (strided_copy), variadic Sum/Mean/Max/Min (chained binary ops, the
// output accumulating in place), standalone BatchNormalization with
// constant statistics (mul + add), ConvTranspose, Resize, and Where with a
// constant condition (mul + add).
#include <float.h>
#include <math.h>
#include <string.h>

#include "lower_util.h"
#include "window.h"

static void kiln_more_contiguous(const kiln_graph_shape_t* shape, int64_t* strides) {
  int64_t stride = 1;
  for (int32_t d = shape->rank - 1; d >= 0; --d) {
    strides[d] = stride;
    stride *= shape->dims[d];
  }
}

kiln_status_t kiln_lower_split(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  int64_t axis_attr = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", 0, &axis_attr));
  int32_t axis = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_axis(l, axis_attr, x->shape.rank, &axis));
  int64_t in_strides[KILN_GRAPH_MAX_RANK];
  kiln_more_contiguous(&x->shape, in_strides);
  kiln_emit_range_t in;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  int64_t position = 0;
  for (size_t o = 0; o < l->node->output_count; ++o) {
    const kiln_graph_value_t* y = kiln_lower_out(l, o);
    if (!y) return kiln_lower_refuse(l, "an absent output");
    int64_t out_strides[KILN_GRAPH_MAX_RANK];
    kiln_more_contiguous(&y->shape, out_strides);
    if (kiln_lower_count(&y->shape) > 0) {
      kiln_emit_range_t out;
      KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, o, &out));
      KILN_RETURN_IF_ERROR(kiln_lower_strided_copy(l, &in, &out, &y->shape, in_strides,
                                             out_strides, position * in_strides[axis], 0));
    }
    position += y->shape.dims[axis];
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_broadcast_copy(const kiln_lower_t* l, const kiln_emit_range_t* in,
                                        const kiln_graph_shape_t* x,
                                        const kiln_emit_range_t* out,
                                        const kiln_graph_shape_t* y) {
  int64_t x_strides[KILN_GRAPH_MAX_RANK], in_strides[KILN_GRAPH_MAX_RANK];
  int64_t out_strides[KILN_GRAPH_MAX_RANK];
  kiln_more_contiguous(x, x_strides);
  kiln_more_contiguous(y, out_strides);
  int32_t offset = y->rank - x->rank;
  for (int32_t d = 0; d < y->rank; ++d) {
    int32_t xd = d - offset;
    in_strides[d] = (xd < 0 || x->dims[xd] == 1) ? 0 : x_strides[xd];
  }
  return kiln_lower_strided_copy(l, in, out, y, in_strides, out_strides, 0, 0);
}

kiln_status_t kiln_lower_expand(const kiln_lower_t* l) {
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  return kiln_lower_broadcast_copy(l, &in, &kiln_lower_in(l, 0)->shape, &out,
                                   &kiln_lower_out(l, 0)->shape);
}

kiln_status_t kiln_lower_binary_ranges(const kiln_lower_t* l, uint32_t op,
                                       const kiln_emit_range_t* a,
                                       const kiln_graph_shape_t* a_shape,
                                       const kiln_emit_range_t* b,
                                       const kiln_graph_shape_t* b_shape,
                                       const kiln_emit_range_t* out,
                                       const kiln_graph_shape_t* out_shape) {
  if (out_shape->rank > KILN_KERNEL_MAX_RANK) return kiln_lower_refuse(l, "rank > 6");
  kiln_kernel_binary_params_t p;
  memset(&p, 0, sizeof(p));
  p.count = (uint32_t)kiln_lower_count(out_shape);
  const kiln_graph_shape_t* shapes[2] = {a_shape, b_shape};
  uint32_t* strides[2] = {p.a_strides, p.b_strides};
  for (int s = 0; s < 2; ++s) {
    uint64_t stride = 1;
    for (int32_t d = KILN_KERNEL_MAX_RANK - 1; d >= 0; --d) {
      int32_t sd = d - (KILN_KERNEL_MAX_RANK - shapes[s]->rank);
      int64_t dim = sd >= 0 ? shapes[s]->dims[sd] : 1;
      int32_t od = d - (KILN_KERNEL_MAX_RANK - out_shape->rank);
      int64_t out_dim = od >= 0 ? out_shape->dims[od] : 1;
      strides[s][d] = (dim == 1 && out_dim != 1) ? 0 : (uint32_t)stride;
      stride *= (uint64_t)dim;
    }
  }
  for (int32_t d = 0; d < KILN_KERNEL_MAX_RANK; ++d) {
    int32_t od = d - (KILN_KERNEL_MAX_RANK - out_shape->rank);
    p.shape[d] = od >= 0 ? (uint32_t)out_shape->dims[od] : 1;
  }
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_BINARY, .push = &p,
                                    .binding_count = 3, .bindings = {*a, *b, *out},
                                    .written_mask = 4u, .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = p.count};
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_BINARY_OP, op},
                                    {KILN_SPEC_BINARY_ACTIVATION, KILN_ACT_NONE}};
  desc.ops = ops;
  desc.op_count = 2;
  return kiln_lower_add_binary(l, &desc);
}

kiln_status_t kiln_lower_variadic(const kiln_lower_t* l, uint32_t op, bool mean) {
  size_t count = l->node->input_count;
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  kiln_emit_range_t out;
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  if (count == 1) {
    kiln_emit_range_t in;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
    // A single input: the op is the identity (the mean of one value too).
    return kiln_lower_emit_copy(l->program, &in, &out,
                                out.length / kiln_emit_float_bytes(l->program),
                                KILN_EMIT_STORAGE_NODE);
  }
  // out = in0 op in1, then out = out op in_k (elementwise in place: each
  // invocation reads and writes only its own element of out).
  for (size_t i = 1; i < count; ++i) {
    kiln_emit_range_t a, b;
    const kiln_graph_shape_t* a_shape = &y->shape;
    if (i == 1) {
      KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &a));
      a_shape = &kiln_lower_in(l, 0)->shape;
    } else {
      a = out;
    }
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, i, &b));
    KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, op, &a, a_shape, &b,
                                                  &kiln_lower_in(l, i)->shape, &out,
                                                  &y->shape));
  }
  if (mean) {
    float scale = 1.0f / (float)count;
    kiln_graph_shape_t scalar = {0};
    kiln_emit_range_t scale_range;
    KILN_RETURN_IF_ERROR(kiln_emit_add_float_weight(l->program, &scale, 1, &scale_range));
    KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_MUL, &out, &y->shape,
                                                  &scale_range, &scalar, &out, &y->shape));
  }
  return kiln_ok_status();
}

// Inference BatchNormalization with statistics (or scale/B) computed at run
// time: s = scale * (var + eps)^-0.5 and t = B - mean * s into scratch
// ([C] each, five binary dispatches), then y = x * s + t per channel.
static kiln_status_t kiln_lower_batch_norm_runtime(const kiln_lower_t* l, float epsilon) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  kiln_graph_shape_t c_shape = {1, {x->shape.dims[1]}};
  for (size_t i = 1; i < 5; ++i) {
    if (kiln_lower_count(&kiln_lower_in(l, i)->shape) != (uint64_t)x->shape.dims[1]) {
      return kiln_lower_refuse(l, "scale, B, mean and var must have C values");
    }
  }
  kiln_emit_range_t scale, bias, mean, var, eps, half, scratch, in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &scale));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &bias));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 3, &mean));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 4, &var));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  const float minus_half = -0.5f;
  KILN_RETURN_IF_ERROR(kiln_emit_add_float_weight(l->program, &epsilon, 1, &eps));
  KILN_RETURN_IF_ERROR(kiln_emit_add_float_weight(l->program, &minus_half, 1, &half));
  uint64_t bytes = (uint64_t)x->shape.dims[1] * sizeof(float);
  uint64_t region = kiln_emit_align_up(bytes);
  KILN_RETURN_IF_ERROR(kiln_emit_scratch(l->program, region + bytes, &scratch));
  kiln_emit_range_t s = scratch, t = scratch;
  s.length = t.length = bytes;
  t.offset += region;
  kiln_graph_shape_t scalar = {0};
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_ADD, &var, &c_shape, &eps,
                                                &scalar, &s, &c_shape));
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_POW, &s, &c_shape, &half,
                                                &scalar, &s, &c_shape));
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_MUL, &scale, &c_shape, &s,
                                                &c_shape, &s, &c_shape));
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_MUL, &mean, &c_shape, &s,
                                                &c_shape, &t, &c_shape));
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_SUB, &bias, &c_shape, &t,
                                                &c_shape, &t, &c_shape));
  kiln_graph_shape_t per_channel = {x->shape.rank - 1, {0}};
  per_channel.dims[0] = x->shape.dims[1];
  for (int32_t d = 1; d < per_channel.rank; ++d) per_channel.dims[d] = 1;
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_MUL, &in, &x->shape, &s,
                                                &per_channel, &out, &y->shape));
  return kiln_lower_binary_ranges(l, KILN_BINARY_ADD, &out, &y->shape, &t, &per_channel, &out,
                                  &y->shape);
}

// Inference BatchNormalization with constant parameters:
// y = x * s + t, s = scale / sqrt(var + eps), t = B - mean * s.
kiln_status_t kiln_lower_batch_norm(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  int64_t training = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "training_mode", 0, &training));
  if (training) {
    return kiln_lower_refuse(l, "training mode (batch statistics) on a run-time input; "
                             "it runs only on constants, folded at compile time");
  }
  for (size_t o = 1; o < l->node->output_count; ++o) {
    if (l->node->outputs[o] >= 0) return kiln_lower_refuse(l, "training outputs");
  }
  const kiln_graph_value_t* params[4];
  bool constant = true;
  for (size_t i = 0; i < 4; ++i) {
    params[i] = kiln_lower_in(l, i + 1);
    if (!params[i] || (params[i]->dtype != KILN_GRAPH_DTYPE_F32 &&
                       params[i]->dtype != KILN_GRAPH_DTYPE_F16)) {
      return kiln_lower_refuse(l, "scale, B, mean and var must be float tensors");
    }
    constant = constant && params[i]->data;
  }
  if (x->shape.rank < 2 || x->shape.rank > KILN_KERNEL_MAX_RANK) {
    return kiln_lower_refuse(l, "input rank must be 2 to 6");
  }
  float epsilon = 1e-5f;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "epsilon", 1e-5f, &epsilon));
  if (!constant) return kiln_lower_batch_norm_runtime(l, epsilon);
  size_t channels = (size_t)x->shape.dims[1];
  float* st = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_malloc(l->program->allocator, 2 * channels * sizeof(float), (void**)&st));
  const float* scale = params[0]->data;
  const float* bias = params[1]->data;
  const float* mean = params[2]->data;
  const float* var = params[3]->data;
  for (size_t c = 0; c < channels; ++c) {
    st[c] = scale[c] / sqrtf(var[c] + epsilon);
    st[channels + c] = bias[c] - mean[c] * st[c];
  }
  kiln_emit_range_t s_range, t_range;
  kiln_status_t status =
      kiln_emit_add_float_weight(l->program, st, channels, &s_range);
  if (!status) {
    status = kiln_emit_add_float_weight(l->program, st + channels, channels, &t_range);
  }
  kiln_allocator_free(l->program->allocator, st);
  KILN_RETURN_IF_ERROR(status);
  // Per-channel operands shaped [C, 1, ...] broadcast against [N, C, ...].
  kiln_graph_shape_t per_channel = {x->shape.rank - 1, {0}};
  per_channel.dims[0] = (int64_t)channels;
  for (int32_t d = 1; d < per_channel.rank; ++d) per_channel.dims[d] = 1;
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(l, KILN_BINARY_MUL, &in, &x->shape, &s_range,
                                                &per_channel, &out, &y->shape));
  return kiln_lower_binary_ranges(l, KILN_BINARY_ADD, &out, &y->shape, &t_range, &per_channel,
                                  &out, &y->shape);
}

kiln_status_t kiln_lower_conv_transpose(const kiln_lower_t* l) {
  const kiln_graph_value_t* xv = kiln_lower_in(l, 0);
  const kiln_graph_value_t* wv = kiln_lower_in(l, 1);
  const kiln_graph_value_t* yv = kiln_lower_out(l, 0);
  kiln_graph_shape_t x4, y4;
  if (!kiln_lower_shape_2d(&xv->shape, &x4) || !kiln_lower_shape_2d(&yv->shape, &y4)) {
    return kiln_lower_refuse(l, "only 1-D (NCL) and 2-D (NCHW) ConvTranspose is supported");
  }
  kiln_window_t w;
  KILN_RETURN_IF_ERROR(kiln_lower_window_2d(l, &xv->shape, &wv->shape, true, false, true, &w));
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "group", 1, &group));
  const kiln_graph_shape_t* x = &x4;
  const kiln_graph_shape_t* y = &y4;
  kiln_kernel_conv2d_params_t p = {
      .batch = (uint32_t)x->dims[0], .in_channels = (uint32_t)x->dims[1],
      .in_height = (uint32_t)x->dims[2], .in_width = (uint32_t)x->dims[3],
      .out_channels = (uint32_t)y->dims[1], .out_height = (uint32_t)y->dims[2],
      .out_width = (uint32_t)y->dims[3], .groups = (uint32_t)group,
      .kernel_h = (uint32_t)w.kernel[0], .kernel_w = (uint32_t)w.kernel[1],
      .stride_h = (uint32_t)w.stride[0], .stride_w = (uint32_t)w.stride[1],
      .pad_top = (uint32_t)w.pad_begin[0], .pad_left = (uint32_t)w.pad_begin[1],
      .dilation_h = (uint32_t)w.dilation[0], .dilation_w = (uint32_t)w.dilation[1]};
  bool has_bias = kiln_lower_in(l, 2) != NULL;
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_CONV_TRANSPOSE2D, .push = &p,
                                    .binding_count = 5, .written_mask = 1u << 4,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = kiln_lower_count(y)};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  desc.bindings[2] = desc.bindings[1];
  if (has_bias) KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 2, &desc.bindings[2]));
  desc.bindings[3] = desc.bindings[1];
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[4]));
  static const uint32_t specs[3] = {KILN_SPEC_CONV_ACTIVATION, KILN_SPEC_CONV_HAS_BIAS,
                                    KILN_SPEC_CONV_HAS_RESIDUAL};
  kiln_lower_reduction_t r = {specs, KILN_ACT_NONE, has_bias, false};
  return kiln_lower_add_reduction(l, &desc, &r);
}

static kiln_status_t kiln_more_choice(const kiln_lower_t* l, const char* attr,
                                      const char* fallback, const char* const* names,
                                      const uint32_t* codes, size_t count, uint32_t* out) {
  const char* value = NULL;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(l->node, attr, fallback, &value));
  for (size_t i = 0; i < count; ++i) {
    if (strcmp(names[i], value) == 0) {
      *out = codes[i];
      return kiln_ok_status();
    }
  }
  return kiln_lower_refuse(l, "%s='%s' is not supported", attr, value);
}

kiln_status_t kiln_lower_resize(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (x->shape.rank != 4 || x->shape.dims[0] != y->shape.dims[0] ||
      x->shape.dims[1] != y->shape.dims[1]) {
    return kiln_lower_refuse(l, "only resizing the two spatial axes of NCHW is supported");
  }
  static const char* const kModes[] = {"nearest", "linear", "cubic"};
  static const uint32_t kModeCodes[] = {KILN_RESIZE_NEAREST, KILN_RESIZE_LINEAR,
                                        KILN_RESIZE_CUBIC};
  static const char* const kCoords[] = {"half_pixel", "asymmetric", "align_corners",
                                        "pytorch_half_pixel", "tf_half_pixel_for_nn"};
  static const uint32_t kCoordCodes[] = {
      KILN_RESIZE_COORD_HALF_PIXEL, KILN_RESIZE_COORD_ASYMMETRIC,
      KILN_RESIZE_COORD_ALIGN_CORNERS, KILN_RESIZE_COORD_PYTORCH_HALF_PIXEL,
      KILN_RESIZE_COORD_TF_HALF_PIXEL_FOR_NN};
  static const char* const kNearest[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                         "ceil"};
  static const uint32_t kNearestCodes[] = {
      KILN_RESIZE_NEAREST_ROUND_PREFER_FLOOR, KILN_RESIZE_NEAREST_ROUND_PREFER_CEIL,
      KILN_RESIZE_NEAREST_FLOOR, KILN_RESIZE_NEAREST_CEIL};
  // Upsample (opsets 7-9) is Resize with the asymmetric transform, rounding
  // down, and its scales in input 1 or the `scales` attribute.
  bool upsample = strcmp(l->node->op_type, "Upsample") == 0;
  uint32_t mode = 0, coord = 0, nearest = 0;
  KILN_RETURN_IF_ERROR(kiln_more_choice(l, "mode", "nearest", kModes, kModeCodes,
                                        upsample ? 2 : 3, &mode));
  KILN_RETURN_IF_ERROR(kiln_more_choice(l, "coordinate_transformation_mode",
                                        upsample ? "asymmetric" : "half_pixel", kCoords,
                                        kCoordCodes, 5, &coord));
  KILN_RETURN_IF_ERROR(kiln_more_choice(l, "nearest_mode",
                                        upsample ? "floor" : "round_prefer_floor", kNearest,
                                        kNearestCodes, 4, &nearest));
  float scale_h = (float)y->shape.dims[2] / (float)x->shape.dims[2];
  float scale_w = (float)y->shape.dims[3] / (float)x->shape.dims[3];
  const kiln_graph_value_t* scales = kiln_lower_in(l, upsample ? 1 : 2);
  const kiln_graph_attr_t* scales_attr =
      upsample ? kiln_graph_node_find_attr(l->node, "scales") : NULL;
  const float* s = NULL;
  if (scales_attr) {
    if (scales_attr->type != KILN_GRAPH_ATTR_FLOATS || scales_attr->count != 4) {
      return kiln_lower_refuse(l, "scales must be 4 floats");
    }
    s = scales_attr->floats;
  } else if (scales && kiln_lower_count(&scales->shape) > 0) {
    if (!scales->data || scales->dtype != KILN_GRAPH_DTYPE_F32 ||
        kiln_lower_count(&scales->shape) != 4) {
      return kiln_lower_refuse(l, "scales must be 4 constant floats");
    }
    s = scales->data;
  }
  if (s) {
    scale_h = s[2];
    scale_w = s[3];
    // These transforms use the unfloored in * scale length; the kernel
    // uses the output size, so they agree only when nothing was floored.
    // Otherwise they are mapped onto transforms the kernel has.
    double length_h = (double)x->shape.dims[2] * scale_h;
    double length_w = (double)x->shape.dims[3] * scale_w;
    bool exact = length_h == (double)y->shape.dims[2] && length_w == (double)y->shape.dims[3];
    if (!exact && coord == KILN_RESIZE_COORD_ALIGN_CORNERS) {
      // x * (in - 1) / (length - 1) is asymmetric's x / scale' with scale'
      // = (length - 1) / (in - 1); a length of 1 or an input of 1 maps
      // everything to 0 (x / FLT_MAX; x is 0 when the length is 1).
      double in_h = (double)x->shape.dims[2], in_w = (double)x->shape.dims[3];
      scale_h = in_h > 1 && length_h > 1 ? (float)((length_h - 1) / (in_h - 1)) : FLT_MAX;
      scale_w = in_w > 1 && length_w > 1 ? (float)((length_w - 1) / (in_w - 1)) : FLT_MAX;
      coord = KILN_RESIZE_COORD_ASYMMETRIC;
    } else if (!exact && coord == KILN_RESIZE_COORD_PYTORCH_HALF_PIXEL) {
      // Its formula is half_pixel's where the length passes 1 (else 0); the
      // kernel tests the output size instead, right where both agree.
      bool kernel_ok = (length_h > 1) == (y->shape.dims[2] > 1) &&
                       (length_w > 1) == (y->shape.dims[3] > 1);
      if (!kernel_ok) {
        if (!(length_h > 1 && length_w > 1)) {
          return kiln_lower_refuse(l, "pytorch_half_pixel with a resized length above 1 "
                                      "that floors to 1 on one axis and not above 1 on the "
                                      "other is not supported");
        }
        coord = KILN_RESIZE_COORD_HALF_PIXEL;
      }
    }
  }
  kiln_kernel_resize_params_t p = {
      (uint32_t)(x->shape.dims[0] * x->shape.dims[1]), (uint32_t)x->shape.dims[2],
      (uint32_t)x->shape.dims[3], (uint32_t)y->shape.dims[2], (uint32_t)y->shape.dims[3],
      scale_h, scale_w};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_RESIZE, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = kiln_lower_count(&y->shape)};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[1]));
  float cubic_a = -0.75f;
  int64_t exclude_outside = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(l->node, "cubic_coeff_a", -0.75f, &cubic_a));
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(l->node, "exclude_outside", 0, &exclude_outside));
  uint32_t cubic_a_bits = 0;
  memcpy(&cubic_a_bits, &cubic_a, sizeof(cubic_a_bits));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_RESIZE_MODE, mode},
                                    {KILN_SPEC_RESIZE_COORD, coord},
                                    {KILN_SPEC_RESIZE_NEAREST, nearest},
                                    {KILN_SPEC_RESIZE_CUBIC_A, cubic_a_bits},
                                    {KILN_SPEC_RESIZE_EXCLUDE_OUTSIDE, exclude_outside != 0}};
  desc.ops = ops;
  desc.op_count = mode == KILN_RESIZE_CUBIC ? 5 : 3;
  return kiln_emit_add_dispatch(l->program, &desc);
}

// Where with a constant condition and one constant branch (masked_fill with
// a causal or padding mask folded at compile time):
// one select dispatch, out = table == KEEP ? v : table, with the table
// holding k where the constant k is chosen and the KEEP marker elsewhere.
kiln_status_t kiln_lower_where(const kiln_lower_t* l) {
  const kiln_graph_value_t* cond = kiln_lower_in(l, 0);
  const kiln_graph_value_t* x = kiln_lower_in(l, 1);
  const kiln_graph_value_t* yv = kiln_lower_in(l, 2);
  const kiln_graph_value_t* out_value = kiln_lower_out(l, 0);
  if (!cond || !x || !yv || !out_value || !cond->data || (x->data != NULL) == (yv->data != NULL)) {
    return kiln_lower_refuse(l, "Where needs a constant condition and exactly one constant "
                                "branch (run-time masks are not supported)");
  }
  // The select table marks kept values with a NaN bit pattern of f32.
  if (kiln_emit_node_is_f16(l->program)) {
    return kiln_lower_refuse(l, "Where runs in float32 only (compile with --precision=f32)");
  }
  if (x->dtype != KILN_GRAPH_DTYPE_F32) return kiln_lower_refuse(l, "Where of non-float data");
  bool k_is_x = x->data != NULL;
  const kiln_graph_value_t* k = k_is_x ? x : yv;
  size_t v_index = k_is_x ? 2 : 1;
  // One table at the broadcast shape of the condition and k: k where it is
  // taken, else the marker that makes the select kernel pass v through
  // (exact for every v, NaN and infinities included).
  kiln_graph_shape_t s;
  memset(&s, 0, sizeof(s));
  s.rank = cond->shape.rank > k->shape.rank ? cond->shape.rank : k->shape.rank;
  for (int32_t d = 0; d < s.rank; ++d) {
    int32_t dc = d - (s.rank - cond->shape.rank), dk = d - (s.rank - k->shape.rank);
    int64_t a = dc >= 0 ? cond->shape.dims[dc] : 1, b = dk >= 0 ? k->shape.dims[dk] : 1;
    s.dims[d] = a > b ? a : b;
  }
  if (s.rank > KILN_KERNEL_MAX_RANK) return kiln_lower_refuse(l, "rank > 6");
  uint64_t count = kiln_lower_count(&s);
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, count));
  int64_t cs[KILN_GRAPH_MAX_RANK], ks[KILN_GRAPH_MAX_RANK], coords[KILN_GRAPH_MAX_RANK] = {0};
  kiln_ref_broadcast_strides(&cond->shape, &s, cs);
  kiln_ref_broadcast_strides(&k->shape, &s, ks);
  float* table = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(l->program->allocator,
                                             (size_t)count * sizeof(float), (void**)&table));
  const uint8_t* c = (const uint8_t*)cond->data;
  const float* kv = (const float*)k->data;
  int64_t co = 0, ko = 0;
  for (uint64_t i = 0; i < count; ++i) {
    bool take_k = (c[co] != 0) == k_is_x;
    uint32_t bits = KILN_SELECT_KEEP_BITS;
    if (take_k) {
      memcpy(&bits, &kv[ko], sizeof(bits));
      // A k that happens to carry the marker is a NaN: keep it one.
      if (bits == KILN_SELECT_KEEP_BITS) bits = 0x7fc00000u;
    }
    memcpy(&table[i], &bits, sizeof(bits));
    for (int32_t d = s.rank; d-- > 0;) {
      co += cs[d];
      ko += ks[d];
      if (++coords[d] < s.dims[d]) break;
      co -= cs[d] * s.dims[d];
      ko -= ks[d] * s.dims[d];
      coords[d] = 0;
    }
  }
  kiln_emit_range_t fill;
  kiln_status_t status =
      kiln_emit_add_weight(l->program, table, (size_t)count * sizeof(float), &fill);
  kiln_allocator_free(l->program->allocator, table);
  KILN_RETURN_IF_ERROR(status);
  kiln_emit_range_t v, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, v_index, &v));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  const kiln_graph_shape_t* y = &out_value->shape;
  return kiln_lower_binary_ranges(l, KILN_BINARY_SELECT, &v,
                                  &kiln_lower_in(l, v_index)->shape, &fill, &s, &out, y);
}
