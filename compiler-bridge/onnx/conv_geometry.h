// The geometry the reference Conv and QLinearConv loops share: the forward
// window from the node's attributes, its offset table, the group split and
// the plane sizes, for x [N, C, spatial...] and w [M, C / group, kernel...].
#ifndef KILN_COMPILER_BRIDGE_ONNX_CONV_GEOMETRY_H_
#define KILN_COMPILER_BRIDGE_ONNX_CONV_GEOMETRY_H_

#include "window.h"

typedef struct kiln_conv_geometry_t {
  kiln_window_t window;
  int64_t* table;  // kiln_window_table: outs x kernels offsets in one plane
  int64_t batch, channels, m;
  int64_t cg, mg;  // input and output channels per group
  size_t in_plane, outs, kernels;
} kiln_conv_geometry_t;

// Resolves the window and allocates the table from args->allocator (the
// caller releases it with kiln_conv_geometry_deinit). The shapes were
// checked at inference.
kiln_status_t kiln_conv_geometry_init(const kiln_op_run_args_t* args,
                                      const kiln_ref_tensor_t* x,
                                      const kiln_ref_tensor_t* w,
                                      kiln_conv_geometry_t* out);
void kiln_conv_geometry_deinit(const kiln_op_run_args_t* args,
                               kiln_conv_geometry_t* geometry);

#endif  // KILN_COMPILER_BRIDGE_ONNX_CONV_GEOMETRY_H_
