// DepthToSpace / SpaceToDepth (PixelShuffle / PixelUnshuffle) as one
// strided_copy over the 6-D plan of space_depth.h.
#include <string.h>

#include "lower_util.h"
#include "space_depth.h"

kiln_status_t kiln_lower_space_depth(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  int64_t b = 1;
  const char* mode = "DCR";
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "blocksize", 1, &b));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(l->node, "mode", "DCR", &mode));
  kiln_space_depth_plan_t plan;
  kiln_space_depth_plan(&x->shape, b, strcmp(l->node->op_type, "DepthToSpace") == 0,
                        strcmp(mode, "CRD") == 0, &plan);
  int64_t out_strides[6];
  int64_t stride = 1;
  for (int32_t d = 6; d-- > 0;) {
    out_strides[d] = stride;
    stride *= plan.shape.dims[d];
  }
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  return kiln_lower_strided_copy(l, &in, &out, &plan.shape, plan.in_strides, out_strides, 0, 0);
}
