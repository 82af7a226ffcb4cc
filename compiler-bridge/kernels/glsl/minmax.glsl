// max / min that propagate NaN as PyTorch and onnxruntime do (GLSL's
// max/min may return either operand when one is NaN). +-inf need nothing
// special: they order as usual.
#ifndef KILN_MINMAX_GLSL_
#define KILN_MINMAX_GLSL_

float kiln_max_nan(float a, float b) { return (isnan(a) || a > b) ? a : b; }
float kiln_min_nan(float a, float b) { return (isnan(a) || a < b) ? a : b; }

#endif  // KILN_MINMAX_GLSL_
