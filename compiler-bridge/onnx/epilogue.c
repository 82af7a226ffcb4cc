// Fused epilogues on Conv/Gemm/MatMul nodes (see graph_passes.h for the
// attribute contract): checked at inference, applied by the reference ops.
#include <string.h>

#include "ops.h"

static const char* const kEpilogueAttrs[] = {
    "kiln.bias", "kiln.residual", "kiln.residual_first", "kiln.residual_flat", "kiln.activation",
    "kiln.activation_alpha", "kiln.activation_beta", NULL};

static bool kiln_residual_flat(const kiln_graph_node_t* node) {
  const kiln_graph_attr_t* flat = kiln_graph_node_find_attr(node, "kiln.residual_flat");
  return flat && flat->type == KILN_GRAPH_ATTR_INT && flat->i != 0;
}

// `flat`: the addend needs only the output's element count.
static kiln_status_t kiln_check_addend(const kiln_op_infer_args_t* args,
                                       const char* name,
                                       const kiln_graph_value_t* out, bool flat) {
  int64_t index = -1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, name, -1, &index));
  if (index < 0) return kiln_ok_status();
  const kiln_graph_value_t* addend = NULL;
  if ((size_t)index >= args->node->input_count) {
    return kiln_op_invalid(args, "%s names input %lld, which is absent", name,
                           (long long)index);
  }
  KILN_RETURN_IF_ERROR(
      kiln_op_require_input(args, (size_t)index, KILN_OP_F32, &addend));
  if (flat) {
    size_t count = 0, out_count = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&addend->shape, &count));
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&out->shape, &out_count));
    if (count != out_count) {
      return kiln_op_invalid(args, "%s input (kiln.residual_flat) has %llu elements, the "
                             "output %llu", name, (unsigned long long)count,
                             (unsigned long long)out_count);
    }
    return kiln_ok_status();
  }
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(
      kiln_op_broadcast(args, &out->shape, &addend->shape, &shape));
  if (!kiln_graph_shape_equal(&shape, &out->shape)) {
    return kiln_op_invalid(args, "%s input does not broadcast to the output",
                           name);
  }
  return kiln_ok_status();
}

kiln_status_t kiln_op_check_epilogue(const kiln_op_infer_args_t* args) {
  (void)kEpilogueAttrs;
  if (args->node->outputs[0] < 0) return kiln_ok_status();
  const kiln_graph_value_t* out = &args->graph->values[args->node->outputs[0]];
  KILN_RETURN_IF_ERROR(kiln_check_addend(args, "kiln.bias", out, false));
  KILN_RETURN_IF_ERROR(
      kiln_check_addend(args, "kiln.residual", out, kiln_residual_flat(args->node)));
  const char* activation = NULL;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_string(
      args->node, "kiln.activation", NULL, &activation));
  if (activation &&
      !kiln_activation_fusable(kiln_activation_from_name(activation))) {
    return kiln_op_unsupported(args, "kiln.activation='%s' is not supported",
                               activation);
  }
  return kiln_ok_status();
}

static void kiln_add_broadcast(kiln_ref_tensor_t* out,
                               const kiln_ref_tensor_t* addend) {
  int64_t strides[KILN_GRAPH_MAX_RANK];
  int64_t coords[KILN_GRAPH_MAX_RANK] = {0};
  kiln_ref_broadcast_strides(&addend->shape, &out->shape, strides);
  float* y = (float*)out->data;
  const float* a = (const float*)addend->data;
  int64_t offset = 0;
  for (size_t i = 0; i < out->count; ++i) {
    y[i] += a[offset];
    for (int32_t d = out->shape.rank; d-- > 0;) {
      offset += strides[d];
      if (++coords[d] < out->shape.dims[d]) break;
      offset -= strides[d] * out->shape.dims[d];
      coords[d] = 0;
    }
  }
}

// The flat residual: element i to element i (inference checked the counts).
static void kiln_add_flat(kiln_ref_tensor_t* out, const kiln_ref_tensor_t* addend) {
  float* y = (float*)out->data;
  const float* a = (const float*)addend->data;
  for (size_t i = 0; i < out->count && i < addend->count; ++i) y[i] += a[i];
}

static const kiln_ref_tensor_t* kiln_addend(const kiln_op_run_args_t* args,
                                            const char* name) {
  const kiln_graph_attr_t* attr = kiln_graph_node_find_attr(args->node, name);
  if (!attr || attr->type != KILN_GRAPH_ATTR_INT || attr->i < 0 ||
      (size_t)attr->i >= args->input_count) {
    return NULL;
  }
  return &args->inputs[attr->i];
}

void kiln_ref_apply_epilogue(const kiln_op_run_args_t* args) {
  kiln_ref_tensor_t* out = &args->outputs[0];
  const kiln_ref_tensor_t* bias = kiln_addend(args, "kiln.bias");
  const kiln_ref_tensor_t* residual = kiln_addend(args, "kiln.residual");
  const kiln_graph_attr_t* first =
      kiln_graph_node_find_attr(args->node, "kiln.residual_first");
  bool residual_first = first && first->type == KILN_GRAPH_ATTR_INT && first->i;
  const kiln_graph_attr_t* act =
      kiln_graph_node_find_attr(args->node, "kiln.activation");
  kiln_activation_t kind = act && act->type == KILN_GRAPH_ATTR_STRING
                               ? kiln_activation_from_name(act->s)
                               : KILN_ACT_NONE;
  const kiln_graph_attr_t* alpha =
      kiln_graph_node_find_attr(args->node, "kiln.activation_alpha");
  const kiln_graph_attr_t* beta =
      kiln_graph_node_find_attr(args->node, "kiln.activation_beta");
  float a = alpha && alpha->type == KILN_GRAPH_ATTR_FLOAT ? alpha->f : 0.0f;
  float b = beta && beta->type == KILN_GRAPH_ATTR_FLOAT ? beta->f : 0.0f;
  const bool flat = kiln_residual_flat(args->node);
  if (bias) kiln_add_broadcast(out, bias);
  if (residual && residual_first) {
    if (flat) kiln_add_flat(out, residual);
    else kiln_add_broadcast(out, residual);
  }
  if (kind != KILN_ACT_NONE) {
    float* y = (float*)out->data;
    for (size_t i = 0; i < out->count; ++i) {
      y[i] = kiln_ref_activation(kind, a, b, y[i]);
    }
  }
  if (residual && !residual_first) {
    if (flat) kiln_add_flat(out, residual);
    else kiln_add_broadcast(out, residual);
  }
}
