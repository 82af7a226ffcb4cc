// The kernel library through the HAL, the way a compiled module uses it:
// one executable per kernel with a variant per target arch (tiling and
// variant picked by kernels_target.h for that arch's caps), the device
// choosing the variant by its triple, and dispatches recorded into one
// command buffer with barriers between dependent kernels. Results are
// compared with tests/spirv/reference: atol 1e-4 + rtol 1e-4 (fp32
// accumulation over at most a few hundred terms of magnitude <= 1).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/time.h"
#include "kiln/compiler/kernels.h"
#include "kiln/compiler/kernels_target.h"
#include "kiln/hal.h"
#include "hal/kernel_executable.h"
#include "kiln_test.h"
#include "reference/reference.h"

// The arches each executable carries; lavapipe is "cpu-llvmpipe-linux", so
// it must pick the "cpu" variant.
static const char* const kArches[] = {"cpu", "ampere", "valhall", "adreno", "unknown"};
#define ARCH_COUNT (sizeof(kArches) / sizeof(kArches[0]))

typedef kiln_kernel_executable_t kernel_executable_t;

static kiln_hal_device_t* create_device(void) {
  kiln_hal_device_t* device = NULL;
  KILN_ASSERT_OK(kiln_kernel_test_device_create(&device));
  return device;
}

static void release_device(kiln_hal_device_t* device) {
  KILN_EXPECT_OK(kiln_hal_device_wait_idle(device, KILN_INFINITE_TIMEOUT_NS));
  uint64_t messages = kiln_hal_device_validation_message_count(device);
  if (messages) {
    KILN_ADD_FAILURE("%llu validation messages; last: %s", (unsigned long long)messages,
                     kiln_hal_device_last_validation_message(device));
  }
  kiln_hal_device_release(device);
}

static kernel_executable_t make_executable(kiln_hal_device_t* device, kiln_kernel_id_t kernel,
                                           const kiln_kernel_spec_value_t* ops,
                                           size_t op_count) {
  kernel_executable_t result;
  KILN_ASSERT_OK(kiln_kernel_executable_create(device, kernel, kArches, ARCH_COUNT, ops,
                                               op_count, &result));
  return result;
}

static kiln_hal_buffer_t* make_buffer(kiln_hal_device_t* device, const float* data,
                                      size_t count) {
  kiln_hal_buffer_t* buffer = NULL;
  KILN_ASSERT_OK(kiln_kernel_test_buffer(device, data, count, &buffer));
  return buffer;
}

static void dispatch(kiln_hal_command_buffer_t* cb, const kernel_executable_t* k,
                     const void* push, uint32_t push_bytes, kiln_hal_buffer_t** buffers,
                     uint32_t buffer_count, const uint32_t grid[3]) {
  KILN_ASSERT_OK(kiln_kernel_test_dispatch(cb, k, push, push_bytes, buffers, buffer_count,
                                           grid));
}

static void submit_and_wait(kiln_hal_device_t* device, kiln_hal_command_buffer_t* cb) {
  KILN_EXPECT_OK(kiln_kernel_test_submit_and_wait(device, cb));
}

static float* random_values(size_t count, uint32_t seed) {
  float* values = malloc(count * sizeof(float));
  if (!values) abort();
  uint32_t state = seed * 2654435761u + 7u;
  for (size_t i = 0; i < count; ++i) {
    state = state * 1664525u + 1013904223u;
    values[i] = (float)((state >> 8) * (2.0 / 16777216.0) - 1.0);
  }
  return values;
}

static void expect_close(const char* what, const float* got, const float* want,
                         size_t count) {
  size_t bad = 0, worst = 0;
  double worst_error = 0;
  for (size_t i = 0; i < count; ++i) {
    double error = fabs((double)got[i] - want[i]);
    if (!(error <= 1e-4 + 1e-4 * fabs((double)want[i]))) {
      ++bad;
      if (!(error <= worst_error)) {
        worst_error = error;
        worst = i;
      }
    }
  }
  if (bad) {
    KILN_ADD_FAILURE("%s: %zu of %zu values off; worst [%zu] got %.9g want %.9g", what, bad,
                     count, worst, got[worst], want[worst]);
  }
}

KILN_TEST(KernelsHalTest, DevicePicksTheCpuVariantOnLavapipe) {
  kiln_hal_device_t* device = create_device();
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  kernel_executable_t gemm = make_executable(device, KILN_KERNEL_GEMM, NULL, 0);
  fprintf(stderr, "device triple %s-%s-%s picked gemm variant %u (%s)\n", info->triple.arch,
          info->triple.product, info->triple.os,
          kiln_hal_executable_variant_index(gemm.executable),
          kArches[kiln_hal_executable_variant_index(gemm.executable)]);
  if (strcmp(info->triple.arch, "cpu") == 0) {
    KILN_EXPECT_EQ(kiln_hal_executable_variant_index(gemm.executable), 0);
    KILN_EXPECT_EQ(gemm.config.workgroup_size[0], 8);  // the cpu tiling
  }
  // The subgroup softmax needs subgroup ops: picked only where reported.
  kernel_executable_t softmax = make_executable(device, KILN_KERNEL_SOFTMAX, NULL, 0);
  bool has_subgroup = (info->features & KILN_TARGET_FEATURE_SUBGROUP_OPS) != 0;
  KILN_EXPECT_EQ(softmax.config.variant == KILN_KERNEL_VARIANT_SUBGROUP, has_subgroup);
  kiln_hal_executable_release(gemm.executable);
  kiln_hal_executable_release(softmax.executable);
  release_device(device);
}

// A MobileNetV2 inverted-residual block, recorded once as a compiled model
// would: 1x1 expand (gemm, bias, relu6) -> 3x3 depthwise (bias, relu6) ->
// 1x1 project (gemm, bias, + residual), with barriers, then a global
// average pool (reduce) and softmax over the channels.
KILN_TEST(KernelsHalTest, InvertedResidualBlockChain) {
  kiln_hal_device_t* device = create_device();
  const size_t c = 16, e = 64, h = 14, w = 14, hw = h * w;
  float* x = random_values(c * hw, 1);
  float* w_expand = random_values(e * c, 2);
  float* b_expand = random_values(e, 3);
  float* w_dw = random_values(e * 9, 4);
  float* b_dw = random_values(e, 5);
  float* w_project = random_values(c * e, 6);
  float* b_project = random_values(c, 7);

  kiln_kernel_spec_value_t expand_ops[] = {{KILN_SPEC_GEMM_ACTIVATION, KILN_ACT_CLIP},
                                           {KILN_SPEC_GEMM_HAS_BIAS, 1}};
  kiln_kernel_spec_value_t project_ops[] = {{KILN_SPEC_GEMM_HAS_BIAS, 1},
                                            {KILN_SPEC_GEMM_HAS_RESIDUAL, 1}};
  kiln_kernel_spec_value_t dw_ops[] = {{KILN_SPEC_CONV_ACTIVATION, KILN_ACT_CLIP},
                                       {KILN_SPEC_CONV_HAS_BIAS, 1}};
  kiln_kernel_spec_value_t mean_ops[] = {{KILN_SPEC_REDUCE_OP, KILN_REDUCE_MEAN}};
  kernel_executable_t expand = make_executable(device, KILN_KERNEL_GEMM, expand_ops, 2);
  kernel_executable_t project = make_executable(device, KILN_KERNEL_GEMM, project_ops, 2);
  kernel_executable_t dw = make_executable(device, KILN_KERNEL_DEPTHWISE_CONV2D, dw_ops, 2);
  kernel_executable_t mean = make_executable(device, KILN_KERNEL_REDUCE, mean_ops, 1);
  kernel_executable_t softmax = make_executable(device, KILN_KERNEL_SOFTMAX, NULL, 0);

  kiln_hal_buffer_t* bx = make_buffer(device, x, c * hw);
  kiln_hal_buffer_t* bwe = make_buffer(device, w_expand, e * c);
  kiln_hal_buffer_t* bbe = make_buffer(device, b_expand, e);
  kiln_hal_buffer_t* bwd = make_buffer(device, w_dw, e * 9);
  kiln_hal_buffer_t* bbd = make_buffer(device, b_dw, e);
  kiln_hal_buffer_t* bwp = make_buffer(device, w_project, c * e);
  kiln_hal_buffer_t* bbp = make_buffer(device, b_project, c);
  kiln_hal_buffer_t* t1 = make_buffer(device, NULL, e * hw);
  kiln_hal_buffer_t* t2 = make_buffer(device, NULL, e * hw);
  kiln_hal_buffer_t* y = make_buffer(device, NULL, c * hw);
  kiln_hal_buffer_t* pooled = make_buffer(device, NULL, c);
  kiln_hal_buffer_t* probs = make_buffer(device, NULL, c);

  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t grid[3];
  // Expand: [e, c] x [c, hw] + bias per row, relu6.
  kiln_kernel_gemm_params_t ge = {(uint32_t)e, (uint32_t)hw, (uint32_t)c, 1,
                                  0, (uint32_t)c, 1, 0, (uint32_t)hw, 1, 0, (uint32_t)hw,
                                  0, 1, 0, 0, 0, 1.0f, 0.0f, 6.0f};
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&expand.config, &ge, grid));
  kiln_hal_buffer_t* expand_buffers[] = {bwe, bx, bbe, bbe, t1};
  dispatch(cb, &expand, &ge, sizeof(ge), expand_buffers, 5, grid);
  KILN_ASSERT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH,
                                                 KILN_HAL_STAGE_DISPATCH));
  // Depthwise 3x3 pad 1 + bias, relu6.
  kiln_kernel_conv2d_params_t pd = {1, (uint32_t)e, (uint32_t)h, (uint32_t)w, (uint32_t)e,
                                    (uint32_t)h, (uint32_t)w, (uint32_t)e, 3, 3, 1, 1, 1, 1,
                                    1, 1, 0.0f, 6.0f};
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&dw.config, e * hw, grid));
  kiln_hal_buffer_t* dw_buffers[] = {t1, bwd, bbd, bbd, t2};
  dispatch(cb, &dw, &pd, sizeof(pd), dw_buffers, 5, grid);
  KILN_ASSERT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH,
                                                 KILN_HAL_STAGE_DISPATCH));
  // Project: [c, e] x [e, hw] + bias + x (residual), no activation.
  kiln_kernel_gemm_params_t gp = {(uint32_t)c, (uint32_t)hw, (uint32_t)e, 1,
                                  0, (uint32_t)e, 1, 0, (uint32_t)hw, 1, 0, (uint32_t)hw,
                                  0, 1, 0, 0, (uint32_t)hw, 1.0f, 0.0f, 0.0f};
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&project.config, &gp, grid));
  kiln_hal_buffer_t* project_buffers[] = {bwp, t2, bbp, bx, y};
  dispatch(cb, &project, &gp, sizeof(gp), project_buffers, 5, grid);
  KILN_ASSERT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH,
                                                 KILN_HAL_STAGE_DISPATCH));
  kiln_kernel_reduce_params_t pr = {(uint32_t)c, (uint32_t)hw, 1};
  KILN_ASSERT_OK(kiln_kernel_grid_rows(&mean.config, c, grid));
  kiln_hal_buffer_t* mean_buffers[] = {y, pooled};
  dispatch(cb, &mean, &pr, sizeof(pr), mean_buffers, 2, grid);
  KILN_ASSERT_OK(kiln_hal_command_buffer_barrier(cb, KILN_HAL_STAGE_DISPATCH,
                                                 KILN_HAL_STAGE_DISPATCH));
  kiln_kernel_softmax_params_t ps = {1, (uint32_t)c, 1};
  KILN_ASSERT_OK(kiln_kernel_grid_rows(&softmax.config, 1, grid));
  kiln_hal_buffer_t* softmax_buffers[] = {pooled, probs};
  dispatch(cb, &softmax, &ps, sizeof(ps), softmax_buffers, 2, grid);
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  // Twice: a recorded command buffer is resubmitted unchanged.
  submit_and_wait(device, cb);
  submit_and_wait(device, cb);

  float* got_y = malloc(c * hw * 4);
  float got_probs[16];
  KILN_ASSERT_TRUE(got_y != NULL);
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, y, 0, got_y, c * hw * 4));
  KILN_ASSERT_OK(kiln_hal_device_read_buffer(device, probs, 0, got_probs, c * 4));

  // Reference chain.
  float* r1 = malloc(e * hw * 4);
  float* r2 = malloc(e * hw * 4);
  float* ry = malloc(c * hw * 4);
  float r_pooled[16], r_probs[16];
  KILN_ASSERT_TRUE(r1 && r2 && ry);
  ref_conv2d_t c1 = {1, c, h, w, e, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
  ref_conv2d(&c1, x, w_expand, b_expand, NULL, KILN_ACT_CLIP, 0, 6, r1);
  ref_conv2d_t c2 = {1, e, h, w, e, e, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  ref_conv2d(&c2, r1, w_dw, b_dw, NULL, KILN_ACT_CLIP, 0, 6, r2);
  ref_conv2d_t c3 = {1, e, h, w, c, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 0, 0};
  ref_conv2d(&c3, r2, w_project, b_project, x, KILN_ACT_NONE, 0, 0, ry);
  ref_reduce(KILN_REDUCE_MEAN, c, hw, 1, ry, r_pooled);
  ref_softmax(false, 1, c, 1, r_pooled, r_probs);
  expect_close("block output", got_y, ry, c * hw);
  expect_close("softmax of pooled", got_probs, r_probs, c);

  free(r1);
  free(r2);
  free(ry);
  free(got_y);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_t* all[] = {bx, bwe, bbe, bwd, bbd, bwp, bbp, t1, t2, y, pooled, probs};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); ++i) kiln_hal_buffer_release(all[i]);
  kernel_executable_t* executables[] = {&expand, &project, &dw, &mean, &softmax};
  for (size_t i = 0; i < 5; ++i) kiln_hal_executable_release(executables[i]->executable);
  free(x);
  free(w_expand);
  free(b_expand);
  free(w_dw);
  free(b_dw);
  free(w_project);
  free(b_project);
  release_device(device);
}
