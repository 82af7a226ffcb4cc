// Run-time quantization ops (ONNX standard, int8 / uint8): QuantizeLinear,
// DequantizeLinear (per tensor or per axis), DynamicQuantizeLinear,
// MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv, the QDQ pass's
// fused kiln.QuantizeDequantize and pass_qinteger.c's
// kiln.DynamicQuantizeParams. Each follows ONNX's numpy reference exactly
// (quant.h); integer accumulations are exact (int64).
#include <math.h>
#include <string.h>

#include "conv_geometry.h"
#include "quant.h"

// ---------------------------------------------------------------------------
// Parameter checks (messages name the node and the tensor).

// A scale / zero-point input that must be a scalar or 1-D of 1 or `n`
// values (n == 0: a scalar only). *out_count: its element count.
static kiln_status_t kiln_quant_vector(const kiln_op_infer_args_t* args,
                                       size_t index, const char* role,
                                       int64_t n, size_t* out_count) {
  const kiln_graph_value_t* v = kiln_op_input(args, index);
  size_t count = v->shape.rank == 0 ? 1 : (size_t)v->shape.dims[0];
  if (v->shape.rank > 1 ||
      (count != 1 && (n == 0 || (int64_t)count != n))) {
    char s[64];
    kiln_graph_shape_format(&v->shape, s, sizeof(s));
    if (n == 0) {
      return kiln_op_unsupported(args, "%s '%s' has shape %s; supported: a "
                                 "scalar (per-tensor)", role, v->name, s);
    }
    return kiln_op_invalid(args, "%s '%s' has shape %s; expected a scalar or "
                           "[%lld]", role, v->name, s, (long long)n);
  }
  *out_count = count;
  return kiln_ok_status();
}

// A constant scale must be finite and non-zero: x / 0 has no quantization.
static kiln_status_t kiln_quant_check_scale(const kiln_op_infer_args_t* args,
                                            size_t index) {
  const kiln_graph_value_t* s = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, index, KILN_OP_F32, &s));
  if (!s->data) return kiln_ok_status();
  size_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&s->shape, &count));
  for (size_t i = 0; i < count; ++i) {
    float v = ((const float*)s->data)[i];
    if (!isfinite(v) || v == 0.0f) {
      return kiln_op_invalid(args, "scale '%s' element %zu is %g; a scale "
                             "must be finite and non-zero", s->name, i, v);
    }
  }
  return kiln_ok_status();
}

// Zero point `index` (optional) must have `dtype` and the scale's shape.
static kiln_status_t kiln_quant_check_zero_point(
    const kiln_op_infer_args_t* args, size_t index, size_t scale_index,
    kiln_graph_dtype_t dtype, const char* of) {
  const kiln_graph_value_t* z = kiln_op_input(args, index);
  if (!z) return kiln_ok_status();
  if (!z->has_shape) return kiln_op_invalid(args, "zero point '%s' has no shape", z->name);
  if (z->dtype != dtype) {
    return kiln_op_invalid(args, "zero point '%s' is %s but %s is %s", z->name,
                           kiln_graph_dtype_name(z->dtype), of,
                           kiln_graph_dtype_name(dtype));
  }
  const kiln_graph_value_t* s = kiln_op_input(args, scale_index);
  size_t zc = 0, sc = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&z->shape, &zc));
  KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&s->shape, &sc));
  if (zc != sc || z->shape.rank > 1) {
    char zs[64], ss[64];
    kiln_graph_shape_format(&z->shape, zs, sizeof(zs));
    kiln_graph_shape_format(&s->shape, ss, sizeof(ss));
    return kiln_op_invalid(args, "zero point '%s' has shape %s but scale '%s' "
                           "has shape %s", z->name, zs, s->name, ss);
  }
  return kiln_ok_status();
}

// A QLinear op's zero point (input `index`): `dtype`, and a scalar or 1-D of
// 1 or `n` values (per tensor or per channel, independently of the scale).
static kiln_status_t kiln_quant_check_zp_vector(const kiln_op_infer_args_t* args,
                                                size_t index, const char* role,
                                                int64_t n, kiln_graph_dtype_t dtype,
                                                const char* of) {
  const kiln_graph_value_t* z = kiln_op_input(args, index);
  if (!z) return kiln_ok_status();
  if (z->dtype != dtype) {
    return kiln_op_invalid(args, "zero point '%s' is %s but %s is %s", z->name,
                           kiln_graph_dtype_name(z->dtype), of,
                           kiln_graph_dtype_name(dtype));
  }
  size_t count = 0;
  return kiln_quant_vector(args, index, role, n, &count);
}

// QuantizeLinear / DequantizeLinear / kiln.QuantizeDequantize parameters:
// scale (input 1) and zero point (input 2) per tensor or along `axis`.
static kiln_status_t kiln_quant_check_linear(const kiln_op_infer_args_t* args,
                                             const kiln_graph_value_t* x,
                                             kiln_graph_dtype_t zp_dtype) {
  int64_t block_size = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "block_size", 0, &block_size));
  if (block_size != 0) {
    return kiln_op_unsupported(args, "block_size=%lld (blocked quantization) "
                               "is not supported; supported: 0",
                               (long long)block_size);
  }
  KILN_RETURN_IF_ERROR(kiln_quant_check_scale(args, 1));
  const kiln_graph_value_t* s = kiln_op_input(args, 1);
  if (s->shape.rank > 1) {
    return kiln_op_invalid(args, "scale '%s' must be a scalar or 1-D", s->name);
  }
  int64_t axis = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", 1, &axis));
  if (s->shape.rank == 1 && s->shape.dims[0] != 1) {  // one value: per tensor
    int32_t a = 0;
    KILN_RETURN_IF_ERROR_ANNOTATE(kiln_op_axis(args, axis, x->shape.rank, &a),
                                  "(per-axis scale '%s')", s->name);
    if (s->shape.dims[0] != x->shape.dims[a]) {
      return kiln_op_invalid(args, "scale '%s' has %lld values but axis %d of "
                             "'%s' has %lld", s->name,
                             (long long)s->shape.dims[0], (int)a, x->name,
                             (long long)x->shape.dims[a]);
    }
  }
  return kiln_quant_check_zero_point(args, 2, 1, zp_dtype, "the quantized tensor");
}

// The axis layout of input 1's scale against x's shape.
static kiln_status_t kiln_quant_axis_of(const kiln_op_run_args_t* args,
                                        kiln_quant_axis_t* out_axis) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const kiln_ref_tensor_t* s = &args->inputs[1];
  int64_t axis = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "axis", 1, &axis));
  if (axis < 0) axis += x->shape.rank;
  kiln_quant_axis_init(&x->shape, (int32_t)axis, s->count, out_axis);
  return kiln_ok_status();
}

static int32_t kiln_quant_zp_at(const kiln_op_run_args_t* args, size_t index,
                                size_t i) {
  if (index >= args->input_count || !args->inputs[index].data) return 0;
  const kiln_ref_tensor_t* z = &args->inputs[index];
  return kiln_quant_load(z->data, z->dtype, z->count == 1 ? 0 : i);
}

// ---------------------------------------------------------------------------
// QuantizeLinear

static kiln_status_t kiln_quant_output_dtype(const kiln_op_infer_args_t* args,
                                             kiln_graph_dtype_t* out_dtype) {
  int64_t output_dtype = 0;
  KILN_RETURN_IF_ERROR(
      kiln_graph_node_attr_int(args->node, "output_dtype", 0, &output_dtype));
  kiln_graph_dtype_t from_attr = KILN_GRAPH_DTYPE_INVALID;
  if (output_dtype == 2) from_attr = KILN_GRAPH_DTYPE_U8;
  else if (output_dtype == 3) from_attr = KILN_GRAPH_DTYPE_I8;
  else if (output_dtype != 0) {
    return kiln_op_unsupported(args, "output_dtype=%lld; supported: 2 (UINT8), "
                               "3 (INT8)", (long long)output_dtype);
  }
  const kiln_graph_value_t* z = kiln_op_input(args, 2);
  if (z && !(KILN_OP_QUANT & (1u << z->dtype))) {
    return kiln_op_unsupported(args, "zero point '%s' has dtype %s; supported: "
                               "int8, uint8", z->name,
                               kiln_graph_dtype_name(z->dtype));
  }
  if (z && from_attr != KILN_GRAPH_DTYPE_INVALID && z->dtype != from_attr) {
    return kiln_op_invalid(args, "zero point '%s' is %s but output_dtype says "
                           "%s", z->name, kiln_graph_dtype_name(z->dtype),
                           kiln_graph_dtype_name(from_attr));
  }
  *out_dtype = z ? z->dtype
                 : from_attr != KILN_GRAPH_DTYPE_INVALID ? from_attr
                                                         : KILN_GRAPH_DTYPE_U8;
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_quantize(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  kiln_graph_dtype_t dtype = KILN_GRAPH_DTYPE_U8;
  KILN_RETURN_IF_ERROR(kiln_quant_output_dtype(args, &dtype));
  KILN_RETURN_IF_ERROR(kiln_quant_check_linear(args, x, dtype));
  return kiln_op_set_output(args, 0, dtype, &x->shape);
}

static kiln_status_t kiln_run_quantize(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const float* scale = (const float*)args->inputs[1].data;
  kiln_ref_tensor_t* y = &args->outputs[0];
  kiln_quant_axis_t axis;
  KILN_RETURN_IF_ERROR(kiln_quant_axis_of(args, &axis));
  int32_t qmin, qmax;
  kiln_quant_range(y->dtype, &qmin, &qmax);
  for (size_t i = 0; i < x->count; ++i) {
    size_t c = kiln_quant_channel(&axis, i);
    int32_t q = kiln_quantize_value(((const float*)x->data)[i], scale[c],
                                    kiln_quant_zp_at(args, 2, c), qmin, qmax);
    kiln_quant_store(y->data, y->dtype, i, q);
  }
  return kiln_ok_status();
}

// ---------------------------------------------------------------------------
// DequantizeLinear (int32 input: the bias of QDQ convolutions, no zero point
// other than 0)

static kiln_status_t kiln_infer_dequantize(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_op_require_input(args, 0, KILN_OP_QUANT | KILN_OP_I32, &x));
  KILN_RETURN_IF_ERROR(kiln_quant_check_linear(args, x, x->dtype));
  const kiln_graph_value_t* z = kiln_op_input(args, 2);
  if (x->dtype == KILN_GRAPH_DTYPE_I32 && z) {
    size_t count = 0;
    KILN_RETURN_IF_ERROR(kiln_graph_shape_element_count(&z->shape, &count));
    for (size_t i = 0; z->data && i < count; ++i) {
      if (((const int32_t*)z->data)[i] != 0) {
        return kiln_op_invalid(args, "zero point '%s' of int32 input '%s' must "
                               "be 0", z->name, x->name);
      }
    }
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &x->shape);
}

static kiln_status_t kiln_run_dequantize(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const float* scale = (const float*)args->inputs[1].data;
  float* y = (float*)args->outputs[0].data;
  kiln_quant_axis_t axis;
  KILN_RETURN_IF_ERROR(kiln_quant_axis_of(args, &axis));
  for (size_t i = 0; i < x->count; ++i) {
    size_t c = kiln_quant_channel(&axis, i);
    y[i] = kiln_dequantize_value(kiln_quant_load(x->data, x->dtype, i),
                                 scale[c], kiln_quant_zp_at(args, 2, c));
  }
  return kiln_ok_status();
}

// ---------------------------------------------------------------------------
// kiln.QuantizeDequantize: DequantizeLinear(QuantizeLinear(x)) with the same
// parameters, fp32 in and out (pass_fuse_qdq.c). kiln.Quantize,
// kiln.Dequantize, kiln.Requantize: the int8 / uint8 tensors of QOperator
// graphs carried as fp32 tensors of their integer values
// (pass_qoperator.c); Requantize rounds an exact integer sum times the
// multiplier (input 1) as numpy does in float64. Inputs: x, scale, zero
// point as float (the integer values); attributes axis, kiln.qmin, kiln.qmax.

int kiln_quant_mode(const char* op_type) {
  if (strcmp(op_type, "kiln.Quantize") == 0) return KILN_QUANT_QUANTIZE;
  if (strcmp(op_type, "kiln.Dequantize") == 0) return KILN_QUANT_DEQUANTIZE;
  if (strcmp(op_type, "kiln.Requantize") == 0) return KILN_QUANT_REQUANTIZE;
  return KILN_QUANT_QDQ;
}

static kiln_status_t kiln_infer_quantize_dequantize(
    const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  KILN_RETURN_IF_ERROR(kiln_quant_check_linear(args, x, KILN_GRAPH_DTYPE_F32));
  int64_t qmin = 0, qmax = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "kiln.qmin", 0, &qmin));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "kiln.qmax", 0, &qmax));
  if (qmin >= qmax || qmin < -128 || qmax > 255) {
    return kiln_op_invalid(args, "range [%lld, %lld] is not an int8 / uint8 "
                           "range", (long long)qmin, (long long)qmax);
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &x->shape);
}

static kiln_status_t kiln_run_quantize_dequantize(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const float* px = (const float*)x->data;
  const float* scale = (const float*)args->inputs[1].data;
  const float* zp = args->input_count > 2 ? (const float*)args->inputs[2].data : NULL;
  float* y = (float*)args->outputs[0].data;
  kiln_quant_axis_t axis;
  KILN_RETURN_IF_ERROR(kiln_quant_axis_of(args, &axis));
  int64_t qmin = 0, qmax = 0;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "kiln.qmin", 0, &qmin));
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "kiln.qmax", 0, &qmax));
  int mode = kiln_quant_mode(args->node->op_type);
  for (size_t i = 0; i < x->count; ++i) {
    size_t c = kiln_quant_channel(&axis, i);
    int32_t z = zp ? (int32_t)zp[c] : 0;
    if (mode == KILN_QUANT_DEQUANTIZE) {
      y[i] = kiln_dequantize_value((int32_t)px[i], scale[c], z);
    } else if (mode == KILN_QUANT_REQUANTIZE) {
      y[i] = (float)kiln_quant_saturate_round((double)px[i] * scale[c] + z,
                                              (int32_t)qmin, (int32_t)qmax);
    } else {
      int32_t q = kiln_quantize_value(px[i], scale[c], z, (int32_t)qmin, (int32_t)qmax);
      y[i] = mode == KILN_QUANT_QUANTIZE ? (float)q : kiln_dequantize_value(q, scale[c], z);
    }
  }
  return kiln_ok_status();
}

// ---------------------------------------------------------------------------
// DynamicQuantizeLinear (uint8; ONNX's formula in float32)

static kiln_status_t kiln_infer_dynamic_quantize(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_F32, &x));
  kiln_graph_shape_t scalar = {0, {0}};
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_U8, &x->shape));
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 1, KILN_GRAPH_DTYPE_F32, &scalar));
  return kiln_op_set_output(args, 2, KILN_GRAPH_DTYPE_U8, &scalar);
}

// scale and zero point from min(x) and max(x), the range widened to 0.
static void kiln_dynamic_quantize_params(float minx, float maxx, float* out_scale,
                                         int32_t* out_zp) {
  if (!(minx < 0.0f)) minx = 0.0f;
  if (!(maxx > 0.0f)) maxx = 0.0f;
  float scale = (maxx == minx ? 1.0f : maxx - minx) / 255.0f;
  float initial = 0.0f - minx / scale;
  float zpf = initial < 0.0f ? 0.0f : initial > 255.0f ? 255.0f : initial;
  *out_scale = scale;
  *out_zp = isnan(zpf) ? 0 : (int32_t)rintf(zpf);
}

static kiln_status_t kiln_run_dynamic_quantize(const kiln_op_run_args_t* args) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const float* px = (const float*)x->data;
  float maxx = 0.0f, minx = 0.0f;  // the range always includes 0
  for (size_t i = 0; i < x->count; ++i) {
    if (px[i] > maxx) maxx = px[i];
    if (px[i] < minx) minx = px[i];
  }
  float scale = 1.0f;
  int32_t zp = 0;
  kiln_dynamic_quantize_params(minx, maxx, &scale, &zp);
  uint8_t* y = (uint8_t*)args->outputs[0].data;
  for (size_t i = 0; i < x->count; ++i) {
    y[i] = (uint8_t)kiln_quantize_value(px[i], scale, zp, 0, 255);
  }
  if (args->output_count > 1 && args->outputs[1].data) {
    *(float*)args->outputs[1].data = scale;
  }
  if (args->output_count > 2 && args->outputs[2].data) {
    *(uint8_t*)args->outputs[2].data = (uint8_t)zp;
  }
  return kiln_ok_status();
}

// kiln.DynamicQuantizeParams(min, max) -> scale, zero point (fp32 scalars):
// DynamicQuantizeLinear after its reductions (pass_qinteger.c). A NaN min
// or max (a NaN in x, which the reductions propagate) gives a NaN scale.
static kiln_status_t kiln_infer_dynamic_quantize_params(const kiln_op_infer_args_t* args) {
  kiln_graph_shape_t scalar = {0, {0}};
  for (size_t i = 0; i < 2; ++i) {
    const kiln_graph_value_t* v = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, i, KILN_OP_F32, &v));
    if (v->shape.rank != 0) return kiln_op_invalid(args, "input %zu must be a scalar", i);
  }
  KILN_RETURN_IF_ERROR(kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_F32, &scalar));
  return kiln_op_set_output(args, 1, KILN_GRAPH_DTYPE_F32, &scalar);
}

static kiln_status_t kiln_run_dynamic_quantize_params(const kiln_op_run_args_t* args) {
  float minx = *(const float*)args->inputs[0].data, maxx = *(const float*)args->inputs[1].data;
  float scale = 1.0f;
  int32_t zp = 0;
  kiln_dynamic_quantize_params(minx, maxx, &scale, &zp);
  if (isnan(minx) || isnan(maxx)) scale = NAN;
  *(float*)args->outputs[0].data = scale;
  *(float*)args->outputs[1].data = (float)zp;
  return kiln_ok_status();
}

// ---------------------------------------------------------------------------
// MatMulInteger and QLinearMatMul: int32 products of (a - a_zp)(b - b_zp),
// a_zp per tensor or per row of A, b_zp per tensor or per column of B.

typedef struct kiln_quant_matmul_t {
  int64_t m, k, n;
  size_t batches;
  kiln_graph_shape_t batch, ba, bb;
  int64_t stride_a[KILN_GRAPH_MAX_RANK], stride_b[KILN_GRAPH_MAX_RANK];
} kiln_quant_matmul_t;

static void kiln_quant_matmul_init(const kiln_graph_shape_t* a_shape,
                                   const kiln_graph_shape_t* b_shape,
                                   kiln_quant_matmul_t* mm) {
  kiln_graph_shape_t sa = *a_shape, sb = *b_shape;
  if (sa.rank == 1) { sa.rank = 2; sa.dims[1] = sa.dims[0]; sa.dims[0] = 1; }
  if (sb.rank == 1) { sb.rank = 2; sb.dims[1] = 1; }
  mm->m = sa.dims[sa.rank - 2];
  mm->k = sa.dims[sa.rank - 1];
  mm->n = sb.dims[sb.rank - 1];
  mm->ba = sa;
  mm->bb = sb;
  mm->ba.rank -= 2;
  mm->bb.rank -= 2;
  mm->batch.rank = mm->ba.rank > mm->bb.rank ? mm->ba.rank : mm->bb.rank;
  mm->batches = 1;
  for (int32_t d = 0; d < mm->batch.rank; ++d) {
    int32_t ia = d - (mm->batch.rank - mm->ba.rank);
    int32_t ib = d - (mm->batch.rank - mm->bb.rank);
    int64_t da = ia >= 0 ? mm->ba.dims[ia] : 1, db = ib >= 0 ? mm->bb.dims[ib] : 1;
    mm->batch.dims[d] = da == 1 ? db : da;
    mm->batches *= (size_t)mm->batch.dims[d];
  }
  kiln_ref_broadcast_strides(&mm->ba, &mm->batch, mm->stride_a);
  kiln_ref_broadcast_strides(&mm->bb, &mm->batch, mm->stride_b);
}

// Matrix offsets (in matrices) of A and B for output batch t.
static void kiln_quant_matmul_batch(const kiln_quant_matmul_t* mm, size_t t,
                                    int64_t* out_a, int64_t* out_b) {
  int64_t oa = 0, ob = 0;
  for (int32_t d = mm->batch.rank; d-- > 0;) {
    int64_t c = (int64_t)(t % (size_t)mm->batch.dims[d]);
    t /= (size_t)mm->batch.dims[d];
    oa += c * mm->stride_a[d];
    ob += c * mm->stride_b[d];
  }
  *out_a = oa;
  *out_b = ob;
}

// acc[t, i, j] for every batch, row and column (int64, exact).
static kiln_status_t kiln_quant_matmul_run(const kiln_op_run_args_t* args,
                                           const kiln_quant_matmul_t* mm,
                                           size_t b_index, size_t a_zp, size_t b_zp,
                                           void (*store)(const kiln_op_run_args_t*,
                                                         size_t, int64_t, int64_t)) {
  const kiln_ref_tensor_t* a = &args->inputs[0];
  const kiln_ref_tensor_t* b = &args->inputs[b_index];
  for (size_t t = 0; t < mm->batches; ++t) {
    int64_t oa, ob;
    kiln_quant_matmul_batch(mm, t, &oa, &ob);
    for (int64_t i = 0; i < mm->m; ++i) {
      int32_t za = kiln_quant_zp_at(args, a_zp, (size_t)i);
      for (int64_t j = 0; j < mm->n; ++j) {
        int32_t zb = kiln_quant_zp_at(args, b_zp, (size_t)j);
        int64_t sum = 0;
        for (int64_t p = 0; p < mm->k; ++p) {
          int32_t av = kiln_quant_load(a->data, a->dtype,
                                       (size_t)(oa * mm->m * mm->k + i * mm->k + p));
          int32_t bv = kiln_quant_load(b->data, b->dtype,
                                       (size_t)(ob * mm->k * mm->n + p * mm->n + j));
          sum += (int64_t)(av - za) * (bv - zb);
        }
        store(args, (size_t)((int64_t)t * mm->m * mm->n + i * mm->n + j), j, sum);
      }
    }
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_quant_check_matmul_operands(
    const kiln_op_infer_args_t* args, size_t a_index, size_t b_index,
    kiln_graph_shape_t* out_shape, int64_t* out_m, int64_t* out_n) {
  const kiln_graph_value_t* a = NULL;
  const kiln_graph_value_t* b = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, a_index, KILN_OP_QUANT, &a));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, b_index, KILN_OP_QUANT, &b));
  KILN_RETURN_IF_ERROR(kiln_op_matmul_shape(args, a, b, out_shape));
  *out_m = a->shape.rank == 1 ? 1 : a->shape.dims[a->shape.rank - 2];
  *out_n = b->shape.rank == 1 ? 1 : b->shape.dims[b->shape.rank - 1];
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_matmul_integer(const kiln_op_infer_args_t* args) {
  kiln_graph_shape_t shape;
  int64_t m = 0, n = 0;
  KILN_RETURN_IF_ERROR(kiln_quant_check_matmul_operands(args, 0, 1, &shape, &m, &n));
  const kiln_graph_value_t* a = kiln_op_input(args, 0);
  const kiln_graph_value_t* b = kiln_op_input(args, 1);
  if (kiln_op_input(args, 2)) {
    KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 2, "a_zero_point", m, a->dtype, "A"));
  }
  if (kiln_op_input(args, 3)) {
    KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 3, "b_zero_point", n, b->dtype, "B"));
  }
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I32, &shape);
}

static void kiln_store_i32(const kiln_op_run_args_t* args, size_t index,
                           int64_t column, int64_t sum) {
  (void)column;
  ((int32_t*)args->outputs[0].data)[index] = (int32_t)sum;
}

static kiln_status_t kiln_run_matmul_integer(const kiln_op_run_args_t* args) {
  kiln_quant_matmul_t mm;
  kiln_quant_matmul_init(&args->inputs[0].shape, &args->inputs[1].shape, &mm);
  return kiln_quant_matmul_run(args, &mm, 1, 2, 3, kiln_store_i32);
}

// QLinearMatMul / QLinearConv requantization, as numpy does it: the float32
// multiplier a_scale * b_scale / y_scale, applied to the int32 sum in float64.
static float kiln_quant_multiplier(float sa, float sb, float sy) {
  float ab = sa * sb;
  return ab / sy;
}

static kiln_status_t kiln_infer_qlinear_matmul(const kiln_op_infer_args_t* args) {
  kiln_graph_shape_t shape;
  int64_t m = 0, n = 0;
  KILN_RETURN_IF_ERROR(kiln_quant_check_matmul_operands(args, 0, 3, &shape, &m, &n));
  const kiln_graph_value_t* a = kiln_op_input(args, 0);
  const kiln_graph_value_t* b = kiln_op_input(args, 3);
  const kiln_graph_value_t* yz = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 7, KILN_OP_QUANT, &yz));
  size_t count = 0;
  static const size_t kScales[] = {1, 4, 6};
  for (size_t i = 0; i < 3; ++i) {
    KILN_RETURN_IF_ERROR(kiln_quant_check_scale(args, kScales[i]));
  }
  KILN_RETURN_IF_ERROR(kiln_quant_vector(args, 1, "a_scale", 0, &count));
  KILN_RETURN_IF_ERROR(kiln_quant_vector(args, 4, "b_scale", n, &count));
  KILN_RETURN_IF_ERROR(kiln_quant_vector(args, 6, "y_scale", 0, &count));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 2, KILN_OP_QUANT, &yz));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 5, KILN_OP_QUANT, &yz));
  yz = kiln_op_input(args, 7);
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 2, "a_zero_point", 0, a->dtype, "a"));
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 5, "b_zero_point", n, b->dtype, "b"));
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 7, "y_zero_point", 0, yz->dtype, "y"));
  return kiln_op_set_output(args, 0, yz->dtype, &shape);
}

static void kiln_store_requantized(const kiln_op_run_args_t* args, size_t index,
                                   int64_t column, int64_t sum) {
  const kiln_ref_tensor_t* bs = &args->inputs[4];
  float sa = *(const float*)args->inputs[1].data;
  float sb = ((const float*)bs->data)[bs->count == 1 ? 0 : column];
  float sy = *(const float*)args->inputs[6].data;
  kiln_ref_tensor_t* y = &args->outputs[0];
  int32_t qmin, qmax;
  kiln_quant_range(y->dtype, &qmin, &qmax);
  double value = (double)sum * kiln_quant_multiplier(sa, sb, sy) +
                 kiln_quant_zp_at(args, 7, 0);
  kiln_quant_store(y->data, y->dtype, index,
                   kiln_quant_saturate_round(value, qmin, qmax));
}

static kiln_status_t kiln_run_qlinear_matmul(const kiln_op_run_args_t* args) {
  kiln_quant_matmul_t mm;
  kiln_quant_matmul_init(&args->inputs[0].shape, &args->inputs[3].shape, &mm);
  return kiln_quant_matmul_run(args, &mm, 3, 2, 5, kiln_store_requantized);
}

// ---------------------------------------------------------------------------
// QLinearConv: x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp[, B int32];
// w_scale / w_zp per tensor or per output channel.

// The int8 conv's operands x (input 0) and w (input `w_index`): equal ranks
// 3 to 5, w matching x's channels in `group`s; *out_shape the output's.
static kiln_status_t kiln_quant_conv_shape(const kiln_op_infer_args_t* args, size_t w_index,
                                           const kiln_graph_value_t** out_x,
                                           const kiln_graph_value_t** out_w,
                                           kiln_graph_shape_t* out_shape) {
  const kiln_graph_value_t* x = NULL;
  const kiln_graph_value_t* w = NULL;
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 0, KILN_OP_QUANT, &x));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, w_index, KILN_OP_QUANT, &w));
  if (x->shape.rank < 3 || w->shape.rank != x->shape.rank) {
    return kiln_op_unsupported(args, "x rank %d / w rank %d; supported: equal "
                               "ranks 3 to 5", (int)x->shape.rank,
                               (int)w->shape.rank);
  }
  int64_t group = 1;
  KILN_RETURN_IF_ERROR(kiln_graph_node_attr_int(args->node, "group", 1, &group));
  int64_t channels = x->shape.dims[1], m = w->shape.dims[0];
  if (group < 1 || channels % group || m % group ||
      w->shape.dims[1] * group != channels) {
    return kiln_op_invalid(args, "w shape does not match %lld channels in %lld "
                           "groups", (long long)channels, (long long)group);
  }
  kiln_window_t window;
  KILN_RETURN_IF_ERROR(kiln_window_resolve(args->node, x->shape.rank - 2,
                                           x->shape.dims + 2, w->shape.dims + 2,
                                           false, true, &window));
  *out_shape = x->shape;
  out_shape->dims[1] = m;
  for (int32_t i = 0; i < window.spatial; ++i) out_shape->dims[2 + i] = window.out[i];
  *out_x = x;
  *out_w = w;
  return kiln_ok_status();
}

static kiln_status_t kiln_infer_qlinear_conv(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  const kiln_graph_value_t* w = NULL;
  const kiln_graph_value_t* yz = NULL;
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(kiln_quant_conv_shape(args, 3, &x, &w, &shape));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 7, KILN_OP_QUANT, &yz));
  const int64_t m = w->shape.dims[0];
  size_t count = 0;
  static const size_t kScales[] = {1, 4, 6};
  for (size_t i = 0; i < 3; ++i) {
    KILN_RETURN_IF_ERROR(kiln_quant_check_scale(args, kScales[i]));
  }
  KILN_RETURN_IF_ERROR(kiln_quant_vector(args, 1, "x_scale", 0, &count));
  KILN_RETURN_IF_ERROR(kiln_quant_vector(args, 4, "w_scale", m, &count));
  KILN_RETURN_IF_ERROR(kiln_quant_vector(args, 6, "y_scale", 0, &count));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 2, KILN_OP_QUANT, &yz));
  KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 5, KILN_OP_QUANT, &yz));
  yz = kiln_op_input(args, 7);
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 2, "x_zero_point", 0, x->dtype, "x"));
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 5, "w_zero_point", m, w->dtype, "w"));
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 7, "y_zero_point", 0, yz->dtype, "y"));
  if (kiln_op_input(args, 8)) {
    const kiln_graph_value_t* b = NULL;
    KILN_RETURN_IF_ERROR(kiln_op_require_input(args, 8, KILN_OP_I32, &b));
    if (b->shape.rank != 1 || b->shape.dims[0] != m) {
      return kiln_op_invalid(args, "B '%s' must have shape [%lld]", b->name,
                             (long long)m);
    }
  }
  return kiln_op_set_output(args, 0, yz->dtype, &shape);
}

// sum over the window of (x - x_zp)(w - w_zp) (+ bias) for every output,
// int64 (exact), handed to `store` with the output channel; x, w and the
// zero points are inputs 0, `w_index`, `x_zp`, `w_zp` (w_zp per tensor or
// per output channel).
static kiln_status_t kiln_quant_conv_run(const kiln_op_run_args_t* args, size_t w_index,
                                         size_t x_zp, size_t w_zp, const int32_t* bias,
                                         void (*store)(const kiln_op_run_args_t*, size_t,
                                                       int64_t, int64_t)) {
  const kiln_ref_tensor_t* x = &args->inputs[0];
  const kiln_ref_tensor_t* w = &args->inputs[w_index];
  kiln_conv_geometry_t geo;
  KILN_RETURN_IF_ERROR(kiln_conv_geometry_init(args, x, w, &geo));
  int32_t zx = kiln_quant_zp_at(args, x_zp, 0);
  for (int64_t n = 0; n < geo.batch; ++n) {
    for (int64_t oc = 0; oc < geo.m; ++oc) {
      int64_t g = oc / geo.mg;
      int32_t zw = kiln_quant_zp_at(args, w_zp, (size_t)oc);
      size_t w_base = (size_t)oc * (size_t)geo.cg * geo.kernels;
      size_t y_base = ((size_t)n * (size_t)geo.m + (size_t)oc) * geo.outs;
      for (size_t o = 0; o < geo.outs; ++o) {
        const int64_t* row = geo.table + o * geo.kernels;
        int64_t sum = bias ? bias[oc] : 0;
        for (int64_t c = 0; c < geo.cg; ++c) {
          size_t plane = ((size_t)n * (size_t)geo.channels + (size_t)(g * geo.cg + c)) *
                         geo.in_plane;
          for (size_t k = 0; k < geo.kernels; ++k) {
            if (row[k] < 0) continue;  // padding is the zero point: adds 0
            int32_t xv = kiln_quant_load(x->data, x->dtype, plane + (size_t)row[k]);
            int32_t wv = kiln_quant_load(w->data, w->dtype,
                                         w_base + (size_t)c * geo.kernels + k);
            sum += (int64_t)(xv - zx) * (wv - zw);
          }
        }
        store(args, y_base + o, oc, sum);
      }
    }
  }
  kiln_conv_geometry_deinit(args, &geo);
  return kiln_ok_status();
}

static void kiln_store_conv_requantized(const kiln_op_run_args_t* args, size_t index,
                                        int64_t oc, int64_t sum) {
  const kiln_ref_tensor_t* ws = &args->inputs[4];
  float mult = kiln_quant_multiplier(*(const float*)args->inputs[1].data,
                                     ((const float*)ws->data)[ws->count == 1 ? 0 : oc],
                                     *(const float*)args->inputs[6].data);
  kiln_ref_tensor_t* y = &args->outputs[0];
  int32_t qmin, qmax;
  kiln_quant_range(y->dtype, &qmin, &qmax);
  double value = (double)(int32_t)sum * mult + kiln_quant_zp_at(args, 7, 0);
  kiln_quant_store(y->data, y->dtype, index, kiln_quant_saturate_round(value, qmin, qmax));
}

static kiln_status_t kiln_run_qlinear_conv(const kiln_op_run_args_t* args) {
  const int32_t* bias = args->input_count > 8 && args->inputs[8].data
                            ? (const int32_t*)args->inputs[8].data
                            : NULL;
  return kiln_quant_conv_run(args, 3, 2, 5, bias, kiln_store_conv_requantized);
}

// ConvInteger: x, w[, x_zero_point (per tensor), w_zero_point (per tensor
// or per output channel)] -> int32 sums (padding adds the zero point, 0).
static kiln_status_t kiln_infer_conv_integer(const kiln_op_infer_args_t* args) {
  const kiln_graph_value_t* x = NULL;
  const kiln_graph_value_t* w = NULL;
  kiln_graph_shape_t shape;
  KILN_RETURN_IF_ERROR(kiln_quant_conv_shape(args, 1, &x, &w, &shape));
  const int64_t m = w->shape.dims[0];
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 2, "x_zero_point", 0, x->dtype, "x"));
  KILN_RETURN_IF_ERROR(kiln_quant_check_zp_vector(args, 3, "w_zero_point", m, w->dtype, "w"));
  return kiln_op_set_output(args, 0, KILN_GRAPH_DTYPE_I32, &shape);
}

static kiln_status_t kiln_run_conv_integer(const kiln_op_run_args_t* args) {
  return kiln_quant_conv_run(args, 1, 2, 3, NULL, kiln_store_i32);
}

const kiln_op_def_t kiln_ops_quant[] = {
    {"QuantizeLinear", "axis,saturate,block_size,output_dtype", 2, 3, 1, 1,
     kiln_infer_quantize, kiln_run_quantize, 10},
    {"DequantizeLinear", "axis,block_size", 2, 3, 1, 1, kiln_infer_dequantize,
     kiln_run_dequantize, 10},
    {"kiln.QuantizeDequantize", "axis,kiln.qmin,kiln.qmax", 2, 3, 1, 1,
     kiln_infer_quantize_dequantize, kiln_run_quantize_dequantize},
    {"kiln.Quantize", "axis,kiln.qmin,kiln.qmax", 2, 3, 1, 1,
     kiln_infer_quantize_dequantize, kiln_run_quantize_dequantize},
    {"kiln.Dequantize", "axis,kiln.qmin,kiln.qmax", 2, 3, 1, 1,
     kiln_infer_quantize_dequantize, kiln_run_quantize_dequantize},
    {"kiln.Requantize", "axis,kiln.qmin,kiln.qmax", 2, 3, 1, 1,
     kiln_infer_quantize_dequantize, kiln_run_quantize_dequantize},
    {"DynamicQuantizeLinear", "", 1, 1, 1, 3, kiln_infer_dynamic_quantize,
     kiln_run_dynamic_quantize, 11},
    {"MatMulInteger", "", 2, 4, 1, 1, kiln_infer_matmul_integer,
     kiln_run_matmul_integer, 10},
    {"ConvInteger", "auto_pad,dilations,group,kernel_shape,pads,strides", 2, 4, 1, 1,
     kiln_infer_conv_integer, kiln_run_conv_integer, 10},
    {"kiln.DynamicQuantizeParams", "", 2, 2, 2, 2, kiln_infer_dynamic_quantize_params,
     kiln_run_dynamic_quantize_params},
    {"QLinearMatMul", "", 8, 8, 1, 1, kiln_infer_qlinear_matmul,
     kiln_run_qlinear_matmul, 10},
    {"QLinearConv", "auto_pad,dilations,group,kernel_shape,pads,strides", 8, 9,
     1, 1, kiln_infer_qlinear_conv, kiln_run_qlinear_conv, 10},
    {NULL, NULL, 0, 0, 0, 0, NULL, NULL, 0},
};
