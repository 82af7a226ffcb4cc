// Quantization on the GPU: the QDQ pass's kiln.QuantizeDequantize and the
// QOperator pass's kiln.Quantize / Dequantize / Requantize (fp32 buffers,
// integer values as fp32; constant per-tensor or per-axis parameters, or a
// DynamicQuantizeLinear's run-time ones) as one quantize_dequantize
// dispatch each, and kiln.DynamicQuantizeParams. Ops that keep int8 / uint8 tensors at run
// time are refused here, naming what runs: they run in the reference
// executor, and QDQ pairs are fused before lowering.
#include <string.h>

#include "lower_util.h"
#include "ops.h"

// Scale (input 1) or zero point (input 2) as fp32 words: an f16 node
// (quantize_dequantize_f16) still reads its parameters in fp32, so a
// scale is not rounded to fp16 (the emitter converts the constants an
// f16 node binds otherwise).
static kiln_status_t kiln_lower_quant_param(const kiln_lower_t* l, size_t index,
                                            kiln_emit_range_t* out) {
  if (!kiln_emit_node_is_f16(l->program)) return kiln_lower_in_range(l, index, out);
  const kiln_graph_value_t* v = kiln_lower_in(l, index);
  if (!v || !v->data || v->dtype != KILN_GRAPH_DTYPE_F32) {
    return kiln_lower_refuse(l, "input %zu must be an fp32 constant", index);
  }
  return kiln_emit_add_weight(l->program, v->data,
                              (size_t)kiln_lower_count(&v->shape) * sizeof(float), out);
}

kiln_status_t kiln_lower_quantize_dequantize(const kiln_lower_t* l) {
  const kiln_graph_value_t* x = kiln_lower_in(l, 0);
  const kiln_graph_value_t* scale = kiln_lower_in(l, 1);
  const kiln_graph_value_t* zero = kiln_lower_in(l, 2);
  const int mode = kiln_quant_mode(l->node->op_type);
  // Run-time parameters: a DynamicQuantizeLinear's (pass_qinteger.c), one
  // scale and zero point, at fp32.
  const bool run_time = !scale->data || (zero && !zero->data);
  if (run_time && (mode != KILN_QUANT_QUANTIZE || kiln_emit_node_is_f16(l->program) ||
                   kiln_lower_count(&scale->shape) != 1)) {
    return kiln_lower_refuse(l, "scale and zero point must be constants");
  }
  if (mode == KILN_QUANT_REQUANTIZE && kiln_emit_node_is_f16(l->program)) {
    // Its input is an exact integer sum, which fp16 would round
    // (pass_precision.c keeps QOperator chains fp32; this is the guard).
    return kiln_lower_refuse(l, "requantizes integer sums, which float16 storage would round; "
                             "compile with --precision=f32");
  }
  uint64_t count = kiln_lower_count(&x->shape);
  uint64_t channels = kiln_lower_count(&scale->shape);
  if (count * sizeof(float) > kiln_emit_range_limit(l->program)) {
    return kiln_lower_refuse(l, "%llu values exceed one binding of the smallest "
                             "target", (unsigned long long)count);
  }
  int64_t axis = 1, qmin = 0, qmax = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "axis", 1, &axis));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "kiln.qmin", 0, &qmin));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(l->node, "kiln.qmax", 0, &qmax));
  if (axis < 0) axis += x->shape.rank;
  uint64_t inner = 1;
  for (int32_t d = (int32_t)axis + 1; channels > 1 && d < x->shape.rank; ++d) {
    inner *= (uint64_t)x->shape.dims[d];
  }
  kiln_kernel_quantize_params_t p = {(uint32_t)count, (uint32_t)inner,
                                     (uint32_t)channels, zero ? 1u : 0u,
                                     (float)qmin, (float)qmax};
  kiln_kernel_spec_value_t ops[] = {
      {KILN_SPEC_QUANT_MODE, (uint32_t)mode}};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_QUANTIZE_DEQUANTIZE,
                                    .ops = ops, .op_count = 1,
                                    .push = &p, .binding_count = 4,
                                    .written_mask = 8u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = count};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_quant_param(l, 1, &desc.bindings[1]));
  KILN_RETURN_IF_ERROR(kiln_lower_quant_param(l, zero ? 2 : 1, &desc.bindings[2]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[3]));
  return kiln_emit_add_dispatch(l->program, &desc);
}

// kiln.DynamicQuantizeParams(min, max) -> scale, zero point (uint8), one
// invocation of dynamic_quantize_params.
kiln_status_t kiln_lower_dynamic_quantize_params(const kiln_lower_t* l) {
  if (kiln_emit_node_is_f16(l->program)) {
    // Its scale would be rounded to fp16, which moves every quantized value.
    return kiln_lower_refuse(l, "dynamic quantization runs at fp32; compile with "
                             "--precision=f32");
  }
  kiln_kernel_dynamic_quantize_params_t p = {255u};
  kiln_emit_dispatch_desc_t desc = {.kernel = KILN_KERNEL_DYNAMIC_QUANTIZE_PARAMS,
                                    .push = &p, .binding_count = 4,
                                    .written_mask = 12u,
                                    .grid = KILN_EMIT_GRID_LINEAR,
                                    .grid_count = 1};
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 0, &desc.bindings[0]));
  KILN_RETURN_IF_ERROR(kiln_lower_in_range(l, 1, &desc.bindings[1]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 0, &desc.bindings[2]));
  KILN_RETURN_IF_ERROR(kiln_lower_out_range(l, 1, &desc.bindings[3]));
  return kiln_emit_add_dispatch(l->program, &desc);
}

kiln_status_t kiln_lower_int8_refused(const kiln_lower_t* l) {
  return kiln_lower_refuse(
      l, "int8 / uint8 tensors at run time are not lowered to the GPU (the "
         "reference executor runs them); supported: QuantizeLinear read only by "
         "a DequantizeLinear with the same constant parameters (a QDQ pair, "
         "fused), DequantizeLinear of constants (folded), and graphs whose every "
         "int8 value is carried exactly (QOperator, quantize_dynamic: docs/onnx.md)");
}
