// See gpu_test_util.h.
#include "gpu_test_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln_test.h"

static kiln_vk_harness_t* g_harness;

static void gpu_harness_release(void) {
  kiln_vk_harness_destroy(g_harness);
  g_harness = NULL;
}

kiln_vk_harness_t* gpu_harness(void) {
  if (!g_harness) {
    KILN_ASSERT_OK(kiln_vk_harness_create(&g_harness));
    atexit(gpu_harness_release);
  }
  return g_harness;
}

void gpu_random(float* values, size_t count, uint32_t seed, float lo, float hi) {
  uint32_t state = seed * 2654435761u + 1u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = lo + (hi - lo) * (float)((state >> 8) * (1.0 / 16777216.0));
  }
}

float* gpu_alloc(size_t count) {
  float* values = calloc(count ? count : 1, sizeof(float));
  if (!values) abort();
  return values;
}

float* gpu_random_alloc(size_t count, uint32_t seed, float lo, float hi) {
  float* values = gpu_alloc(count);
  gpu_random(values, count, seed, lo, hi);
  return values;
}

kiln_kernel_config_t gpu_config(kiln_kernel_id_t kernel, kiln_kernel_storage_t storage) {
  kiln_kernel_config_t config;
  memset(&config, 0, sizeof(config));
  KILN_EXPECT_OK(kiln_kernel_config_select(kernel, kiln_vk_harness_caps(gpu_harness()),
                                           storage, &config));
  return config;
}

void gpu_run(kiln_kernel_id_t kernel, kiln_kernel_variant_t variant,
             const kiln_kernel_config_t* config, const void* push,
             uint32_t push_size, const gpu_arg_t* args, uint32_t arg_count,
             uint32_t out_binding, void* out, size_t out_bytes,
             const uint32_t grid[3]) {
  kiln_vk_harness_t* h = gpu_harness();
  // The build the config names (gemm_coopmat has one per tiling).
  kiln_kernel_config_t lookup;
  memset(&lookup, 0, sizeof(lookup));
  if (config) lookup = *config;
  lookup.kernel = kernel;
  lookup.variant = variant;
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_config_spirv(&lookup, &spirv));
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(kernel);
  KILN_ASSERT_EQ(arg_count, desc->binding_count);
  KILN_ASSERT_EQ(push_size, desc->push_constant_size);
  kiln_vk_buffer_t* buffers[KILN_KERNEL_MAX_BINDINGS] = {0};
  uint32_t messages = kiln_vk_harness_message_count(h);
  kiln_status_t status = kiln_ok_status();
  for (uint32_t i = 0; i < arg_count && kiln_status_is_ok(status); ++i) {
    status = kiln_vk_buffer_create(h, args[i].bytes, args[i].data, &buffers[i]);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_vk_harness_dispatch(h, &spirv, config, push, push_size, buffers,
                                      arg_count, grid);
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_vk_buffer_read(h, buffers[out_binding], out, out_bytes);
  }
  for (uint32_t i = 0; i < arg_count; ++i) kiln_vk_buffer_destroy(h, buffers[i]);
  KILN_EXPECT_OK(status);
  if (kiln_vk_harness_message_count(h) != messages) {
    KILN_ADD_FAILURE("%s: %u validation message(s), last: %s", spirv.blob_name,
                     kiln_vk_harness_message_count(h) - messages,
                     kiln_vk_harness_last_message(h));
  }
}

void gpu_expect_close(const char* what, const float* got, const float* want,
                      size_t count, double atol, double rtol) {
  size_t bad = 0, worst = 0;
  double worst_excess = -1;
  for (size_t i = 0; i < count; ++i) {
    double limit = atol + rtol * fabs((double)want[i]);
    double error = fabs((double)got[i] - (double)want[i]);
    bool ok = error <= limit || (isnan(got[i]) && isnan(want[i])) ||
              (isinf(got[i]) && got[i] == want[i]);
    if (!ok) {
      ++bad;
      double excess = isnan(error) ? INFINITY : error - limit;
      if (excess > worst_excess) {
        worst_excess = excess;
        worst = i;
      }
    }
  }
  if (bad) {
    KILN_ADD_FAILURE("%s: %zu of %zu values outside atol %g + rtol %g; worst at "
                     "[%zu]: got %.9g, want %.9g",
                     what, bad, count, atol, rtol, worst, got[worst], want[worst]);
  }
}

uint16_t gpu_float_to_half(float value) {
  _Float16 h = (_Float16)value;
  uint16_t bits;
  memcpy(&bits, &h, 2);
  return bits;
}

float gpu_half_to_float(uint16_t bits) {
  _Float16 h;
  memcpy(&h, &bits, 2);
  return (float)h;
}

uint16_t* gpu_round_to_halves(float* values, size_t count) {
  uint16_t* halves = malloc(count * 2 + 2);
  if (!halves) abort();
  for (size_t i = 0; i < count; ++i) {
    halves[i] = gpu_float_to_half(values[i]);
    values[i] = gpu_half_to_float(halves[i]);
  }
  return halves;
}
