// See tensor_compare.h.
#include "tensor_compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kiln/base/half.h"
#include "kiln/compiler/graph_passes.h"
#include "kiln/compiler/graph_reference.h"
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
  char with_k[256];
  snprintf(with_k, sizeof(with_k), "%s, k %.0f", label, k);
  kiln_tensor_expect_relative_error(actual, expected, 1e-6 * sqrt(k), with_k);
}

void kiln_tensor_expect_relative_error(const kiln_graph_tensor_t* actual,
                                       const kiln_graph_tensor_t* expected, double bound,
                                       const char* label) {
  KILN_EXPECT_EQ(actual->byte_size, expected->byte_size);
  if (actual->byte_size != expected->byte_size) return;
  const kiln_tensor_error_t error = kiln_tensor_max_error(actual, expected);
  const double tolerance = bound * error.max_ref;
  fprintf(stderr, "  %s: max|ref| %.4g, max err %.3g (element %zu), tolerance %.3g\n", label,
          error.max_ref, error.max_err, error.worst, tolerance);
  KILN_EXPECT_GT(error.max_ref, 0.0);
  KILN_EXPECT_LE(error.max_err, tolerance);
}

void kiln_reference_check_init(const kiln_graph_t* graph, kiln_reference_check_t* out_check) {
  memset(out_check, 0, sizeof(*out_check));
  KILN_ASSERT_LE(graph->input_count, (size_t)KILN_REFERENCE_MAX_INPUTS);
  out_check->input_count = graph->input_count;
}

void kiln_reference_check_run_reference(const kiln_graph_t* graph,
                                        kiln_reference_check_t* check) {
  KILN_EXPECT_OK(kiln_graph_reference_run(graph, check->inputs, check->input_count, NULL,
                                          kiln_allocator_system(), &check->expected));
}

void kiln_reference_check_prepare(kiln_graph_t* graph, uint32_t seed,
                                  kiln_reference_check_t* out_check) {
  KILN_EXPECT_OK(kiln_graph_infer_shapes(graph));
  kiln_reference_check_init(graph, out_check);
  kiln_tensor_random_inputs(graph, seed, out_check->inputs);
  kiln_reference_check_run_reference(graph, out_check);
}

void kiln_reference_check_release(kiln_reference_check_t* check) {
  for (size_t i = 0; i < check->input_count; ++i) kiln_graph_tensor_deinit(&check->inputs[i]);
  kiln_graph_tensor_deinit(&check->expected);
  kiln_graph_tensor_deinit(&check->actual);
}
