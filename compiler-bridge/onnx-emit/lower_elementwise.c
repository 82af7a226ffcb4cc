// Elementwise ops: broadcasting binary ops, unary activations and the
// reshape family (a plain copy: the planner gives every value its own range).
#include <float.h>
#include <string.h>

#include "lower_util.h"
#include "ops.h"

// Right-aligns `shape` to rank 6 and gives its broadcast strides against
// `out` (0 where the operand's dim is 1 and the output's is not).
static kiln_status_t kiln_lower_broadcast6(const kiln_lower_t* l,
                                           const kiln_graph_shape_t* shape,
                                           const kiln_graph_shape_t* out,
                                           uint32_t strides[KILN_KERNEL_MAX_RANK]) {
  if (out->rank > KILN_KERNEL_MAX_RANK) {
    return kiln_lower_refuse(l, "rank %d exceeds the kernels' %d", out->rank,
                             KILN_KERNEL_MAX_RANK);
  }
  uint64_t stride = 1;
  for (int32_t d = KILN_KERNEL_MAX_RANK - 1; d >= 0; --d) {
    int32_t sd = d - (KILN_KERNEL_MAX_RANK - shape->rank);
    int64_t dim = sd >= 0 ? shape->dims[sd] : 1;
    int32_t od = d - (KILN_KERNEL_MAX_RANK - out->rank);
    int64_t out_dim = od >= 0 ? out->dims[od] : 1;
    strides[d] = (dim == 1 && out_dim != 1) ? 0 : (uint32_t)stride;
    stride *= (uint64_t)dim;
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_binary(const kiln_lower_t* l, uint32_t op) {
  if (l->node->input_count != 2) {
    return kiln_lower_refuse(l, "only two inputs are supported");
  }
  const kiln_graph_value_t* a = kiln_lower_in(l, 0);
  const kiln_graph_value_t* b = kiln_lower_in(l, 1);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (!a || !b || !y) return kiln_lower_refuse(l, "missing operand");
  kiln_kernel_binary_params_t p;
  memset(&p, 0, sizeof(p));
  p.count = (uint32_t)kiln_lower_count(&y->shape);
  KILN_RETURN_IF_ERROR(kiln_lower_broadcast6(l, &a->shape, &y->shape, p.a_strides));
  KILN_RETURN_IF_ERROR(kiln_lower_broadcast6(l, &b->shape, &y->shape, p.b_strides));
  for (int32_t d = 0; d < KILN_KERNEL_MAX_RANK; ++d) {
    int32_t od = d - (KILN_KERNEL_MAX_RANK - y->shape.rank);
    p.shape[d] = od >= 0 ? (uint32_t)y->shape.dims[od] : 1;
  }
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_BINARY, .push = &p,
                                    .binding_count = 3, .written_mask = 1u << 2,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = p.count};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[2]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_BINARY_OP, op},
                                    {KILN_SPEC_BINARY_ACTIVATION, KILN_ACT_NONE}};
  desc.ops = ops;
  desc.op_count = 2;
  return kiln_lower_add_binary(l, &desc);
}

// Reads a scalar float from an optional constant input (Clip's min/max).
static kiln_status_t kiln_lower_const_scalar(const kiln_lower_t* l, size_t index,
                                             float fallback, float* out) {
  *out = fallback;
  const kiln_graph_value_t* value = kiln_lower_in(l, index);
  if (!value) return kiln_ok_status();
  if (!value->data || value->dtype != KILN_GRAPH_DTYPE_F32 ||
      kiln_lower_count(&value->shape) != 1) {
    return kiln_lower_refuse(l, "input %zu must be a constant float scalar", index);
  }
  memcpy(out, value->data, sizeof(float));
  return kiln_ok_status();
}

// Clip with a bound computed at run time: out = max(x, min), then out =
// min(out, max) in place, as binary dispatches (NaN stays NaN, and max wins
// when min > max, as ONNX says).
static kiln_status_t kiln_lower_clip_runtime(const kiln_lower_t* l) {
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  const kiln_graph_shape_t* in_shape = &kiln_lower_in(l, 0)->shape;
  bool wrote = false;
  for (size_t i = 1; i < 3; ++i) {
    const kiln_graph_value_t* bound = kiln_lower_in(l, i);
    if (!bound) continue;
    kiln_emit_range_t b;
    KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, i, &b));
    KILN_RETURN_IF_ERROR(kiln_lower_binary_ranges(
        l, i == 1 ? KILN_BINARY_MAX : KILN_BINARY_MIN, wrote ? &out : &in,
        wrote ? &y->shape : in_shape, &b, &bound->shape, &out, &y->shape));
    wrote = true;
  }
  return kiln_ok_status();
}

kiln_status_t kiln_lower_unary(const kiln_lower_t* l) {
  const char* op = l->node->op_type;
  if (strcmp(op, "Clip") == 0) {
    for (size_t i = 1; i < 3; ++i) {
      const kiln_graph_value_t* bound = kiln_lower_in(l, i);
      if (bound && !bound->data) return kiln_lower_clip_runtime(l);
    }
  }
  float alpha = 0.0f, beta = 0.0f;
  if (strcmp(op, "Clip") == 0) {
    KILN_RETURN_IF_ERROR(kiln_lower_const_scalar(l, 1, -FLT_MAX, &alpha));
    KILN_RETURN_IF_ERROR(kiln_lower_const_scalar(l, 2, FLT_MAX, &beta));
  } else {
    // The same attributes (and defaults) as the reference and the epilogues.
    KILN_RETURN_IF_ERROR(kiln_activation_attrs(l->node, kiln_activation_from_name(op),
                                               &alpha, &beta));
  }
  uint32_t code = 0;
  KILN_RETURN_IF_ERROR(kiln_lower_activation(l, op, alpha, beta, &code, &alpha, &beta));
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  kiln_kernel_unary_params_t p = {(uint32_t)kiln_lower_count(&y->shape), alpha, beta};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_UNARY, .push = &p,
                                    .binding_count = 2, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = p.count};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[1]));
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_UNARY_OP, code}};
  desc.ops = ops;
  desc.op_count = 1;
  return kiln_emit_add_tiled(l->program, &desc);
}

kiln_status_t kiln_lower_copy(const kiln_lower_t* l) {
  for (size_t o = 1; o < l->node->output_count; ++o) {
    if (l->node->outputs[o] >= 0 && kiln_graph_value_use_count(l->graph, l->node->outputs[o])) {
      return kiln_lower_refuse(l, "output %zu (a mask) is not supported", o);
    }
  }
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  // A view planned in its input's place (memory_plan.c): nothing to move.
  if (kiln_emit_same_range(&in, &out)) return kiln_ok_status();
  return kiln_lower_emit_copy(l->program, &in, &out,
                              out.length / kiln_emit_float_bytes(l->program),
                              KILN_EMIT_STORAGE_NODE);
}
