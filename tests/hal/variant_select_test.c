// Variant selection: exact product, then arch, then vendor family, then the
// portable fallback; refusals by feature, limit, product and OS.
#include <stdlib.h>
#include <string.h>

#include "kiln/hal/target_triple.h"
#include "kiln_test.h"

static kiln_target_device_caps_t device_caps(const char* triple_text) {
  kiln_target_device_caps_t caps;
  memset(&caps, 0, sizeof(caps));
  KILN_EXPECT_OK(kiln_target_triple_parse(kiln_make_cstring_view(triple_text),
                                          &caps.triple));
  caps.features = KILN_TARGET_FEATURE_FP16 | KILN_TARGET_FEATURE_INT8_DOT |
                  KILN_TARGET_FEATURE_SUBGROUP_SIZE_CONTROL;
  caps.limits.subgroup_size = 32;
  caps.limits.max_workgroup_invocations = 1024;
  caps.limits.max_shared_memory_bytes = 48 * 1024;
  caps.limits.max_push_constant_bytes = 256;
  caps.limits.max_storage_buffer_range = 1ull << 32;
  caps.min_subgroup_size = 32;
  caps.max_subgroup_size = 32;
  return caps;
}

static size_t select_index(const kiln_target_variant_desc_t* variants,
                           size_t count, const kiln_target_device_caps_t* caps,
                           kiln_target_match_t* out_match) {
  size_t index = SIZE_MAX;
  KILN_EXPECT_OK(
      kiln_target_variant_select(variants, count, caps, &index, out_match));
  return index;
}

KILN_TEST(VariantSelectTest, PrefersExactThenArchThenVendorThenPortable) {
  kiln_target_device_caps_t caps = device_caps("hopper-h100-linux");
  kiln_target_variant_desc_t variants[] = {
      {"unknown", 0, {0}},
      {"ampere", 0, {0}},
      {"hopper", 0, {0}},
      {"hopper-h100", 0, {0}},
      {"rdna3", 0, {0}},
  };
  kiln_target_match_t match;
  KILN_EXPECT_EQ(select_index(variants, 5, &caps, &match), 3);
  KILN_EXPECT_EQ(match, KILN_TARGET_MATCH_EXACT);
  KILN_EXPECT_EQ(select_index(variants, 3, &caps, &match), 2);
  KILN_EXPECT_EQ(match, KILN_TARGET_MATCH_ARCH);
  KILN_EXPECT_EQ(select_index(variants, 2, &caps, &match), 1);
  KILN_EXPECT_EQ(match, KILN_TARGET_MATCH_VENDOR);
  KILN_EXPECT_EQ(select_index(variants, 1, &caps, &match), 0);
  KILN_EXPECT_EQ(match, KILN_TARGET_MATCH_PORTABLE);
  // Order does not matter: the best rank wins; the first among equals.
  kiln_target_variant_desc_t reversed[] = {
      {"hopper-h100", 0, {0}}, {"unknown", 0, {0}}, {"hopper-h100-linux", 0, {0}}};
  KILN_EXPECT_EQ(select_index(reversed, 3, &caps, &match), 0);
}

KILN_TEST(VariantSelectTest, NeverPicksAVariantNeedingMissingFeatures) {
  kiln_target_device_caps_t caps = device_caps("hopper-h100-linux");
  kiln_target_variant_desc_t variants[] = {
      {"unknown", 0, {0}},
      {"hopper-h100", KILN_TARGET_FEATURE_COOPERATIVE_MATRIX, {0}},
  };
  kiln_target_match_t match;
  KILN_EXPECT_EQ(select_index(variants, 2, &caps, &match), 0);
  caps.features |= KILN_TARGET_FEATURE_COOPERATIVE_MATRIX;
  KILN_EXPECT_EQ(select_index(variants, 2, &caps, &match), 1);
}

KILN_TEST(VariantSelectTest, RefusesLimitsTheDeviceLacks) {
  kiln_target_device_caps_t caps = device_caps("ampere-rtx3080-linux");
  kiln_target_variant_desc_t variant = {"ampere", 0, {0}};
  char reason[256];
  variant.min_limits.max_shared_memory_bytes = 64 * 1024;
  KILN_EXPECT_EQ(kiln_target_variant_rank(&variant, &caps, reason, sizeof(reason)),
                 KILN_TARGET_MATCH_NONE);
  KILN_EXPECT_CONTAINS(reason, "shared memory bytes 65536, device has 49152");
  variant.min_limits.max_shared_memory_bytes = 0;
  variant.min_limits.subgroup_size = 64;
  KILN_EXPECT_EQ(kiln_target_variant_rank(&variant, &caps, reason, sizeof(reason)),
                 KILN_TARGET_MATCH_NONE);
  KILN_EXPECT_CONTAINS(reason, "subgroup size 64");
  variant.min_limits.subgroup_size = 32;
  KILN_EXPECT_EQ(kiln_target_variant_rank(&variant, &caps, reason, sizeof(reason)),
                 KILN_TARGET_MATCH_ARCH);
}

KILN_TEST(VariantSelectTest, ChecksOsAndProduct) {
  kiln_target_device_caps_t caps = device_caps("valhall-g78-android31");
  char reason[256];
  kiln_target_variant_desc_t older = {"valhall-android30", 0, {0}};
  KILN_EXPECT_EQ(kiln_target_variant_rank(&older, &caps, reason, sizeof(reason)),
                 KILN_TARGET_MATCH_ARCH);
  kiln_target_variant_desc_t newer = {"valhall-android33", 0, {0}};
  KILN_EXPECT_EQ(kiln_target_variant_rank(&newer, &caps, reason, sizeof(reason)),
                 KILN_TARGET_MATCH_NONE);
  KILN_EXPECT_CONTAINS(reason, "android33");
  kiln_target_variant_desc_t desktop = {"valhall-g78-linux", 0, {0}};
  KILN_EXPECT_EQ(kiln_target_variant_rank(&desktop, &caps, reason, sizeof(reason)),
                 KILN_TARGET_MATCH_NONE);
  kiln_target_variant_desc_t other_product = {"valhall-g57", 0, {0}};
  KILN_EXPECT_EQ(
      kiln_target_variant_rank(&other_product, &caps, reason, sizeof(reason)),
      KILN_TARGET_MATCH_NONE);
  KILN_EXPECT_CONTAINS(reason, "product g57 is not the device's g78");
}

KILN_TEST(VariantSelectTest, NoFitListsEveryVariantAndWhy) {
  kiln_target_device_caps_t caps = device_caps("cpu-llvmpipe-linux");
  kiln_target_variant_desc_t variants[] = {
      {"hopper-h100", 0, {0}},
      {"unknown", KILN_TARGET_FEATURE_COOPERATIVE_MATRIX, {0}},
      {"not-a-triple", 0, {0}},
  };
  size_t index = 7;
  kiln_status_t status =
      kiln_target_variant_select(variants, 3, &caps, &index, NULL);
  char* text = kiln_status_to_string(status);
  KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_NOT_FOUND);
  KILN_EXPECT_CONTAINS(text, "no variant runs on device cpu-llvmpipe-linux (3 seen");
  KILN_EXPECT_CONTAINS(text, "[0] 'hopper-h100': arch hopper (nvidia) is not the "
                             "device's cpu (cpu)");
  KILN_EXPECT_CONTAINS(text, "[1] 'unknown': device lacks cooperative_matrix");
  KILN_EXPECT_CONTAINS(text, "[2] 'not-a-triple': bad selector");
  free(text);
  kiln_status_free(status);
  KILN_EXPECT_EQ(index, 0);
  KILN_EXPECT_STATUS(KILN_STATUS_NOT_FOUND,
                     kiln_target_variant_select(NULL, 0, &caps, &index, NULL));
}
