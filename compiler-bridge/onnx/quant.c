// Quantization arithmetic (see quant.h). rint() rounds half to even in the
// default rounding mode, which kiln never changes.
#include "quant.h"

#include <math.h>

void kiln_quant_range(kiln_graph_dtype_t dtype, int32_t* out_min,
                      int32_t* out_max) {
  switch (dtype) {
    case KILN_GRAPH_DTYPE_I8: *out_min = -128; *out_max = 127; break;
    case KILN_GRAPH_DTYPE_U8: *out_min = 0; *out_max = 255; break;
    default: *out_min = INT32_MIN; *out_max = INT32_MAX; break;
  }
}

int32_t kiln_quant_load(const void* data, kiln_graph_dtype_t dtype, size_t i) {
  switch (dtype) {
    case KILN_GRAPH_DTYPE_I8: return ((const int8_t*)data)[i];
    case KILN_GRAPH_DTYPE_U8: return ((const uint8_t*)data)[i];
    default: return ((const int32_t*)data)[i];
  }
}

void kiln_quant_store(void* data, kiln_graph_dtype_t dtype, size_t i,
                      int32_t value) {
  switch (dtype) {
    case KILN_GRAPH_DTYPE_I8: ((int8_t*)data)[i] = (int8_t)value; break;
    case KILN_GRAPH_DTYPE_U8: ((uint8_t*)data)[i] = (uint8_t)value; break;
    default: ((int32_t*)data)[i] = value; break;
  }
}

int32_t kiln_quant_saturate_round(double value, int32_t qmin, int32_t qmax) {
  if (isnan(value)) return qmin;
  double r = rint(value);
  if (r < qmin) return qmin;
  if (r > qmax) return qmax;
  return (int32_t)r;
}

int32_t kiln_quantize_value(float x, float scale, int32_t zero_point,
                            int32_t qmin, int32_t qmax) {
  float q = x / scale;  // float32, correctly rounded, as numpy divides
  if (isnan(q)) return qmin;
  return kiln_quant_saturate_round((double)rintf(q) + zero_point, qmin, qmax);
}

float kiln_dequantize_value(int32_t q, float scale, int32_t zero_point) {
  return ((float)q - (float)zero_point) * scale;
}

void kiln_quant_axis_init(const kiln_graph_shape_t* shape, int32_t axis,
                          size_t channels, kiln_quant_axis_t* out_axis) {
  out_axis->channels = channels ? channels : 1;
  out_axis->inner = 1;
  for (int32_t d = axis + 1; d < shape->rank; ++d) {
    out_axis->inner *= (size_t)shape->dims[d];
  }
}
