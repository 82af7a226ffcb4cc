// Conv (groups, depthwise, strides, pads, auto_pad, dilations; 1-3 spatial
// dims) and ConvTranspose, as direct loops over a window table.
#include <string.h>

#include "conv_geometry.h"

#define KILN_EPILOGUE_ATTRS \
  "kiln.bias,kiln.residual,kiln.residual_first,kiln.residual_flat,kiln.activation," \
  "kiln.activation_alpha,kiln.activation_beta,kiln.int8_scale"

// Checks X, W, B and the group count; `transpose` swaps W's channel roles.
static kiln_status_t kiln_conv_check(const kiln_op_infer_args_t* args,
                                     bool transpose, int64_t* out_channels,
                                     kiln_window_t* window) {
  const kiln_graph_value_t* x = NULL;
  const kiln_graph_value_t* w = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 1, KILN_OP_F32, &w));
  if (x->shape.rank < 3 || w->shape.rank != x->shape.rank) {
    return kiln_op_unsupported(args, "X rank %d / W rank %d; supported: equal "
                               "ranks 3 to 5", (int)x->shape.rank,
                               (int)w->shape.rank);
  }
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "group", 1, &group));
  int64_t channels = x->shape.dims[1];
  if (group < 1 || channels % group) {
    return kiln_op_invalid(args, "group %lld does not divide %lld channels",
                           (long long)group, (long long)channels);
  }
  int64_t m;
  if (transpose) {
    if (w->shape.dims[0] != channels) {
      return kiln_op_invalid(args, "W has %lld input channels, X has %lld",
                             (long long)w->shape.dims[0], (long long)channels);
    }
    m = w->shape.dims[1] * group;
  } else {
    m = w->shape.dims[0];
    if (w->shape.dims[1] * group != channels || m % group) {
      return kiln_op_invalid(args, "W shape does not match %lld channels in "
                             "%lld groups", (long long)channels,
                             (long long)group);
    }
  }
  if (kiln_op_input(args, 2)) {
    const kiln_graph_value_t* b = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 2, KILN_OP_F32, &b));
    if (b->shape.rank != 1 || b->shape.dims[0] != m) {
      return kiln_op_invalid(args, "B must have shape [%lld]", (long long)m);
    }
  }
  int32_t spatial = x->shape.rank - 2;
  kiln_status_t status =
      transpose ? kiln_window_resolve_transpose(args->node, spatial,
                                                x->shape.dims + 2,
                                                w->shape.dims + 2, window)
                : kiln_window_resolve(args->node, spatial, x->shape.dims + 2,
                                      w->shape.dims + 2, false, true, window);
  KILN_RETURN_IF_ERROR_ANNOTATE(status, "opset %lld",
                                (long long)args->graph->opset);
  *out_channels = m;
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_conv_common(const kiln_op_infer_args_t* args,
                                            bool transpose) {
  int64_t m = 0;
  kiln_window_t window;
  KILN_RETURN_IF_ERROR(kiln_conv_check(args, transpose, &m, &window));
  const kiln_graph_value_t* x = kiln_op_input(args, 0);
  kiln_graph_shape_t shape = x->shape;
  shape.dims[1] = m;
  for (int32_t i = 0; i < window.spatial; ++i) shape.dims[2 + i] = window.out[i];
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape));
  return kiln_op_check_epilogue(args);
}

static kiln_status_t kiln_infer_conv(const kiln_op_infer_args_t* args) {
  return kiln_infer_conv_common(args, false);
}

static kiln_status_t kiln_infer_conv_transpose(const kiln_op_infer_args_t* args) {
  return kiln_infer_conv_common(args, true);
}

static kiln_status_t kiln_run_conv(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const kiln_ref_tensor_t* w = &args->inputs[1];
  const float* bias =
      args->input_count > 2 && args->inputs[2].data
          ? (const float*)args->inputs[2].data
          : NULL;
  kiln_ref_tensor_t* y = &args->outputs[0];
  kiln_conv_geometry_t geo;
  KILN_RETURN_IF_ERROR(kiln_conv_geometry_init(args, x, w, &geo));
  const int64_t* table = geo.table;
  const int64_t batch = geo.batch, channels = geo.channels, m = geo.m;
  const int64_t cg = geo.cg, mg = geo.mg;
  const size_t in_plane = geo.in_plane, outs = geo.outs, kernels = geo.kernels;
  const float* px = (const float*)x->data;
  const float* pw = (const float*)w->data;
  float* py = (float*)y->data;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < m; ++oc) {
      int64_t g = oc / mg;
      const float* wk = pw + (size_t)oc * (size_t)cg * kernels;
      float* out = py + ((size_t)n * (size_t)m + (size_t)oc) * outs;
      for (size_t o = 0; o < outs; ++o) {
        const int64_t* row = table + o * kernels;
        double sum = bias ? bias[oc] : 0.0;
        for (int64_t c = 0; c < cg; ++c) {
          const float* plane =
              px + ((size_t)n * (size_t)channels + (size_t)(g * cg + c)) *
                       in_plane;
          const float* wc = wk + (size_t)c * kernels;
          for (size_t k = 0; k < kernels; ++k) {
            if (row[k] >= 0) sum += (double)plane[row[k]] * wc[k];
          }
        }
        out[o] = (float)sum;
      }
    }
  }
  kiln_conv_geometry_deinit(args, &geo);
  kiln_ref_apply_epilogue(args);
  return kiln_ok_status();
}

// y[n, g*mg+j, o] += x[n, g*cg+c, i] * w[g*cg+c, j, k] where
// o = i*stride + k*dilation - pad_begin.
static kiln_status_t kiln_run_conv_transpose(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const kiln_ref_tensor_t* w = &args->inputs[1];
  const float* bias =
      args->input_count > 2 && args->inputs[2].data
          ? (const float*)args->inputs[2].data
          : NULL;
  kiln_ref_tensor_t* y = &args->outputs[0];
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "group", 1, &group));
  kiln_window_t win;
  KILN_RETURN_IF_ERROR(kiln_window_resolve_transpose(
      args->node, x->shape.rank - 2, x->shape.dims + 2, w->shape.dims + 2,
      &win));
  int64_t batch = x->shape.dims[0], channels = x->shape.dims[1];
  int64_t cg = channels / group, mg = w->shape.dims[1], m = mg * group;
  size_t in_plane = 1, out_plane = kiln_window_out_count(&win);
  for (int32_t i = 0; i < win.spatial; ++i) in_plane *= (size_t)win.in[i];
  size_t kernels = kiln_window_kernel_count(&win);
  double* acc = NULL;
  KILN_RETURN_IF_ERROR(kiln_allocator_calloc_array(
      args->allocator, out_plane ? out_plane : 1, sizeof(double), (void**)&acc));
  const float* px = (const float*)x->data;
  const float* pw = (const float*)w->data;
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t oc = 0; oc < m; ++oc) {
      int64_t g = oc / mg, j = oc % mg;
      for (size_t o = 0; o < out_plane; ++o) acc[o] = bias ? bias[oc] : 0.0;
      for (int64_t c = 0; c < cg; ++c) {
        int64_t ic = g * cg + c;
        const float* plane = px + ((size_t)n * (size_t)channels + (size_t)ic) * in_plane;
        const float* wk = pw + ((size_t)ic * (size_t)mg + (size_t)j) * kernels;
        int64_t ii[KILN_WINDOW_MAX_SPATIAL] = {0};
        for (size_t i = 0; i < in_plane; ++i) {
          int64_t kk[KILN_WINDOW_MAX_SPATIAL] = {0};
          for (size_t k = 0; k < kernels; ++k) {
            int64_t offset = 0;
            bool inside = true;
            for (int32_t d = 0; d < win.spatial; ++d) {
              int64_t pos = ii[d] * win.stride[d] + kk[d] * win.dilation[d] -
                            win.pad_begin[d];
              if (pos < 0 || pos >= win.out[d]) { inside = false; break; }
              offset = offset * win.out[d] + pos;
            }
            if (inside) acc[offset] += (double)plane[i] * wk[k];
            for (int32_t d = win.spatial; d-- > 0;) {
              if (++kk[d] < win.kernel[d]) break;
              kk[d] = 0;
            }
          }
          for (int32_t d = win.spatial; d-- > 0;) {
            if (++ii[d] < win.in[d]) break;
            ii[d] = 0;
          }
        }
      }
      float* out = (float*)y->data + ((size_t)n * (size_t)m + (size_t)oc) * out_plane;
      for (size_t o = 0; o < out_plane; ++o) out[o] = (float)acc[o];
    }
  }
  kiln_allocator_free(args->allocator, acc);
  kiln_ref_apply_epilogue(args);
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_conv[] = {
    {"Conv",
     "auto_pad,dilations,group,kernel_shape,pads,strides," KILN_EPILOGUE_ATTRS,
     2, 8, 1, 1, kiln_infer_conv, kiln_run_conv},
    {"ConvTranspose",
     "auto_pad,dilations,group,kernel_shape,output_padding,output_shape,pads,"
     "strides," KILN_EPILOGUE_ATTRS,
     2, 8, 1, 1, kiln_infer_conv_transpose, kiln_run_conv_transpose},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
