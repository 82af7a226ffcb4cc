// Variant selection on the real device: the device's own triple picks the
// exact variant over the fallback, a variant needing a missing feature is
// skipped, and a spec with no runnable variant names each refusal. The
// variants carry different bias constants so the output says which ran.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_device.h"

static const kiln_hal_binding_layout_t kBindings[] = {{0, 0, true},
                                                      {0, 1, false}};

typedef struct variant_case_t {
  const char* selector;
  kiln_target_features_t features;
  float bias;
} variant_case_t;

// Builds an executable of scale_add variants and runs it; returns the bias
// the chosen variant added (or NAN when creation failed with `*out_status`).
static float run_variants(kiln_hal_device_t* device, const variant_case_t* cases,
                          uint32_t count, kiln_status_t* out_status,
                          uint32_t* out_index) {
  kiln_test_spirv_t spirv = kiln_test_spirv_load("scale_add");
  kiln_hal_entry_point_spec_t entry = {"main", {64, 1, 1}, 8, kBindings, 2, 0};
  kiln_hal_specialization_constant_t constants[8];
  kiln_hal_executable_variant_spec_t variants[8];
  for (uint32_t i = 0; i < count; ++i) {
    constants[i].id = 0;
    memcpy(&constants[i].value, &cases[i].bias, 4);
    variants[i] = (kiln_hal_executable_variant_spec_t){
        cases[i].selector, cases[i].features, {0}, spirv.words,
        spirv.word_count, &entry, 1, &constants[i], 1};
  }
  kiln_hal_executable_spec_t spec = {"variants", variants, count};
  kiln_hal_executable_t* executable = NULL;
  *out_status = kiln_hal_executable_create(device, &spec, &executable);
  kiln_test_spirv_free(&spirv);
  if (*out_status) return NAN;
  *out_index = kiln_hal_executable_variant_index(executable);
  kiln_hal_buffer_t* in = kiln_test_buffer(device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                           KILN_HAL_BUFFER_USAGE_DEFAULT, 256);
  kiln_hal_buffer_t* out = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 256);
  float zeros[64] = {0};
  KILN_EXPECT_OK(kiln_hal_device_write_buffer(device, in, 0, zeros, 256));
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_EXPECT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_EXPECT_OK(kiln_hal_command_buffer_begin(cb));
  kiln_test_scale_push_t push = {1.0f, 64};
  kiln_hal_binding_t bindings[] = {{0, 0, in, 0, 0, KILN_HAL_WHOLE_BUFFER},
                                   {0, 1, out, 0, 0, KILN_HAL_WHOLE_BUFFER}};
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, &push, 8, bindings, 2};
  KILN_EXPECT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  KILN_EXPECT_OK(kiln_hal_command_buffer_end(cb));
  KILN_EXPECT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  float result[64];
  KILN_EXPECT_OK(kiln_hal_device_read_buffer(device, out, 0, result, 256));
  for (int i = 1; i < 64; ++i) KILN_EXPECT_EQ(result[i], result[0]);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(in);
  kiln_hal_buffer_release(out);
  kiln_hal_executable_release(executable);
  return result[0];
}

KILN_TEST(ExecutableTest, DevicePicksItsOwnTripleThenFallsBack) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  char exact[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  kiln_target_triple_format(&info->triple, exact, sizeof(exact));
  char arch_only[KILN_TARGET_TOKEN_CAPACITY];
  snprintf(arch_only, sizeof(arch_only), "%s", info->triple.arch);
  // A different vendor's arch, whichever device this is.
  const char* foreign = strcmp(info->triple.arch, "hopper") == 0 ? "rdna3" : "hopper";
  kiln_status_t status;
  uint32_t index = 99;

  variant_case_t all[] = {{"unknown", 0, 1.0f}, {foreign, 0, 2.0f},
                          {arch_only, 0, 3.0f}, {exact, 0, 4.0f}};
  float bias = run_variants(device, all, 4, &status, &index);
  KILN_ASSERT_OK(status);
  if (strcmp(info->triple.product, "unknown") != 0) {
    KILN_EXPECT_EQ(index, 3);
    KILN_EXPECT_EQ(bias, 4.0f);
  }
  variant_case_t no_exact[] = {{"unknown", 0, 1.0f}, {foreign, 0, 2.0f},
                               {arch_only, 0, 3.0f}};
  bias = run_variants(device, no_exact, 3, &status, &index);
  KILN_ASSERT_OK(status);
  if (strcmp(info->triple.arch, "unknown") != 0) {
    KILN_EXPECT_EQ(index, 2);
    KILN_EXPECT_EQ(bias, 3.0f);
  }
  variant_case_t fallback[] = {{foreign, 0, 2.0f}, {"unknown", 0, 1.0f}};
  bias = run_variants(device, fallback, 2, &status, &index);
  KILN_ASSERT_OK(status);
  KILN_EXPECT_EQ(index, 1);
  KILN_EXPECT_EQ(bias, 1.0f);
  kiln_test_device_release(device);
}

KILN_TEST(ExecutableTest, SkipsVariantsNeedingMissingFeatures) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  char exact[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  kiln_target_triple_format(&info->triple, exact, sizeof(exact));
  // A feature this device lacks (cooperative matrix on lavapipe; on a GPU
  // that has everything, the variant is simply chosen).
  kiln_target_features_t missing = 0;
  static const kiln_target_features_t candidates[] = {
      KILN_TARGET_FEATURE_COOPERATIVE_MATRIX, KILN_TARGET_FEATURE_INT8_DOT,
      KILN_TARGET_FEATURE_FP16, KILN_TARGET_FEATURE_FP64};
  for (size_t i = 0; i < 4 && !missing; ++i) {
    if (!(info->features & candidates[i])) missing = candidates[i];
  }
  if (!missing) {
    kiln_test_device_release(device);
    return;
  }
  kiln_status_t status;
  uint32_t index = 99;
  variant_case_t cases[] = {{exact, missing, 5.0f}, {"unknown", 0, 1.0f}};
  float bias = run_variants(device, cases, 2, &status, &index);
  KILN_ASSERT_OK(status);
  KILN_EXPECT_EQ(index, 1);
  KILN_EXPECT_EQ(bias, 1.0f);

  variant_case_t none[] = {{exact, missing, 5.0f}, {"valhall-g78", 0, 1.0f}};
  bias = run_variants(device, none, 2, &status, &index);
  char* text = kiln_status_to_string(status);
  KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_NOT_FOUND);
  KILN_EXPECT_CONTAINS(text, "no variant runs on device");
  KILN_EXPECT_CONTAINS(text, "2 seen");
  KILN_EXPECT_CONTAINS(text, "device lacks");
  KILN_EXPECT_CONTAINS(text, "'valhall-g78': arch valhall (arm)");
  KILN_EXPECT_CONTAINS(text, info->name);
  free(text);
  kiln_status_free(status);
  kiln_test_device_release(device);
}

KILN_TEST(ExecutableTest, RefusesEntryPointsBeyondDeviceLimits) {
  kiln_hal_device_t* device = kiln_test_device_create();
  const kiln_hal_device_info_t* info = kiln_hal_device_info(device);
  kiln_test_spirv_t spirv = kiln_test_spirv_load("scale_add");
  kiln_hal_entry_point_spec_t entry = {"main", {64, 1, 1}, 8, kBindings, 2, 0};
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, spirv.words, spirv.word_count, &entry, 1, NULL, 0};
  kiln_hal_executable_spec_t spec = {"limits", &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  entry.workgroup_size[1] = info->limits.max_workgroup_invocations;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "exceeds device",
                             kiln_hal_executable_create(device, &spec, &executable));
  entry.workgroup_size[1] = 1;
  entry.required_subgroup_size = info->max_subgroup_size * 2;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNAVAILABLE, "needs subgroup size",
                             kiln_hal_executable_create(device, &spec, &executable));
  // The device's own default size is always accepted.
  entry.required_subgroup_size = info->limits.subgroup_size;
  KILN_EXPECT_OK(kiln_hal_executable_create(device, &spec, &executable));
  kiln_hal_executable_release(executable);
  kiln_test_spirv_free(&spirv);
  kiln_test_device_release(device);
}

// Module SPIR-V is untrusted: the chosen variant is validated (SPIRV-Tools)
// before the driver sees it. A float type of width 7 keeps the magic and the
// entry point intact, so only the validator can catch it.
KILN_TEST(ExecutableTest, InvalidSpirvIsRejectedBeforeTheDriver) {
  kiln_hal_device_t* device = kiln_test_device_create();
  kiln_test_spirv_t spirv = kiln_test_spirv_load("scale_add");
  uint32_t* words = malloc(spirv.word_count * sizeof(uint32_t));
  KILN_ASSERT_TRUE(words != NULL);
  memcpy(words, spirv.words, spirv.word_count * sizeof(uint32_t));
  bool corrupted = false;
  for (size_t at = 5; at < spirv.word_count;) {
    uint32_t length = words[at] >> 16, opcode = words[at] & 0xffff;
    if (length == 0) break;
    if (opcode == 22 /* OpTypeFloat */ && length == 3) {
      words[at + 2] = 7;
      corrupted = true;
      break;
    }
    at += length;
  }
  KILN_ASSERT_TRUE(corrupted);
  kiln_hal_entry_point_spec_t entry = {"main", {64, 1, 1}, 8, kBindings, 2, 0};
  kiln_hal_executable_variant_spec_t variant;
  memset(&variant, 0, sizeof(variant));
  variant.selector = "unknown-unknown-unknown";
  variant.spirv_words = words;
  variant.spirv_word_count = spirv.word_count;
  variant.entry_points = &entry;
  variant.entry_point_count = 1;
  kiln_hal_executable_spec_t spec = {"corrupt", &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT,
                             "executable 'corrupt' variant 0: SPIR-V failed vulkan1.",
                             kiln_hal_executable_create(device, &spec, &executable));
  KILN_EXPECT_TRUE(executable == NULL);
  // The same words uncorrupted are accepted.
  variant.spirv_words = spirv.words;
  KILN_EXPECT_OK(kiln_hal_executable_create(device, &spec, &executable));
  kiln_hal_executable_release(executable);
  free(words);
  kiln_test_spirv_free(&spirv);
  kiln_test_device_release(device);
}
