// See conv_geometry.h.
#include "conv_geometry.h"

#include <string.h>

kiln_status_t kiln_conv_geometry_init(const kiln_op_run_args_t* args,
                                      const kiln_ref_tensor_t* x,
                                      const kiln_ref_tensor_t* w,
                                      kiln_conv_geometry_t* out) {
  memset(out, 0, sizeof(*out));
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "group", 1, &group));
  KILN_RETURN_IF_ERROR(kiln_window_resolve(args->node, x->shape.rank - 2,
                                           x->shape.dims + 2, w->shape.dims + 2,
                                           false, true, &out->window));
  KILN_RETURN_IF_ERROR(kiln_window_table(&out->window, args->allocator, &out->table));
  out->batch = x->shape.dims[0];
  out->channels = x->shape.dims[1];
  out->m = w->shape.dims[0];
  out->cg = out->channels / group;
  out->mg = out->m / group;
  out->in_plane = 1;
  for (int32_t i = 0; i < out->window.spatial; ++i) {
    out->in_plane *= (size_t)out->window.in[i];
  }
  out->outs = kiln_window_out_count(&out->window);
  out->kernels = kiln_window_kernel_count(&out->window);
  return kiln_ok_status();
}

void kiln_conv_geometry_deinit(const kiln_op_run_args_t* args,
                               kiln_conv_geometry_t* geometry) {
  kiln_allocator_free(args->allocator, geometry->table);
  geometry->table = NULL;
}
