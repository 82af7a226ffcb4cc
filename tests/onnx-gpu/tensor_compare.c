// See tensor_compare.h.
#include "tensor_compare.h"

#include <math.h>
#include <stdio.h>

#include "kiln/base/half.h"
#include "kiln_test.h"

static double kiln_tensor_element(const kiln_graph_tensor_t* tensor, size_t i) {
  return tensor->dtype == KILN_GRAPH_DTYPE_F16
             ? kiln_f16_to_f32(((const uint16_t*)tensor->data)[i])
             : ((const float*)tensor->data)[i];
}

kiln_tensor_error_t kiln_tensor_max_error(const kiln_graph_tensor_t* actual,
                                          const kiln_graph_tensor_t* expected) {
  kiln_tensor_error_t out = {0.0, 0.0, 0};
  size_t count = expected->byte_size / kiln_graph_dtype_size(expected->dtype);
  for (size_t i = 0; i < count; ++i) {
    double e = kiln_tensor_element(expected, i);
    out.max_ref = fmax(out.max_ref, fabs(e));
    double err = fabs(kiln_tensor_element(actual, i) - e);
    if (!(err <= out.max_err)) {
      out.max_err = isnan(err) ? INFINITY : err;
      out.worst = i;
    }
  }
  return out;
}

void kiln_tensor_random_inputs(const kiln_graph_t* graph, uint32_t seed,
                               kiln_graph_tensor_t* inputs) {
  uint32_t state = seed;
  for (size_t i = 0; i < graph->input_count; ++i) {
    KILN_ASSERT_OK(kiln_graph_tensor_allocate(kiln_allocator_system(), KILN_GRAPH_DTYPE_F32,
                                              &graph->values[graph->inputs[i]].shape,
                                              &inputs[i]));
    float* data = inputs[i].data;
    for (size_t e = 0; e < inputs[i].byte_size / sizeof(float); ++e) {
      state = state * 1664525u + 1013904223u;
      data[e] = (float)((state >> 8) * (1.0 / 8388608.0) - 1.0);
    }
  }
}

void kiln_tensor_expect_sum_error(const kiln_graph_tensor_t* actual,
                                  const kiln_graph_tensor_t* expected, double k,
                                  const char* label) {
  kiln_tensor_error_t error = kiln_tensor_max_error(actual, expected);
  const double tolerance = 1e-6 * sqrt(k) * error.max_ref;
  fprintf(stderr, "  %s, k %.0f: max|ref| %.4g, max err %.3g (element %zu), tolerance %.3g\n",
          label, k, error.max_ref, error.max_err, error.worst, tolerance);
  KILN_EXPECT_GT(error.max_ref, 0.0);
  KILN_EXPECT_LE(error.max_err, tolerance);
}
