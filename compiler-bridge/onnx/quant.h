// Quantization arithmetic shared by the QuantizeLinear family's reference
// ops and the QDQ pass: ONNX's numpy reference in float32 (x / scale
// correctly rounded, round half to even, saturation; DequantizeLinear as
// (float(q) - float(zero_point)) * scale, one rounding).
#ifndef KILN_COMPILER_BRIDGE_ONNX_QUANT_H_
#define KILN_COMPILER_BRIDGE_ONNX_QUANT_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/graph.h"

// Saturation range of a quantized dtype (I8, U8; I32 for DequantizeLinear's
// int32 bias input).
void kiln_quant_range(kiln_graph_dtype_t dtype, int32_t* out_min,
                      int32_t* out_max);
// Element `i` of an I8 / U8 / I32 tensor.
int32_t kiln_quant_load(const void* data, kiln_graph_dtype_t dtype, size_t i);
void kiln_quant_store(void* data, kiln_graph_dtype_t dtype, size_t i,
                      int32_t value);
// saturate(round_half_even(x / scale) + zero_point); NaN gives qmin (what
// the numpy reference gives on x86), +-inf saturate.
int32_t kiln_quantize_value(float x, float scale, int32_t zero_point,
                            int32_t qmin, int32_t qmax);
float kiln_dequantize_value(int32_t q, float scale, int32_t zero_point);
// Round half to even and saturate a double (QLinearMatMul / QLinearConv
// requantization, which numpy does in float64).
int32_t kiln_quant_saturate_round(double value, int32_t qmin, int32_t qmax);

// Per-tensor (channels 1) or per-axis parameters of a tensor: the channel of
// flat element i is (i / inner) % channels.
typedef struct kiln_quant_axis_t {
  size_t channels;
  size_t inner;
} kiln_quant_axis_t;
void kiln_quant_axis_init(const kiln_graph_shape_t* shape, int32_t axis,
                          size_t channels, kiln_quant_axis_t* out_axis);
static inline size_t kiln_quant_channel(const kiln_quant_axis_t* axis,
                                        size_t i) {
  return axis->channels == 1 ? 0 : (i / axis->inner) % axis->channels;
}

#endif  // KILN_COMPILER_BRIDGE_ONNX_QUANT_H_
