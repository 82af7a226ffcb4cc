// Windows as the 2-D kernels (conv2d, depthwise, conv_transpose2d, pool2d)
// see them: a 1-D op over NCL runs as a 2-D one over the dense NC1L view of
// the same buffer, with a trivial (size 1) height.
#include <string.h>

#include "lower_util.h"
#include "window.h"

bool kiln_lower_shape_2d(const kiln_graph_shape_t* shape, kiln_graph_shape_t* out) {
  memset(out, 0, sizeof(*out));
  if (shape->rank == 4) {
    *out = *shape;
    return true;
  }
  if (shape->rank != 3) return false;
  out->rank = 4;
  out->dims[0] = shape->dims[0];
  out->dims[1] = shape->dims[1];
  out->dims[2] = 1;
  out->dims[3] = shape->dims[2];
  return true;
}

kiln_status_t kiln_lower_window_2d(const kiln_lower_t* l, const kiln_graph_shape_t* x,
                                   const kiln_graph_shape_t* w, bool transpose,
                                   bool allow_ceil, bool allow_dilations,
                                   kiln_window_t* out) {
  memset(out, 0, sizeof(*out));
  int32_t spatial = x->rank - 2;
  if (spatial != 1 && spatial != 2) {
    return kiln_lower_refuse(l, "only 1-D (NCL) and 2-D (NCHW) windows are supported");
  }
  const int64_t* kernel = w ? &w->dims[2] : NULL;
  kiln_window_t window;
  if (transpose) {
    KILN_RETURN_IF_ERROR(
        kiln_window_resolve_transpose(l->node, spatial, &x->dims[2], kernel, &window));
  } else {
    KILN_RETURN_IF_ERROR(kiln_window_resolve(l->node, spatial, &x->dims[2], kernel,
                                             allow_ceil, allow_dilations, &window));
  }
  if (spatial == 2) {
    *out = window;
    return kiln_ok_status();
  }
  out->spatial = 2;
  out->in[0] = out->kernel[0] = out->stride[0] = out->dilation[0] = out->out[0] = 1;
  out->in[1] = window.in[0];
  out->kernel[1] = window.kernel[0];
  out->stride[1] = window.stride[0];
  out->dilation[1] = window.dilation[0];
  out->pad_begin[1] = window.pad_begin[0];
  out->pad_end[1] = window.pad_end[0];
  out->out[1] = window.out[0];
  return kiln_ok_status();
}
