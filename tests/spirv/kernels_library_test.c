// Every kernel build in the library against the ABI its descriptor states
// (kernels_abi.h): the embedded SPIR-V must validate for Vulkan 1.1, and its
// reflection must show the same bindings, read-only flags, push-constant
// size and workgroup spec ids. This is what keeps the C structs and GLSL
// blocks from drifting apart.
#include <string.h>

#include "kiln/compiler/kernels.h"
#include "kiln/compiler/kernels_target.h"
#include "kiln/compiler/spirv.h"
#include "kiln_test.h"

KILN_TEST(KernelLibraryTest, EveryVariantMatchesItsDescriptor) {
  size_t builds = 0;
  for (unsigned id = 0; id < KILN_KERNEL_COUNT; ++id) {
    const kiln_kernel_desc_t* desc = kiln_kernel_desc((kiln_kernel_id_t)id);
    KILN_ASSERT_TRUE(desc != NULL);
    KILN_EXPECT_EQ(desc->id, id);
    KILN_EXPECT_LE(desc->push_constant_size, KILN_KERNEL_MAX_PUSH_CONSTANT_BYTES);
    // fp32 always exists, but for attention_coopmat (fp16 storage only).
    KILN_EXPECT_EQ((desc->variant_mask & 1u) != 0, id != KILN_KERNEL_ATTENTION_COOPMAT);
    for (unsigned v = 0; v < KILN_KERNEL_VARIANT_COUNT; ++v) {
      kiln_kernel_spirv_t spirv;
      kiln_status_t status = kiln_kernel_get_spirv((kiln_kernel_id_t)id,
                                                   (kiln_kernel_variant_t)v, &spirv);
      if (!(desc->variant_mask & (1u << v))) {
        KILN_EXPECT_EQ(kiln_status_consume_code(status), KILN_STATUS_NOT_FOUND);
        continue;
      }
      KILN_ASSERT_OK(status);
      ++builds;
      KILN_EXPECT_EQ(spirv.required_features,
                     desc->base_features |
                         kiln_kernel_variant_features((kiln_kernel_variant_t)v));
      KILN_EXPECT_OK(kiln_spirv_validate(spirv.blob_name, spirv.words,
                                         spirv.word_count,
                                         KILN_SPIRV_TARGET_VULKAN_1_1));
      kiln_spirv_reflection_t r;
      KILN_ASSERT_OK(kiln_spirv_reflect(spirv.blob_name, spirv.words,
                                        spirv.word_count, &r));
      KILN_ASSERT_EQ(r.entry_point_count, 1);
      KILN_EXPECT_STREQ(r.entry_points[0], desc->entry_point);
      KILN_EXPECT_EQ(r.push_constant_size, desc->push_constant_size);
      KILN_ASSERT_EQ(r.binding_count, desc->binding_count);
      for (uint32_t b = 0; b < desc->binding_count; ++b) {
        KILN_EXPECT_EQ(r.bindings[b].set, 0);
        KILN_EXPECT_EQ(r.bindings[b].binding, desc->bindings[b].binding);
        if (r.bindings[b].read_only != desc->bindings[b].read_only) {
          KILN_ADD_FAILURE("%s binding %u (%s): read_only %d in SPIR-V, %d declared",
                           spirv.blob_name, b, desc->bindings[b].role,
                           r.bindings[b].read_only, desc->bindings[b].read_only);
        }
        // The texel bindings the bridge declares are exactly those of the SPIR-V.
        bool texel = (spirv.texel_bindings >> desc->bindings[b].binding) & 1u;
        if (r.bindings[b].texel != texel) {
          KILN_ADD_FAILURE("%s binding %u (%s): texel %d in SPIR-V, %d declared",
                           spirv.blob_name, b, desc->bindings[b].role,
                           r.bindings[b].texel, texel);
        }
      }
      for (uint32_t d = 0; d < 3; ++d) {
        bool want_spec = d < desc->workgroup_dims;
        KILN_EXPECT_EQ(r.workgroup_size[d].is_spec_constant, want_spec);
        if (want_spec) KILN_EXPECT_EQ(r.workgroup_size[d].spec_id, d);
        else KILN_EXPECT_EQ(r.workgroup_size[d].size, 1);
      }
    }
  }
  // The 79 builds of kiln_kernel_builds (kernels/meson.build),
  // gemm_coopmat's and gemm_coopmat_split's two each of the default tiling
  // (their other tilings' builds:
  // KernelTargetTest.CoopmatTilings), attention_tiled's two and
  // attention_coopmat's of head dim 64
  // (the 128 build: KernelLibraryTest.AttentionCoopmatBuilds), plus gemm_cpu again as
  // gemv's cpu variant, gemm's three again as gemm_small's, conv2d_cpu
  // again as conv2d_gemm's cpu variant and qgemv_cpu as qgemm's.
  KILN_EXPECT_EQ(builds, 92);
}

KILN_TEST(KernelLibraryTest, LookupByName) {
  kiln_kernel_id_t id;
  KILN_ASSERT_OK(kiln_kernel_lookup("depthwise_conv2d", &id));
  KILN_EXPECT_EQ(id, KILN_KERNEL_DEPTHWISE_CONV2D);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "no kernel named 'winograd' (known: gemm, conv2d",
                             kiln_kernel_lookup("winograd", &id));
  KILN_EXPECT_EQ(id, KILN_KERNEL_COUNT);
  KILN_EXPECT_TRUE(kiln_kernel_desc(KILN_KERNEL_COUNT) == NULL);
}

KILN_TEST(KernelLibraryTest, MissingVariantNamesKernel) {
  kiln_kernel_spirv_t spirv;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND,
                             "kernel 'recurrent' has no fp16-storage variant",
                             kiln_kernel_get_spirv(KILN_KERNEL_RECURRENT,
                                                   KILN_KERNEL_VARIANT_FP16_STORAGE, &spirv));
  KILN_EXPECT_TRUE(spirv.words == NULL);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_kernel_get_spirv(KILN_KERNEL_PAD, KILN_KERNEL_VARIANT_COUNT, &spirv));
}

// Every kernel's config for every arch is a valid specialization of its
// SPIR-V, and gives the workgroup size the config states.
KILN_TEST(KernelLibraryTest, ConfigsSpecializeTheirSpirv) {
  const char* arches[] = {"cpu", "unknown", "valhall", "adreno", "ampere"};
  for (size_t a = 0; a < 5; ++a) {
    kiln_kernel_arch_caps_t caps;
    KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
    for (unsigned id = 0; id < KILN_KERNEL_COUNT; ++id) {
      kiln_kernel_config_t config;
      kiln_status_t status = kiln_kernel_config_select((kiln_kernel_id_t)id, &caps,
                                                       KILN_KERNEL_STORAGE_FP32, &config);
      if (status) {  // casts on an arch without 16-bit storage, fp16-only kernels
        KILN_EXPECT_EQ(kiln_status_consume_code(status),
                       kiln_kernel_desc((kiln_kernel_id_t)id)->variant_mask & 1u
                           ? KILN_STATUS_FAILED_PRECONDITION
                           : KILN_STATUS_UNIMPLEMENTED);
        continue;
      }
      kiln_kernel_spirv_t spirv;
      KILN_ASSERT_OK(kiln_kernel_get_config_spirv(&config, &spirv));
      kiln_spirv_reflection_t r;
      KILN_ASSERT_OK(kiln_spirv_reflect(spirv.blob_name, spirv.words, spirv.word_count, &r));
      uint32_t ids[KILN_KERNEL_MAX_SPEC_VALUES], values[KILN_KERNEL_MAX_SPEC_VALUES];
      for (size_t i = 0; i < config.spec_count; ++i) {
        ids[i] = config.spec[i].id;
        values[i] = config.spec[i].value;
      }
      uint32_t wg[3];
      KILN_ASSERT_OK(kiln_spirv_reflection_specialize(&r, ids, values, config.spec_count, wg));
      KILN_EXPECT_BYTES_EQ(wg, config.workgroup_size, sizeof(wg));
    }
  }
}

KILN_TEST(KernelLibraryTest, SpecializeRejectsUnknownIdsAndBadBools) {
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_spirv(KILN_KERNEL_GEMM, KILN_KERNEL_VARIANT_FP32, &spirv));
  kiln_spirv_reflection_t r;
  KILN_ASSERT_OK(kiln_spirv_reflect("gemm", spirv.words, spirv.word_count, &r));
  uint32_t wg[3];
  const uint32_t unknown_ids[] = {0, 42}, values[] = {16, 1};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "id 42",
                             kiln_spirv_reflection_specialize(&r, unknown_ids, values, 2, wg));
  const uint32_t bool_ids[] = {KILN_SPEC_GEMM_HAS_BIAS}, bool_values[] = {2};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "is a bool",
                             kiln_spirv_reflection_specialize(&r, bool_ids, bool_values, 1, wg));
  const uint32_t zero_ids[] = {1}, zero_values[] = {0};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "specialized to 0",
                             kiln_spirv_reflection_specialize(&r, zero_ids, zero_values, 1, wg));
  // Defaults: gemm declares local_size_x_id/y_id with default 1.
  KILN_ASSERT_OK(kiln_spirv_reflection_specialize(&r, NULL, NULL, 0, wg));
  KILN_EXPECT_EQ(wg[0], 1);
  KILN_EXPECT_EQ(wg[2], 1);
}
