// Integer graph inputs (token ids, attention masks) on the GPU: they are
// read only where they enter float work, straight from the input binding.
// Reshape-family nodes on them emit nothing (the values keep their order);
// a Cast to float at the end of such a chain is one cast_int_to_f32
// dispatch; Gather indices bind the input itself (lower_data.c).
#include <string.h>

#include "lower_util.h"

bool kiln_lower_is_int_passthrough(const char* op) {
  static const char* const kOps[] = {"Reshape", "Unsqueeze", "Squeeze", "Flatten",
                                     "Identity"};
  for (size_t i = 0; i < sizeof(kOps) / sizeof(kOps[0]); ++i) {
    if (strcmp(op, kOps[i]) == 0) return true;
  }
  return false;
}

int32_t kiln_lower_int_input_root(const kiln_graph_t* graph, int32_t value_id) {
  for (int depth = 0; depth < 64 && value_id >= 0; ++depth) {
    const kiln_graph_value_t* value = &graph->values[value_id];
    if (value->dtype != KILN_GRAPH_DTYPE_I64 && value->dtype != KILN_GRAPH_DTYPE_I32) {
      return -1;
    }
    if (value->is_input) return value_id;
    if (value->data || value->producer < 0) return -1;
    const kiln_graph_node_t* node = &graph->nodes[value->producer];
    // TopK's indices, written by the host op, are int64 data in place.
    if (strcmp(node->op_type, "TopK") == 0 && node->output_count > 1 &&
        node->outputs[1] == value_id) {
      return value_id;
    }
    if (!kiln_lower_is_int_passthrough(node->op_type) || node->input_count == 0) return -1;
    value_id = node->inputs[0];
  }
  return -1;
}

kiln_status_t kiln_lower_int_range(const kiln_lower_t* l, int32_t value_id,
                                   kiln_emit_range_t* out_range, uint32_t* out_words) {
  memset(out_range, 0, sizeof(*out_range));
  *out_words = 1;
  const kiln_graph_value_t* value = &l->graph->values[value_id];
  int32_t root = kiln_lower_int_input_root(l->graph, value_id);
  if (root < 0) {
    return kiln_lower_refuse(l, "'%s' (%s) must be an int64 or int32 graph input, or a "
                             "reshape of one", value->name,
                             kiln_graph_dtype_name(value->dtype));
  }
  *out_words = l->graph->values[root].dtype == KILN_GRAPH_DTYPE_I64 ? 2 : 1;
  KILN_RETURN_IF_ERROR(kiln_lower_check_u32(l, kiln_lower_count(&value->shape) * *out_words));
  return kiln_emit_value_range(l->program, root, out_range);
}

kiln_status_t kiln_lower_int_passthrough(const kiln_lower_t* l) {
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (!y || kiln_lower_int_input_root(l->graph, l->node->outputs[0]) < 0) {
    return kiln_lower_refuse(l, "integer data that is not a graph input");
  }
  return kiln_ok_status();
}

static bool kiln_lower_is_float(const kiln_graph_value_t* value) {
  return value->dtype == KILN_GRAPH_DTYPE_F32 || value->dtype == KILN_GRAPH_DTYPE_F16;
}

// Between float32 and float16 buffers: the value dtypes decide (the
// precision pass makes ONNX's Cast(to=FLOAT) an f16 -> f16 copy).
static kiln_status_t kiln_lower_cast_float(const kiln_lower_t* l, const kiln_graph_value_t* x,
                                           const kiln_graph_value_t* y) {
  if (x->dtype == y->dtype) return kiln_lower_copy(l);
  kiln_emit_range_t in, out;
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &in));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  kiln_kernel_copy_params_t p = {(uint32_t)kiln_lower_count(&x->shape)};
  kiln_emit_dispatch_desc_t desc = {
      .kernel = y->dtype == KILN_GRAPH_DTYPE_F16 ? KILN_KERNEL_CAST_F32_TO_F16
                                                 : KILN_KERNEL_CAST_F16_TO_F32,
      .push = &p, .binding_count = 2, .bindings = {in, out}, .written_mask = 2u,
      .grid = KILN_EMIT_GRID_LINEAR, .grid_count = p.count};
  return kiln_emit_add_dispatch(l->program, &desc);
}

kiln_status_t kiln_lower_cast(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* y = kiln_lower_out(l, 0);
  if (!x || !y || !kiln_lower_is_float(y)) {
    return kiln_lower_refuse(l, "only Cast to float32 or float16 runs");
  }
  if (kiln_lower_is_float(x)) return kiln_lower_cast_float(l, x, y);
  if (x->dtype == KILN_GRAPH_DTYPE_BOOL) {
    if (y->dtype != KILN_GRAPH_DTYPE_F32) {
      return kiln_lower_refuse(l, "Cast of bool runs on the host, to float32 only (not at f16)");
    }
    return kiln_lower_host_bool_to_float(l);
  }
  kiln_emit_range_t out;
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &out));
  return kiln_lower_cast_int(l, l->node->inputs[0], &out);
}

kiln_status_t kiln_lower_cast_int(const kiln_lower_t* l, int32_t value_id,
                                  const kiln_emit_range_t* out_range) {
  const kiln_graph_value_t* x = &l->graph->values[value_id];
  kiln_emit_range_t in, out = *out_range;
  uint32_t words = 1;
  KILN_RETURN_IF_ERROR(kiln_lower_int_range(l, value_id, &in, &words));
  kiln_kernel_copy_params_t p = {(uint32_t)kiln_lower_count(&x->shape)};
  kiln_kernel_spec_value_t ops[] = {{KILN_SPEC_CAST_INT_WORDS, words}};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_CAST_INT_TO_F32, .ops = ops,
                                    .op_count = 1, .push = &p, .binding_count = 2,
                                    .bindings = {in, out}, .written_mask = 2u,
                                    .grid = KILN_EMIT_GRID_LINEAR, .grid_count = p.count};
  return kiln_emit_add_dispatch(l->program, &desc);
}
