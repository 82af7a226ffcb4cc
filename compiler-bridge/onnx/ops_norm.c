// Normalizations and softmax: BatchNormalization (training mode folds), Layer-,
// Instance- and GroupNormalization, Softmax/LogSoftmax (per-axis from opset 13, the
// flattened 2-D form before). Statistics in double.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

static kiln_status_t kiln_require_vector(const kiln_op_infer_args_t* args,
                                         size_t index, int64_t length) {
  const kiln_graph_value_t* v = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, index, KILN_OP_F32, &v));
  if (v->shape.rank != 1 || v->shape.dims[0] != length) {
    return kiln_op_invalid(args, "input %zu must have shape [%lld]", index,
                           (long long)length);
  }
  return kiln_ok_status();
}

// training_mode 1 normalizes by the batch's own statistics and may output
// the updated running ones: what timm's weight-standardized convs (NFNet,
// BiT) apply to constant weights, so it folds; on a run-time input the GPU
// lowering refuses it (kiln_lower_batch_norm).
static kiln_status_t kiln_infer_batch_norm(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  int64_t training = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "training_mode", 0, &training));
  if (!training && args->node->output_count > 1) {
    // Before opset 14 extra outputs alone meant training: not supported.
    return kiln_op_unsupported(args, "running statistics outputs without training_mode 1 "
                               "(a training graph before opset 14)");
  }
  if (x->shape.rank < 2) return kiln_op_invalid(args, "input rank < 2");
  float epsilon;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  for (size_t i = 1; i < 5; ++i) {
    KILN_RETURN_IF_ERROR(kiln_require_vector(args, i, x->shape.dims[1]));
  }
  const kiln_graph_shape_t channels = {1, {x->shape.dims[1]}};
  for (size_t o = 1; o < args->node->output_count; ++o) {
    KILN_RETURN_IF_ERROR(kiln_op_set_output(args, o, KILN_GRAPH_DTYPE_F32, &channels));
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &x->shape);
}

// Training mode: per channel, the mean and population variance over the
// batch and spatial dims (double), and running = input * momentum +
// current * (1 - momentum) for the optional outputs.
static void kiln_batch_norm_statistics(const kiln_op_run_args_t* args, float momentum,
                                       float* mean, float* var) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const size_t batch = (size_t)x->shape.dims[0], channels = (size_t)x->shape.dims[1];
  const size_t planes = batch * channels;
  const size_t plane = planes ? x->count / planes : 0;
  const float* px = (const float*)x->data;
  for (size_t c = 0; c < channels; ++c) {
    double sum = 0.0, squares = 0.0;
    for (size_t n = 0; n < batch; ++n) {
      for (size_t i = 0; i < plane; ++i) sum += px[(n * channels + c) * plane + i];
    }
    const double count = (double)(batch * plane), m = count ? sum / count : 0.0;
    for (size_t n = 0; n < batch; ++n) {
      for (size_t i = 0; i < plane; ++i) {
        const double d = px[(n * channels + c) * plane + i] - m;
        squares += d * d;
      }
    }
    mean[c] = (float)m;
    var[c] = (float)(count ? squares / count : 0.0);
    for (size_t o = 1; o < 3; ++o) {
      if (o >= args->output_count || !args->outputs[o].data) continue;
      const float input = ((const float*)args->inputs[2 + o].data)[c];
      ((float*)args->outputs[o].data)[c] =
          input * momentum + (o == 1 ? mean[c] : var[c]) * (1.0f - momentum);
    }
  }
}

static kiln_status_t kiln_run_batch_norm(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  float epsilon, momentum;
  int64_t training = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "momentum", 0.9f, &momentum));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "training_mode", 0, &training));
  const float* scale = (const float*)args->inputs[1].data;
  const float* bias = (const float*)args->inputs[2].data;
  const float* mean = (const float*)args->inputs[3].data;
  const float* var = (const float*)args->inputs[4].data;
  size_t batch = (size_t)x->shape.dims[0], channels = (size_t)x->shape.dims[1];
  float* batch_stats = NULL;
  if (training) {
    batch_stats = (float*)malloc(2 * (channels ? channels : 1) * sizeof(float));
    if (!batch_stats) {
      return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                              "node '%s' (BatchNormalization): no memory for statistics",
                              args->node->name);
    }
    kiln_batch_norm_statistics(args, momentum, batch_stats, batch_stats + channels);
    mean = batch_stats;
    var = batch_stats + channels;
  }
  size_t planes = batch * channels;
  size_t plane = planes ? x->count / planes : 0;
  const float* px = (const float*)x->data;
  float* py = (float*)args->outputs[0].data;
  for (size_t n = 0; n < batch; ++n) {
    for (size_t c = 0; c < channels; ++c) {
      double inv = 1.0 / sqrt((double)var[c] + epsilon);
      size_t base = (n * channels + c) * plane;
      for (size_t i = 0; i < plane; ++i) {
        py[base + i] = (float)((px[base + i] - (double)mean[c]) * inv * scale[c] +
                               bias[c]);
      }
    }
  }
  free(batch_stats);
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_instance_norm(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  if (x->shape.rank < 3) return kiln_op_invalid(args, "input rank < 3");
  float epsilon;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  KILN_RETURN_IF_ERROR(kiln_require_vector(args, 1, x->shape.dims[1]));
  KILN_RETURN_IF_ERROR(kiln_require_vector(args, 2, x->shape.dims[1]));
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &x->shape);
}

// Normalizes `rows` rows of `length` values; scale/bias index per element of
// a row through `param_index` (NULL: per-row, as InstanceNormalization).
static void kiln_normalize_rows(const float* x, float* y, float* mean_out,
                                float* inv_out, size_t rows, size_t length,
                                double epsilon) {
  for (size_t r = 0; r < rows; ++r) {
    const float* in = x + r * length;
    double mean = 0.0;
    for (size_t i = 0; i < length; ++i) mean += in[i];
    mean = length ? mean / (double)length : 0.0;
    double var = 0.0;
    for (size_t i = 0; i < length; ++i) {
      double d = in[i] - mean;
      var += d * d;
    }
    var = length ? var / (double)length : 0.0;
    double inv = 1.0 / sqrt(var + epsilon);
    for (size_t i = 0; i < length; ++i) {
      y[r * length + i] = (float)((in[i] - mean) * inv);
    }
    if (mean_out) mean_out[r] = (float)mean;
    if (inv_out) inv_out[r] = (float)inv;
  }
}

static kiln_status_t kiln_run_instance_norm(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  float epsilon;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  size_t batch = (size_t)x->shape.dims[0], channels = (size_t)x->shape.dims[1];
  size_t rows = batch * channels;
  size_t plane = rows ? x->count / rows : 0;
  float* py = (float*)args->outputs[0].data;
  kiln_normalize_rows((const float*)x->data, py, NULL, NULL, rows, plane,
                      epsilon);
  const float* scale = (const float*)args->inputs[1].data;
  const float* bias = (const float*)args->inputs[2].data;
  for (size_t r = 0; r < rows; ++r) {
    size_t c = r % channels;
    for (size_t i = 0; i < plane; ++i) {
      py[r * plane + i] = py[r * plane + i] * scale[c] + bias[c];
    }
  }
  return kiln_ok_status();
}

// GroupNormalization (opset 18: scale/bias per group; 21: per channel):
// N x C x spatial, num_groups dividing C, statistics over (C / G) * spatial.
static kiln_status_t kiln_infer_group_norm(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  if (x->shape.rank < 3) return kiln_op_invalid(args, "input rank < 3");
  int64_t groups = 0, stash = 1;
  float epsilon;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "num_groups", 0, &groups));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "stash_type", 1, &stash));
  if (stash != 1) {
    return kiln_op_unsupported(args, "stash_type=%lld is not supported; supported: 1 "
                               "(float32)", (long long)stash);
  }
  int64_t channels = x->shape.dims[1];
  if (groups <= 0 || channels % groups != 0) {
    return kiln_op_invalid(args, "num_groups=%lld must divide the %lld channels",
                           (long long)groups, (long long)channels);
  }
  int64_t params = args->graph->opset >= 21 ? channels : groups;
  KILN_RETURN_IF_ERROR(kiln_require_vector(args, 1, params));
  KILN_RETURN_IF_ERROR(kiln_require_vector(args, 2, params));
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &x->shape);
}

static kiln_status_t kiln_run_group_norm(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  float epsilon;
  int64_t groups = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "num_groups", 1, &groups));
  size_t batch = (size_t)x->shape.dims[0], channels = (size_t)x->shape.dims[1];
  size_t rows = batch * (size_t)groups;
  size_t length = rows ? x->count / rows : 0;
  size_t plane = channels ? x->count / (batch * channels) : 0;
  float* py = (float*)args->outputs[0].data;
  kiln_normalize_rows((const float*)x->data, py, NULL, NULL, rows, length, epsilon);
  const float* scale = (const float*)args->inputs[1].data;
  const float* bias = (const float*)args->inputs[2].data;
  bool per_channel = args->opset >= 21;
  for (size_t r = 0; r < rows; ++r) {
    size_t g = r % (size_t)groups;
    for (size_t i = 0; i < length; ++i) {
      size_t p = per_channel ? g * (channels / (size_t)groups) + i / plane : g;
      py[r * length + i] = py[r * length + i] * scale[p] + bias[p];
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_layer_norm_axis(const kiln_graph_node_t* node,
                                          int32_t rank, int32_t* out_axis) {
  *out_axis = 0;
  int64_t axis = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "axis", -1, &axis));
  if (axis < -rank || axis >= rank) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "node '%s' (LayerNormalization): axis %lld out of "
                            "range", node->name, (long long)axis);
  }
  *out_axis = (int32_t)(axis < 0 ? axis + rank : axis);
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_layer_norm(const kiln_op_infer_args_t* args) {
  if (args->graph->opset < 17) {
    return kiln_op_unsupported(args, "LayerNormalization needs opset 17");
  }
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  int64_t stash_type = 1;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "stash_type", 1, &stash_type));
  if (stash_type != 1) {
    return kiln_op_unsupported(args, "stash_type=%lld; supported: 1 (float)",
                               (long long)stash_type);
  }
  float epsilon;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  int32_t axis;
  KILN_RETURN_IF_ERROR(kiln_layer_norm_axis(args->node, x->shape.rank, &axis));
  kiln_graph_shape_t normalized;
  memset(&normalized, 0, sizeof(normalized));
  for (int32_t d = axis; d < x->shape.rank; ++d) {
    normalized.dims[normalized.rank++] = x->shape.dims[d];
  }
  for (size_t i = 1; i < 3; ++i) {
    if (!kiln_op_input(args, i)) continue;
    const kiln_graph_value_t* p = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, i, KILN_OP_F32, &p));
    kiln_graph_shape_t joined;
    KILN_RETURN_IF_ERROR(
        kiln_op_broadcast(args, &normalized, &p->shape, &joined));
    if (!kiln_graph_shape_equal(&joined, &normalized)) {
      return kiln_op_invalid(args, "input %zu does not broadcast to the "
                             "normalized shape", i);
    }
  }
  // kiln.residual (pass_fuse_residual_norm.c): input 3, x's exact shape,
  // added to x before normalizing.
  int64_t residual = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "kiln.residual", -1, &residual));
  if (args->node->input_count > 3 || residual >= 0) {
    const kiln_graph_value_t* r = NULL;
    if (residual != 3) return kiln_op_invalid(args, "a 4th input needs kiln.residual=3");
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 3, KILN_OP_F32, &r));
    if (!kiln_graph_shape_equal(&r->shape, &x->shape)) {
      return kiln_op_invalid(args, "the kiln.residual input's shape differs from X's");
    }
  }
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &x->shape));
  kiln_graph_shape_t stats = x->shape;
  for (int32_t d = axis; d < stats.rank; ++d) stats.dims[d] = 1;
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 1, KILN_GRAPH_DTYPE_F32, &stats));
  return kiln_op_set_output(args, 2, KILN_GRAPH_DTYPE_F32, &stats);
}

static kiln_status_t kiln_run_layer_norm(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  float epsilon;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_float(args->node, "epsilon", 1e-5f, &epsilon));
  int32_t axis;
  KILN_RETURN_IF_ERROR(kiln_layer_norm_axis(args->node, x->shape.rank, &axis));
  kiln_graph_shape_t normalized;
  memset(&normalized, 0, sizeof(normalized));
  for (int32_t d = axis; d < x->shape.rank; ++d) {
    normalized.dims[normalized.rank++] = x->shape.dims[d];
  }
  size_t length = 1;
  for (int32_t d = 0; d < normalized.rank; ++d) length *= (size_t)normalized.dims[d];
  size_t rows = length ? x->count / length : 0;
  float* py = (float*)args->outputs[0].data;
  float* mean = args->output_count > 1 ? (float*)args->outputs[1].data : NULL;
  float* inv = args->output_count > 2 ? (float*)args->outputs[2].data : NULL;
  const float* px = (const float*)x->data;
  float* sum = NULL;
  if (args->input_count > 3 && args->inputs[3].data) {
    // A fused residual Add: normalize x + residual.
    KILN_RETURN_IF_ERROR(kiln_allocator_malloc(args->allocator,
                                               (x->count ? x->count : 1) * sizeof(float),
                                               (void**)&sum));
    const float* pr = (const float*)args->inputs[3].data;
    for (size_t i = 0; i < x->count; ++i) sum[i] = px[i] + pr[i];
    px = sum;
  }
  kiln_normalize_rows(px, py, mean, inv, rows, length, epsilon);
  kiln_allocator_free(args->allocator, sum);
  int64_t strides[2][KILN_GRAPH_MAX_RANK];
  const float* params[2] = {NULL, NULL};
  for (size_t i = 0; i < 2; ++i) {
    if (args->input_count > i + 1 && args->inputs[i + 1].data) {
      params[i] = (const float*)args->inputs[i + 1].data;
      kiln_ref_broadcast_strides(&args->inputs[i + 1].shape, &normalized,
                                 strides[i]);
    }
  }
  for (size_t r = 0; r < rows; ++r) {
    int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
    int64_t offsets[2] = {0, 0};
    float* row = py + r * length;
    for (size_t i = 0; i < length; ++i) {
      float v = row[i];
      if (params[0]) v *= params[0][offsets[0]];
      if (params[1]) v += params[1][offsets[1]];
      row[i] = v;
      for (int32_t d = normalized.rank; d-- > 0;) {
        for (size_t p = 0; p < 2; ++p) if (params[p]) offsets[p] += strides[p][d];
        if (++coords[d] < normalized.dims[d]) break;
        for (size_t p = 0; p < 2; ++p) {
          if (params[p]) offsets[p] -= strides[p][d] * normalized.dims[d];
        }
        coords[d] = 0;
      }
    }
  }
  return kiln_ok_status();
}

// Softmax geometry: outer x axis x inner (opset 13+), or rows over the
// flattened trailing dims (opset < 13, where `inner` is 1).
static kiln_status_t kiln_softmax_geometry(const kiln_graph_node_t* node,
                                           int64_t opset,
                                           const kiln_graph_shape_t* shape,
                                           size_t* outer, size_t* axis_size,
                                           size_t* inner) {
  *outer = 1;
  *axis_size = 1;
  *inner = 1;
  int64_t axis = opset >= 13 ? -1 : 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(node, "axis", axis, &axis));
  int32_t rank = shape->rank;
  if (axis < -rank || axis >= (rank ? rank : 1)) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "node '%s' (op %s): axis %lld out of range",
                            node->name, node->op_type, (long long)axis);
  }
  if (axis < 0) axis += rank;
  *outer = 1;
  *axis_size = 1;
  *inner = 1;
  for (int32_t d = 0; d < axis; ++d) *outer *= (size_t)shape->dims[d];
  if (opset >= 13) {
    if (rank) *axis_size = (size_t)shape->dims[axis];
    for (int32_t d = (int32_t)axis + 1; d < rank; ++d) {
      *inner *= (size_t)shape->dims[d];
    }
  } else {
    for (int32_t d = (int32_t)axis; d < rank; ++d) {
      *axis_size *= (size_t)shape->dims[d];
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_softmax(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  size_t outer, axis_size, inner;
  KILN_RETURN_IF_ERROR(kiln_softmax_geometry(args->node, args->graph->opset,
                                             &x->shape, &outer, &axis_size,
                                             &inner));
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &x->shape);
}

static kiln_status_t kiln_run_softmax(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  bool log_form = strcmp(args->node->op_type, "LogSoftmax") == 0;
  size_t outer, axis_size, inner;
  KILN_RETURN_IF_ERROR(kiln_softmax_geometry(args->node, args->opset, &x->shape,
                                             &outer, &axis_size, &inner));
  const float* px = (const float*)x->data;
  float* py = (float*)args->outputs[0].data;
  for (size_t o = 0; o < outer; ++o) {
    for (size_t i = 0; i < inner; ++i) {
      size_t base = o * axis_size * inner + i;
      double max = -INFINITY;
      for (size_t a = 0; a < axis_size; ++a) {
        if (px[base + a * inner] > max) max = px[base + a * inner];
      }
      double sum = 0.0;
      for (size_t a = 0; a < axis_size; ++a) sum += exp(px[base + a * inner] - max);
      for (size_t a = 0; a < axis_size; ++a) {
        double shifted = px[base + a * inner] - max;
        py[base + a * inner] =
            (float)(log_form ? shifted - log(sum) : exp(shifted) / sum);
      }
    }
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_norm[] = {
    {"BatchNormalization", "epsilon,momentum,training_mode", 5, 5, 1, 3,
     kiln_infer_batch_norm, kiln_run_batch_norm, 9},
    {"InstanceNormalization", "epsilon", 3, 3, 1, 1, kiln_infer_instance_norm,
     kiln_run_instance_norm},
    {"GroupNormalization", "epsilon,num_groups,stash_type", 3, 3, 1, 1,
     kiln_infer_group_norm, kiln_run_group_norm, 18},
    {"LayerNormalization", "axis,epsilon,stash_type,kiln.residual", 2, 4, 1, 3,
     kiln_infer_layer_norm, kiln_run_layer_norm},
    {"Softmax", "axis", 1, 1, 1, 1, kiln_infer_softmax, kiln_run_softmax},
    {"LogSoftmax", "axis", 1, 1, 1, 1, kiln_infer_softmax, kiln_run_softmax},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
