// DepthToSpace (DCR, CRD) and SpaceToDepth: what PixelShuffle and
// PixelUnshuffle export to. Pure data movement; see space_depth.h.
#include <string.h>

#include "ops.h"
#include "space_depth.h"

void kiln_space_depth_plan(const kiln_graph_shape_t* x, int64_t b, bool to_space, bool crd,
                           kiln_space_depth_plan_t* out) {
  memset(out, 0, sizeof(*out));
  int64_t n = x->dims[0], c = x->dims[1], h = x->dims[2], w = x->dims[3];
  out->shape.rank = 6;
  if (to_space) {
    // y[n][c'][h*b + i][w*b + j], walked as (n, c', h, i, w, j).
    int64_t cs = c / (b * b), plane = h * w;
    int64_t dims[6] = {n, cs, h, b, w, b};
    memcpy(out->shape.dims, dims, sizeof(dims));
    int64_t strides_dcr[6] = {c * plane, plane, w, b * cs * plane, 1, cs * plane};
    int64_t strides_crd[6] = {c * plane, b * b * plane, w, b * plane, 1, plane};
    memcpy(out->in_strides, crd ? strides_crd : strides_dcr, sizeof(strides_dcr));
  } else {
    // y[n][(i*b + j)*c + c0][h'][w'], walked as (n, i, j, c0, h', w').
    int64_t hs = h / b, ws = w / b;
    int64_t dims[6] = {n, b, b, c, hs, ws};
    memcpy(out->shape.dims, dims, sizeof(dims));
    int64_t strides[6] = {c * h * w, w, 1, h * w, b * w, b};
    memcpy(out->in_strides, strides, sizeof(strides));
  }
}

static kiln_status_t kiln_infer_space_depth(const kiln_op_infer_args_t* args) {
  bool to_space = strcmp(args->node->op_type, "DepthToSpace") == 0;
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_ANY, &x));
  if (x->shape.rank != 4) return kiln_op_invalid(args, "input must be 4-D (NCHW)");
  int64_t b = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "blocksize", 0, &b));
  if (b < 1 || b > 4096) return kiln_op_invalid(args, "blocksize must be positive");
  if (to_space) {
    static const char* const kModes[] = {"DCR", "CRD", NULL};
    const char* mode = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_attr_choice(args, "mode", "DCR", kModes, &mode));
  }
  kiln_graph_shape_t y = x->shape;
  if (to_space) {
    if (x->shape.dims[1] % (b * b) != 0) {
      return kiln_op_invalid(args, "channels are not a multiple of blocksize^2");
    }
    y.dims[1] = x->shape.dims[1] / (b * b);
    y.dims[2] = x->shape.dims[2] * b;
    y.dims[3] = x->shape.dims[3] * b;
  } else {
    if (x->shape.dims[2] % b != 0 || x->shape.dims[3] % b != 0) {
      return kiln_op_invalid(args, "height and width must be multiples of blocksize");
    }
    y.dims[1] = x->shape.dims[1] * b * b;
    y.dims[2] = x->shape.dims[2] / b;
    y.dims[3] = x->shape.dims[3] / b;
  }
  return kiln_op_set_output(args, 0, x->dtype, &y);
}

static kiln_status_t kiln_run_space_depth(const kiln_op_run_args_t* args) {
  bool to_space = strcmp(args->node->op_type, "DepthToSpace") == 0;
  int64_t b = 1;
  const char* mode = "DCR";
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "blocksize", 1, &b));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(args->node, "mode", "DCR", &mode));
  kiln_space_depth_plan_t plan;
  kiln_space_depth_plan(&args->inputs[0].shape, b, to_space, strcmp(mode, "CRD") == 0, &plan);
  size_t elem = kiln_graph_dtype_size(args->inputs[0].dtype);
  const uint8_t* src = (const uint8_t*)args->inputs[0].data;
  uint8_t* dst = (uint8_t*)args->outputs[0].data;
  const int64_t* d = plan.shape.dims;
  const int64_t* s = plan.in_strides;
  for (int64_t i0 = 0; i0 < d[0]; ++i0)
    for (int64_t i1 = 0; i1 < d[1]; ++i1)
      for (int64_t i2 = 0; i2 < d[2]; ++i2)
        for (int64_t i3 = 0; i3 < d[3]; ++i3)
          for (int64_t i4 = 0; i4 < d[4]; ++i4)
            for (int64_t i5 = 0; i5 < d[5]; ++i5) {
              int64_t at = i0 * s[0] + i1 * s[1] + i2 * s[2] + i3 * s[3] + i4 * s[4] + i5 * s[5];
              memcpy(dst, src + (size_t)at * elem, elem);
              dst += elem;
            }
  return kiln_ok_status();
}

const kiln_op_def_t kiln_ops_space_depth[] = {
    {"DepthToSpace", "blocksize,mode", 1, 1, 1, 1, kiln_infer_space_depth, kiln_run_space_depth,
     11},
    {"SpaceToDepth", "blocksize", 1, 1, 1, 1, kiln_infer_space_depth, kiln_run_space_depth, 1},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL},
};
