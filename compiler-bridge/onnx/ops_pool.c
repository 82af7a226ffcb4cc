// MaxPool (dilations, ceil_mode, auto_pad), AveragePool (count_include_pad,
// ceil_mode, auto_pad, dilations from opset 19) and the global pools.
#include <float.h>
#include <string.h>

#include "window.h"

static bool kiln_is_max(const kiln_graph_node_t* node) {
  return strstr(node->op_type, "Max") != NULL;
}

// AveragePool takes dilations from opset 19.
static bool kiln_pool_dilations(const kiln_graph_node_t* node, int64_t opset) {
  return kiln_is_max(node) || opset >= 19;
}

static kiln_status_t kiln_infer_pool(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  if (x->shape.rank < 3) {
    return kiln_op_unsupported(args, "input rank %d; supported: 3 to 5",
                               (int)x->shape.rank);
  }
  if (args->node->output_count > 1 && args->node->outputs[1] >= 0) {
    return kiln_op_unsupported(args, "the Indices output is not supported");
  }
  if (!kiln_pool_dilations(args->node, args->graph->opset) &&
      kiln_graph_node_find_attr(args->node, "dilations")) {
    return kiln_op_unsupported(args, "AveragePool dilations need opset 19");
  }
  int64_t storage_order = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "storage_order", 0,
                                                &storage_order));
  int64_t count_include_pad = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(
      args->node, "count_include_pad", 0, &count_include_pad));
  kiln_window_t window;
  KILN_RETURN_IF_ERROR_ANNOTATE(
      kiln_window_resolve(args->node, x->shape.rank - 2, x->shape.dims + 2,
                          NULL, true,
                          kiln_pool_dilations(args->node, args->graph->opset),
                          &window),
      "opset %lld", (long long)args->graph->opset);
  kiln_graph_shape_t shape = x->shape;
  for (int32_t i = 0; i < window.spatial; ++i) shape.dims[2 + i] = window.out[i];
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
}

static kiln_status_t kiln_run_pool(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  bool is_max = kiln_is_max(args->node);
  int64_t count_include_pad = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(
      args->node, "count_include_pad", 0, &count_include_pad));
  kiln_window_t window;
  KILN_RETURN_IF_ERROR(kiln_window_resolve(args->node, x->shape.rank - 2,
                                           x->shape.dims + 2, NULL, true,
                                           kiln_pool_dilations(args->node, args->opset),
                                           &window));
  int64_t* table = NULL;
  KILN_RETURN_IF_ERROR(kiln_window_table(&window, args->allocator, &table));
  size_t planes = (size_t)x->shape.dims[0] * (size_t)x->shape.dims[1];
  size_t in_plane = 1;
  for (int32_t i = 0; i < window.spatial; ++i) in_plane *= (size_t)window.in[i];
  size_t outs = kiln_window_out_count(&window);
  size_t kernels = kiln_window_kernel_count(&window);
  for (size_t p = 0; p < planes; ++p) {
    const float* in = (const float*)x->data + p * in_plane;
    float* out = (float*)args->outputs[0].data + p * outs;
    for (size_t o = 0; o < outs; ++o) {
      const int64_t* row = table + o * kernels;
      double sum = 0.0;
      float best = -FLT_MAX;
      size_t valid = 0, counted = 0;
      for (size_t k = 0; k < kernels; ++k) {
        if (row[k] >= 0) {
          float v = in[row[k]];
          sum += v;
          if (v > best) best = v;
          ++valid;
          ++counted;
        } else if (row[k] == KILN_WINDOW_PAD) {
          ++counted;
        }
      }
      if (is_max) {
        out[o] = best;
      } else {
        size_t divisor = count_include_pad ? counted : valid;
        out[o] = divisor ? (float)(sum / (double)divisor) : 0.0f;
      }
    }
  }
  kiln_allocator_free(args->allocator, table);
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_global_pool(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  if (x->shape.rank < 2) {
    return kiln_op_invalid(args, "input rank must be at least 2");
  }
  kiln_graph_shape_t shape = x->shape;
  for (int32_t i = 2; i < shape.rank; ++i) shape.dims[i] = 1;
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &shape);
}

static kiln_status_t kiln_run_global_pool(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  bool is_max = kiln_is_max(args->node);
  size_t planes = (size_t)x->shape.dims[0] * (size_t)x->shape.dims[1];
  size_t plane = planes ? x->count / planes : 0;
  for (size_t p = 0; p < planes; ++p) {
    const float* in = (const float*)x->data + p * plane;
    double sum = 0.0;
    float best = -FLT_MAX;
    for (size_t i = 0; i < plane; ++i) {
      sum += in[i];
      if (in[i] > best) best = in[i];
    }
    ((float*)args->outputs[0].data)[p] =
        is_max ? best : (plane ? (float)(sum / (double)plane) : 0.0f);
  }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_pool[] = {
    {"MaxPool",
     "auto_pad,ceil_mode,dilations,kernel_shape,pads,storage_order,strides", 1,
     1, 1, 2, kiln_infer_pool, kiln_run_pool},
    {"AveragePool",
     "auto_pad,ceil_mode,count_include_pad,dilations,kernel_shape,pads,strides", 1, 1, 1,
     1, kiln_infer_pool, kiln_run_pool},
    {"GlobalAveragePool", "", 1, 1, 1, 1, kiln_infer_global_pool,
     kiln_run_global_pool},
    {"GlobalMaxPool", "", 1, 1, 1, 1, kiln_infer_global_pool,
     kiln_run_global_pool},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
