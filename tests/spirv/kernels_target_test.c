// Per-target kernel configurations and dispatch grids.
#include <string.h>

#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln/compiler/kernels_loops.h"
#include "kiln/compiler/kernels_target.h"
#include "kiln/hal/target_triple.h"
#include "kiln_test.h"

static kiln_kernel_arch_caps_t caps_for(const char* arch) {
  kiln_kernel_arch_caps_t caps;
  kiln_status_ignore(kiln_kernel_arch_caps_for_arch(arch, &caps));
  return caps;
}

KILN_TEST(KernelTargetTest, ArchCapsTable) {
  kiln_kernel_arch_caps_t caps = caps_for("cpu");
  KILN_EXPECT_EQ(caps.subgroup_size, 8);
  KILN_EXPECT_EQ(caps.max_shared_memory_bytes, 32 * 1024);
  KILN_EXPECT_EQ(caps_for("valhall").subgroup_size, 16);
  KILN_EXPECT_EQ(caps_for("adreno").subgroup_size, 64);
  KILN_EXPECT_EQ(caps_for("ampere").subgroup_size, 32);
  KILN_EXPECT_FALSE(caps_for("unknown").fp16_storage);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "unknown arch 'volta' (known: unknown, cpu",
                             kiln_kernel_arch_caps_for_arch("volta", &caps));
  KILN_EXPECT_EQ(caps.subgroup_size, 0);
}

// One table: every arch of the HAL's target table reads back the same
// numbers and feature bits through the kernels' view.
KILN_TEST(KernelTargetTest, ArchCapsComeFromTheHalTable) {
  for (size_t i = 0; i < kiln_target_arch_count(); ++i) {
    const kiln_target_arch_info_t* info = kiln_target_arch_at(i);
    kiln_kernel_arch_caps_t caps = caps_for(info->name);
    KILN_EXPECT_EQ(caps.subgroup_size, info->subgroup_size);
    KILN_EXPECT_GT(caps.subgroup_size, 0);
    KILN_EXPECT_EQ(caps.max_workgroup_invocations, info->max_workgroup_invocations);
    KILN_EXPECT_EQ(caps.max_shared_memory_bytes, info->max_shared_memory_bytes);
    KILN_EXPECT_EQ(caps.fp16_storage,
                   (info->features & KILN_TARGET_FEATURE_STORAGE_16BIT) != 0);
    KILN_EXPECT_EQ(caps.subgroup_arithmetic,
                   (info->features & KILN_TARGET_FEATURE_SUBGROUP_OPS) != 0);
  }
  // Vulkan on NVIDIA reports 48 KiB of shared memory (H200: 49152).
  KILN_EXPECT_EQ(caps_for("hopper").max_shared_memory_bytes, 48 * 1024);
  KILN_EXPECT_EQ(caps_for("ampere").max_shared_memory_bytes, 48 * 1024);
}

// The tilings stop growing at 32 KiB of shared memory, so the NVIDIA rows'
// correction (64/163 KiB -> 48 KiB) leaves every generated config unchanged.
KILN_TEST(KernelTargetTest, ConfigsDoNotDependOnSharedMemoryAbove32KiB) {
  const uint32_t sizes[] = {48 * 1024, 64 * 1024, 163 * 1024};
  for (unsigned k = 0; k < KILN_KERNEL_COUNT; ++k) {
    if (k == KILN_KERNEL_ATTENTION_COOPMAT) continue;  // fp16 storage only: below
    kiln_kernel_config_t first;
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); ++s) {
      kiln_kernel_arch_caps_t caps = caps_for("hopper");
      caps.max_shared_memory_bytes = sizes[s];
      kiln_kernel_config_t config;
      KILN_ASSERT_OK(kiln_kernel_config_select((kiln_kernel_id_t)k, &caps,
                                               KILN_KERNEL_STORAGE_FP32, &config));
      if (s == 0) {
        first = config;
      } else {
        KILN_EXPECT_EQ(config.variant, first.variant);
        KILN_EXPECT_EQ(config.shared_memory_bytes, first.shared_memory_bytes);
        KILN_EXPECT_EQ(memcmp(config.workgroup_size, first.workgroup_size,
                              sizeof(config.workgroup_size)), 0);
        KILN_ASSERT_EQ(config.spec_count, first.spec_count);
        for (size_t i = 0; i < config.spec_count; ++i) {
          KILN_EXPECT_EQ(config.spec[i].id, first.spec[i].id);
          KILN_EXPECT_EQ(config.spec[i].value, first.spec[i].value);
        }
      }
    }
  }
}

// Every kernel on every arch: workgroups within the device limit and made
// of whole subgroups (where the limit allows), shared memory within bounds.
KILN_TEST(KernelTargetTest, EveryKernelFitsEveryArch) {
  const char* arches[] = {"unknown", "cpu", "valhall", "adreno", "rdna2",
                          "pascal", "ampere", "hopper", "arc", "m1"};
  for (size_t a = 0; a < sizeof(arches) / sizeof(arches[0]); ++a) {
    kiln_kernel_arch_caps_t caps = caps_for(arches[a]);
    for (unsigned k = 0; k < KILN_KERNEL_COUNT; ++k) {
      kiln_kernel_config_t config;
      kiln_status_t status = kiln_kernel_config_select((kiln_kernel_id_t)k, &caps,
                                                       KILN_KERNEL_STORAGE_FP32, &config);
      if ((kiln_kernel_desc((kiln_kernel_id_t)k)->base_features &
           KILN_KERNEL_FEATURE_FP16_STORAGE) && !caps.fp16_storage) {
        // The casts cannot run without 16-bit storage: refused, by name.
        KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "needs 16-bit storage",
                                   status);
        continue;
      }
      if (kiln_kernel_is_gemm_coopmat((kiln_kernel_id_t)k) && !caps.cooperative_matrix) {
        // Never chosen without the feature; refused by name.
        KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "cooperative matrix", status);
        continue;
      }
      if (k == KILN_KERNEL_ATTENTION_TILED &&
          caps.max_shared_memory_bytes < KILN_ATTN_TILED_SHARED_BYTES) {
        // 16 KiB (Vulkan's minimum): refused; the lowering keeps attention.
        KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "24384 bytes of shared",
                                   status);
        continue;
      }
      if (k == KILN_KERNEL_ATTENTION_COOPMAT) {
        // fp16 storage only (AttentionCoopmatConfig checks that build).
        KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, "has no fp32 variant", status);
        continue;
      }
      KILN_ASSERT_OK(status);
      uint32_t invocations = config.workgroup_size[0] * config.workgroup_size[1] *
                             config.workgroup_size[2];
      KILN_EXPECT_LE(invocations, caps.max_workgroup_invocations);
      if (caps.max_workgroup_invocations >= caps.subgroup_size) {
        KILN_EXPECT_EQ(invocations % caps.subgroup_size, 0);
      }
      KILN_EXPECT_LE(config.shared_memory_bytes, caps.max_shared_memory_bytes);
      KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_WORKGROUP_X, 0),
                     config.workgroup_size[0]);
      for (size_t i = 1; i < config.spec_count; ++i) {
        KILN_EXPECT_LT(config.spec[i - 1].id, config.spec[i].id);
      }
    }
  }
}

KILN_TEST(KernelTargetTest, GemmTilings) {
  kiln_kernel_config_t config;
  kiln_kernel_arch_caps_t cpu = caps_for("cpu");
  // llvmpipe: the gemm_cpu variant, one 8-lane subgroup per workgroup with
  // the 8x8 register tiles gemm_cpu.comp hard-codes, no shared memory.
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &cpu,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
  KILN_EXPECT_EQ(config.workgroup_size[0], 8);
  KILN_EXPECT_EQ(config.workgroup_size[1], 1);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_TM, 0), 8);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_TN, 0), 8);
  KILN_EXPECT_EQ(config.shared_memory_bytes, 0);
  KILN_EXPECT_EQ(config.required_features, 0);
  // fp16 storage on the same caps keeps the shared-memory kernel, the
  // tuning table's cpu row: 8x8 invocations of 4x4, TK 8, two buffers of
  // 8 * (32/4 + 1 + 32/4 + 1) vec4s, and the one vec4 of the (unused)
  // k-split reduction array.
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &cpu,
                                           KILN_KERNEL_STORAGE_FP16, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
  KILN_EXPECT_EQ(config.workgroup_size[0], 8);
  KILN_EXPECT_EQ(config.workgroup_size[1], 8);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_TK, 0), 8);
  KILN_EXPECT_EQ(config.shared_memory_bytes, (2 * 8 * 18 + 1) * 16);
  // NVIDIA: 16x16 invocations of 8x8 (128x128 blocks), TK 8.
  kiln_kernel_arch_caps_t ampere = caps_for("ampere");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &ampere,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.workgroup_size[0], 16);
  KILN_EXPECT_EQ(config.workgroup_size[1], 16);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_TM, 0), 8);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_TN, 0), 8);
  KILN_EXPECT_EQ(config.shared_memory_bytes, (2 * 8 * 66 + 1) * 16);
  // unknown: 128 invocations, 16 KiB shared.
  kiln_kernel_arch_caps_t unknown = caps_for("unknown");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &unknown,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.workgroup_size[0] * config.workgroup_size[1], 128);
  // A device with tiny shared memory still gets a tiling that fits.
  kiln_kernel_arch_caps_t tiny = {32, 256, 2048, false, false, false, false};
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &tiny,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_LE(config.shared_memory_bytes, 2048);
}

KILN_TEST(KernelTargetTest, VariantSelection) {
  kiln_kernel_config_t config;
  kiln_kernel_arch_caps_t adreno = caps_for("adreno");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_SOFTMAX, &adreno,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_SUBGROUP);
  KILN_EXPECT_EQ(config.required_features, KILN_KERNEL_FEATURE_SUBGROUP_ARITHMETIC);
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &adreno,
                                           KILN_KERNEL_STORAGE_FP16, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
  KILN_EXPECT_EQ(config.required_features, KILN_KERNEL_FEATURE_FP16_STORAGE);
  kiln_kernel_arch_caps_t unknown = caps_for("unknown");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_SOFTMAX, &unknown,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP32);
  KILN_EXPECT_EQ(config.required_features, 0);
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "kernel 'gemm': fp16 storage",
                             kiln_kernel_config_select(KILN_KERNEL_GEMM, &unknown,
                                                       KILN_KERNEL_STORAGE_FP16, &config));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, "kernel 'recurrent' has no fp16",
                             kiln_kernel_config_select(KILN_KERNEL_RECURRENT, &adreno,
                                                       KILN_KERNEL_STORAGE_FP16, &config));
  // fp16 storage with subgroup arithmetic where the kernel has that build
  // (the row reductions), else fp16 storage alone.
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_SOFTMAX, &adreno,
                                           KILN_KERNEL_STORAGE_FP16, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_SUBGROUP);
  KILN_EXPECT_EQ(config.required_features,
                 KILN_KERNEL_FEATURE_FP16_STORAGE | KILN_KERNEL_FEATURE_SUBGROUP_ARITHMETIC);
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_BINARY, &adreno,
                                           KILN_KERNEL_STORAGE_FP16, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
  kiln_kernel_arch_caps_t adreno_no_subgroup = adreno;
  adreno_no_subgroup.subgroup_arithmetic = false;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_NORM_PARTS, &adreno_no_subgroup,
                                           KILN_KERNEL_STORAGE_FP16, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
  KILN_EXPECT_EQ(config.required_features, KILN_KERNEL_FEATURE_FP16_STORAGE);
  // Every fp16-storage build is refused on an arch without 16-bit storage,
  // naming the kernel and the missing feature.
  for (unsigned k = 0; k < KILN_KERNEL_COUNT; ++k) {
    const kiln_kernel_desc_t* desc = kiln_kernel_desc((kiln_kernel_id_t)k);
    if (!(desc->variant_mask & (1u << KILN_KERNEL_VARIANT_FP16_STORAGE))) continue;
    kiln_status_t status = kiln_kernel_config_select((kiln_kernel_id_t)k, &unknown,
                                                     KILN_KERNEL_STORAGE_FP16, &config);
    KILN_EXPECT_EQ((int)kiln_status_code(status), (int)KILN_STATUS_FAILED_PRECONDITION);
    KILN_EXPECT_TRUE(strstr(kiln_status_message(status), "16-bit storage") != NULL);
    KILN_EXPECT_TRUE(strstr(kiln_status_message(status), desc->name) != NULL);
    kiln_status_free(status);
  }
  kiln_kernel_arch_caps_t broken = {0, 0, 0, false, false, false, false};
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_kernel_config_select(KILN_KERNEL_GEMM, &broken,
                                               KILN_KERNEL_STORAGE_FP32, &config));
}

KILN_TEST(KernelTargetTest, ConvBlockDiffersByTarget) {
  kiln_kernel_config_t config;
  kiln_kernel_arch_caps_t caps = caps_for("hopper");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &caps,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_CONV_CO_BLOCK, 0), 8);
  KILN_EXPECT_EQ(config.workgroup_size[0], 256);
  caps = caps_for("valhall");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &caps,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_CONV_CO_BLOCK, 0), 4);
  // llvmpipe: conv2d_cpu, 8 lanes of 8 pixels x 8 channels.
  caps = caps_for("cpu");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &caps,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
  KILN_EXPECT_EQ(config.workgroup_size[0], 8);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_CONV_CO_BLOCK, 0), 8);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_CONV_TILE_W, 0), 8);
  // fp16 storage keeps the portable kernel.
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &caps,
                                           KILN_KERNEL_STORAGE_FP16, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
  KILN_EXPECT_EQ(config.workgroup_size[0], 128);
}

// conv2d_gemm: the tiled core on GPUs, conv2d_cpu's config on llvmpipe;
// gemm's epilogue ids land on conv's ids there (one executable per module
// serves both), and the grid and loop model follow the variant.
KILN_TEST(KernelTargetTest, ConvGemmIsPerTarget) {
  kiln_kernel_conv2d_params_t p;
  memset(&p, 0, sizeof(p));
  p.batch = 1;
  p.in_channels = 64;
  p.in_height = p.in_width = 28;
  p.out_channels = 40;
  p.out_height = p.out_width = 28;
  p.groups = 1;
  p.kernel_h = p.kernel_w = 3;
  p.stride_h = p.stride_w = p.dilation_h = p.dilation_w = 1;
  p.pad_top = p.pad_left = 1;
  kiln_kernel_config_t gpu, cpu, direct;
  kiln_kernel_arch_caps_t hopper = caps_for("hopper"), llvmpipe = caps_for("cpu");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D_GEMM, &hopper,
                                           KILN_KERNEL_STORAGE_FP32, &gpu));
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D_GEMM, &llvmpipe,
                                           KILN_KERNEL_STORAGE_FP32, &cpu));
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &llvmpipe,
                                           KILN_KERNEL_STORAGE_FP32, &direct));
  KILN_EXPECT_EQ(gpu.variant, KILN_KERNEL_VARIANT_FP32);
  KILN_EXPECT_EQ(cpu.variant, KILN_KERNEL_VARIANT_CPU);
  KILN_EXPECT_EQ(cpu.workgroup_size[0], direct.workgroup_size[0]);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&cpu, KILN_SPEC_CONV_CO_BLOCK, 0), 8);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&cpu, KILN_SPEC_CONV_TILE_W, 0), 8);
  const uint32_t ids[3][2] = {{KILN_SPEC_GEMM_ACTIVATION, KILN_SPEC_CONV_ACTIVATION},
                              {KILN_SPEC_GEMM_HAS_BIAS, KILN_SPEC_CONV_HAS_BIAS},
                              {KILN_SPEC_GEMM_HAS_RESIDUAL, KILN_SPEC_CONV_HAS_RESIDUAL}};
  for (uint32_t i = 0; i < 3; ++i) {
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&gpu, ids[i][0], 10 + i));
    KILN_EXPECT_OK(kiln_kernel_config_set_spec(&cpu, ids[i][0], 10 + i));
    KILN_EXPECT_EQ(kiln_kernel_config_spec(&gpu, ids[i][0], 0), 10 + i);
    KILN_EXPECT_EQ(kiln_kernel_config_spec(&cpu, ids[i][1], 0), 10 + i);
  }
  // The tiling and TILE_W survive the epilogue on their own variants.
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&gpu, KILN_SPEC_GEMM_TM, 0), 4);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&cpu, KILN_SPEC_CONV_TILE_W, 0), 8);
  uint32_t grid[3], want[3];
  KILN_ASSERT_OK(kiln_kernel_grid_conv2d_gemm(&cpu, &p, grid));
  KILN_ASSERT_OK(kiln_kernel_grid_conv2d(&direct, &p, want));
  KILN_EXPECT_BYTES_EQ(grid, want, sizeof(grid));
  uint64_t passes = 0, direct_passes = 0;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&cpu, &p, grid, &passes));
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&direct, &p, want, &direct_passes));
  KILN_EXPECT_EQ(passes, direct_passes);
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_spirv(KILN_KERNEL_CONV2D_GEMM, KILN_KERNEL_VARIANT_CPU, &spirv));
  KILN_EXPECT_STREQ(spirv.blob_name, "conv2d_cpu");
  KILN_EXPECT_TRUE(spirv.texel_bindings != 0);
}

// The split-K rule: parts only where the small tiling's blocks fill at
// most half of the arch's blocks per unit (4 on hopper) times its units,
// enough parts for that many, >= 256 k per part, <= 8 parts; >= 128 k
// per part in products of at least 2^25 multiply-adds whose parts' own
// tiling keeps a 64x64x128 block of work per workgroup; never on CPU-like
// or unknown arches.
KILN_TEST(KernelTargetTest, SplitKRule) {
  kiln_kernel_arch_caps_t hopper = caps_for("hopper"), cpu = caps_for("cpu");
  kiln_kernel_arch_caps_t unknown = caps_for("unknown");
  KILN_EXPECT_EQ(kiln_kernel_gemm_compute_units("hopper"), 132u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_compute_units("cpu"), 0u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_compute_units(NULL), 0u);
  // ResNet-50 at 7x7 (64x64 blocks on hopper): 8 blocks -> 17, capped at
  // 8; 32 blocks -> 5, capped by k 512 at 2 parts of 256 or 4 of 128
  // (51M multiply-adds, 64x64 blocks for the parts).
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 512, 49, 2048, 1), 8u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 2048, 49, 512, 1), 4u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 512, 49, 4608, 1), 8u);
  // BERT's 128 x 768 x 3072: 24 blocks -> 22, capped at 8; 128 x 3072,
  // k 768: 96 blocks -> 6 parts of 128 (3 of 256 before the short parts:
  // fp32 BERT-base 2.16 -> 1.97 ms a call on an H100); 1088 columns at
  // 1024 rows (272 blocks) fill more than half of 4 x 132.
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_blocks_per_unit("hopper"), 4u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_blocks_per_unit("valhall"), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_blocks_per_unit(NULL), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 128, 768, 3072, 1), 8u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 128, 3072, 768, 1), 6u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 128, 768, 768, 1), 6u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 1024, 1088, 3072, 1), 1u);
  // ViT's 197 rows: the parts' 32-row blocks would multiply 32x64x128 a
  // workgroup, so parts stay 256 long (shorter ran ViT-B/16 4% slower).
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 197, 768, 768, 1), 3u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 197, 2304, 768, 1), 3u);
  // Under 2^25 multiply-adds (MobileNetV2's and EfficientNet-B0's 1x1
  // convs: 2-3% slower in short parts): >= 256 k a part.
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 1280, 49, 320, 1), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 64, 64, 4096, 1), 8u);
  // Enough blocks, or too little k: no split.
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 4096, 4096, 4096, 1), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 512, 49, 2048, 132), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 64, 64, 511, 1), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&hopper, 64, 64, 512, 1), 2u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&cpu, 512, 49, 2048, 1), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(&unknown, 512, 49, 2048, 1), 1u);
  KILN_EXPECT_EQ(kiln_kernel_gemm_split_k_parts(NULL, 512, 49, 2048, 1), 1u);
}

// Row kernels on llvmpipe: one 8-lane subgroup per row.
KILN_TEST(KernelTargetTest, RowKernelsUseOneSubgroupOnCpu) {
  kiln_kernel_arch_caps_t cpu = caps_for("cpu");
  const kiln_kernel_id_t kernels[] = {KILN_KERNEL_REDUCE, KILN_KERNEL_SOFTMAX, KILN_KERNEL_NORM};
  for (size_t i = 0; i < 3; ++i) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(kernels[i], &cpu, KILN_KERNEL_STORAGE_FP32,
                                             &config));
    KILN_EXPECT_EQ(config.workgroup_size[0], 8);
    KILN_EXPECT_EQ(config.shared_memory_bytes, 8 * 4);
  }
}

KILN_TEST(KernelTargetTest, SetSpecKeepsOrderAndReplaces) {
  kiln_kernel_config_t config;
  memset(&config, 0, sizeof(config));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, 6, 1));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, 3, 2));
  KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, 6, 9));
  KILN_ASSERT_EQ(config.spec_count, 2);
  KILN_EXPECT_EQ(config.spec[0].id, 3);
  KILN_EXPECT_EQ(config.spec[1].value, 9);
  for (uint32_t id = 10; id < 10 + KILN_KERNEL_MAX_SPEC_VALUES - 2; ++id) {
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, id, id));
  }
  KILN_EXPECT_STATUS(KILN_STATUS_RESOURCE_EXHAUSTED,
                     kiln_kernel_config_set_spec(&config, 99, 1));
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, 99, 7), 7);
}

KILN_TEST(KernelTargetTest, Grids) {
  kiln_kernel_config_t config;
  kiln_kernel_arch_caps_t cpu = caps_for("cpu");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &cpu,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  kiln_kernel_gemm_params_t gemm;
  memset(&gemm, 0, sizeof(gemm));
  gemm.m = 130;  // gemm_cpu tile: 8 rows x 64 columns
  gemm.n = 65;
  gemm.batch = 3;
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &gemm, grid));
  KILN_EXPECT_EQ(grid[0], 2);
  KILN_EXPECT_EQ(grid[1], 17);
  KILN_EXPECT_EQ(grid[2], 3);
  // n < 64 <= m: lanes go down m, 64 rows x 8 columns per workgroup.
  gemm.n = 49;
  gemm.m = 1280;
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &gemm, grid));
  KILN_EXPECT_EQ(grid[0], 7);
  KILN_EXPECT_EQ(grid[1], 20);
  gemm.m = 63;  // too few rows: the usual mapping
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &gemm, grid));
  KILN_EXPECT_EQ(grid[0], 1);
  KILN_EXPECT_EQ(grid[1], 8);
  gemm.batch = 70000;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "gemm: grid",
                             kiln_kernel_grid_gemm(&config, &gemm, grid));
  KILN_EXPECT_EQ(grid[2], 0);

  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_BINARY, &cpu,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, 1000, grid));
  KILN_EXPECT_EQ(grid[0], 8);  // ceil(1000 / 128)
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, 100000000, grid));
  KILN_EXPECT_EQ(grid[0], 65535);  // capped; the kernel grid-strides
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_kernel_grid_linear(&config, 1ull << 33, grid));
  // depthwise_conv2d_cpu: 32 lanes, 16 x 8 outputs each:
  // ceil(ceil(100000 / 128) / 32).
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_DEPTHWISE_CONV2D, &cpu,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_CPU);
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, 100000, grid));
  KILN_EXPECT_EQ(grid[0], 25);

  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &cpu,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  kiln_kernel_conv2d_params_t conv;
  memset(&conv, 0, sizeof(conv));
  conv.batch = 2;
  conv.out_channels = 10;
  conv.out_height = 7;
  conv.out_width = 40;  // conv2d_cpu: 280 pixels / 8 / 8 -> 5; 10 channels / 8 -> 2
  KILN_ASSERT_OK(kiln_kernel_grid_conv2d(&config, &conv, grid));
  KILN_EXPECT_EQ(grid[0], 5);
  KILN_EXPECT_EQ(grid[1], 2);
  KILN_EXPECT_EQ(grid[2], 2);
  KILN_ASSERT_OK(kiln_kernel_grid_rows(&config, 5, grid));
  KILN_EXPECT_EQ(grid[0], 5);
}

// The loop-pass model (kernels_loops.h) of the cpu variants: the sizes that
// came back cut short on lavapipe exceed the budget, the layers of
// MobileNetV2 / ResNet-18 stay within it (one dispatch, as before), and a
// part of the reduction is charged only for its part.
KILN_TEST(KernelTargetTest, LoopPassModel) {
  kiln_kernel_arch_caps_t cpu = caps_for("cpu");
  kiln_kernel_config_t config;
  uint32_t grid[3];
  uint64_t passes = 0;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &cpu, KILN_KERNEL_STORAGE_FP32,
                                           &config));
  kiln_kernel_gemm_params_t g;
  memset(&g, 0, sizeof(g));
  g.m = 3, g.n = 5, g.k = 600000, g.batch = 1;
  g.a_row_stride = g.k, g.a_col_stride = 1, g.b_row_stride = 5, g.b_col_stride = 1;
  g.c_row_stride = 5;
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &g, grid));
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &g, grid, &passes));
  KILN_EXPECT_GT(passes, 600000u / 4);  // the vec4 k loop
  KILN_EXPECT_GT(passes, KILN_KERNEL_LOOP_PASS_BUDGET);
  g.k = 1280, g.a_row_stride = 1280;  // MobileNetV2's classifier
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &g, grid, &passes));
  KILN_EXPECT_LT(passes, 2000u);
  g.a_col_stride = 3;  // no vec4 path: one pass per k
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &g, grid, &passes));
  KILN_EXPECT_GT(passes, 1280u);
  // B's rows padded off 16 bytes (5 of 7) and B not ending on a quad:
  // gemm_cpu has no vec4 loop for it either (kiln_kernel_gemm_cpu_k4_end).
  g.a_col_stride = 1, g.b_row_stride = 7;
  KILN_EXPECT_EQ(kiln_kernel_gemm_cpu_k4_end(&g), 0u);
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &g, grid, &passes));
  KILN_EXPECT_GT(passes, 1280u);
  g.b_row_stride = 5;

  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_CONV2D, &cpu, KILN_KERNEL_STORAGE_FP32,
                                           &config));
  kiln_kernel_conv2d_params_t c;
  memset(&c, 0, sizeof(c));
  c.batch = 1, c.in_channels = 512, c.in_height = 7, c.in_width = 7;
  c.out_channels = 512, c.out_height = 7, c.out_width = 7, c.groups = 1;
  c.kernel_h = 3, c.kernel_w = 3, c.stride_h = 1, c.stride_w = 1, c.pad_top = 1, c.pad_left = 1;
  c.dilation_h = 1, c.dilation_w = 1;  // ResNet-18's widest 3x3
  KILN_ASSERT_OK(kiln_kernel_grid_conv2d(&config, &c, grid));
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &c, grid, &passes));
  KILN_EXPECT_LT(passes, KILN_KERNEL_LOOP_PASS_BUDGET / 4);
  c.in_channels = 4096;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &c, grid, &passes));
  KILN_EXPECT_GT(passes, KILN_KERNEL_LOOP_PASS_BUDGET);
  c.ci_begin = 2048, c.ci_end = 4096;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &c, grid, &passes));
  KILN_EXPECT_LT(passes, KILN_KERNEL_LOOP_PASS_BUDGET);

  // RepLKNet's depthwise 31x31 at 1x64x56x56; a third of its rows fits.
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_DEPTHWISE_CONV2D, &cpu,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  memset(&c, 0, sizeof(c));
  c.batch = 1, c.in_channels = 64, c.in_height = 56, c.in_width = 56;
  c.out_channels = 64, c.out_height = 56, c.out_width = 56, c.groups = 64;
  c.kernel_h = 31, c.kernel_w = 31, c.stride_h = 1, c.stride_w = 1, c.pad_top = 15;
  c.pad_left = 15, c.dilation_h = 1, c.dilation_w = 1;
  KILN_ASSERT_OK(kiln_kernel_grid_linear(&config, 64u * 56 * 56, grid));
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &c, grid, &passes));
  KILN_EXPECT_GT(passes, KILN_KERNEL_LOOP_PASS_BUDGET);
  c.kh_end = 10;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &c, grid, &passes));
  KILN_EXPECT_LT(passes, KILN_KERNEL_LOOP_PASS_BUDGET);
  c.kernel_h = 3, c.kernel_w = 3, c.pad_top = 1, c.pad_left = 1, c.kh_end = 0;  // MobileNetV2
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &c, grid, &passes));
  KILN_EXPECT_LT(passes, KILN_KERNEL_LOOP_PASS_BUDGET / 4);

  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_SOFTMAX, &cpu, KILN_KERNEL_STORAGE_FP32,
                                           &config));
  KILN_EXPECT_STATUS(KILN_STATUS_UNIMPLEMENTED,
                     kiln_kernel_loop_passes(&config, &c, grid, &passes));
}

// The tuning table: a row per arch of the target table, each valid for and
// picked on its arch's caps; every candidate fits an NVIDIA part; bad
// tilings are refused naming the field.
KILN_TEST(KernelTargetTest, GemmTuningTable) {
  for (size_t i = 0; i < kiln_target_arch_count(); ++i) {
    const char* arch = kiln_target_arch_at(i)->name;
    const kiln_kernel_gemm_tiling_t* row = kiln_kernel_gemm_tuning(arch);
    KILN_ASSERT_TRUE(row != NULL);
    kiln_kernel_arch_caps_t caps = caps_for(arch);
    KILN_EXPECT_TRUE(caps.arch != NULL && strcmp(caps.arch, arch) == 0);
    kiln_kernel_config_t config;
    memset(&config, 0, sizeof(config));
    KILN_EXPECT_OK(kiln_kernel_gemm_tiling_apply(row, &caps, &config));
    // gemm (fp16 storage: the tiled core on every arch) takes the row;
    // gemm_small and the implicit-GEMM conv the small tiling, which is the
    // row unless the row has 8-wide register tiles.
    kiln_kernel_gemm_tiling_t small;
    KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select_small(&caps, &small));
    if (row->tm < 8 && row->tn < 8) {
      KILN_EXPECT_BYTES_EQ(&small, row, sizeof(small));
    } else {
      KILN_EXPECT_EQ(small.tm, 4);
      KILN_EXPECT_EQ(small.tn, 4);
    }
    const struct {
      kiln_kernel_id_t kernel;
      kiln_kernel_storage_t storage;
      const kiln_kernel_gemm_tiling_t* want;
    } picks[] = {{KILN_KERNEL_CONV2D_GEMM, KILN_KERNEL_STORAGE_FP32, &small},
                 {KILN_KERNEL_GEMM_SMALL, KILN_KERNEL_STORAGE_FP16, &small},
                 {KILN_KERNEL_GEMM, KILN_KERNEL_STORAGE_FP16, row}};
    for (size_t p = 0; p < sizeof(picks) / sizeof(picks[0]); ++p) {
      if (picks[p].storage == KILN_KERNEL_STORAGE_FP16 && !caps.fp16_storage) continue;
      // CPU devices run conv2d_gemm's cpu variant (ConvGemmIsPerTarget).
      if (picks[p].kernel == KILN_KERNEL_CONV2D_GEMM && caps.subgroup_size <= 8) continue;
      kiln_kernel_config_t picked;
      KILN_ASSERT_OK(kiln_kernel_config_select(picks[p].kernel, &caps, picks[p].storage,
                                               &picked));
      const kiln_kernel_gemm_tiling_t* want = picks[p].want;
      KILN_EXPECT_EQ(picked.workgroup_size[0], want->wg_x);
      KILN_EXPECT_EQ(picked.workgroup_size[1], want->wg_y);
      KILN_EXPECT_EQ(kiln_kernel_config_spec(&picked, KILN_SPEC_GEMM_TM, 0), want->tm);
      KILN_EXPECT_EQ(kiln_kernel_config_spec(&picked, KILN_SPEC_GEMM_TN, 0), want->tn);
      KILN_EXPECT_EQ(kiln_kernel_config_spec(&picked, KILN_SPEC_GEMM_TK, 0), want->tk);
      KILN_EXPECT_EQ(picked.shared_memory_bytes, kiln_kernel_gemm_shared_bytes(want));
    }
  }
  KILN_EXPECT_TRUE(kiln_kernel_gemm_tuning("volta") == NULL);
  KILN_EXPECT_TRUE(kiln_kernel_gemm_tuning(NULL) == NULL);
  kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  for (size_t i = 0; i < kiln_kernel_gemm_candidate_count(); ++i) {
    kiln_kernel_config_t config;
    memset(&config, 0, sizeof(config));
    KILN_EXPECT_OK(kiln_kernel_gemm_tiling_apply(kiln_kernel_gemm_candidate(i), &hopper, &config));
  }
  kiln_kernel_config_t config;
  memset(&config, 0, sizeof(config));
  kiln_kernel_gemm_tiling_t bad = {16, 16, 6, 8, 8};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "TM 6 / TN 8 must be 4 or 8",
                             kiln_kernel_gemm_tiling_apply(&bad, &hopper, &config));
  bad = (kiln_kernel_gemm_tiling_t){16, 16, 8, 8, 6};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "TK 6 must be a multiple of 4",
                             kiln_kernel_gemm_tiling_apply(&bad, &hopper, &config));
  bad = (kiln_kernel_gemm_tiling_t){32, 64, 8, 8, 8};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "2048 invocations exceed",
                             kiln_kernel_gemm_tiling_apply(&bad, &hopper, &config));
  bad = (kiln_kernel_gemm_tiling_t){16, 16, 8, 8, 32};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "bytes of shared memory exceed",
                             kiln_kernel_gemm_tiling_apply(&bad, &hopper, &config));
  // Device caps (no arch) and an arch without a row take the caps rule.
  kiln_kernel_arch_caps_t device = hopper;
  device.arch = NULL;
  kiln_kernel_gemm_tiling_t derived;
  KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select(&device, &derived));
  KILN_EXPECT_EQ(derived.wg_x * derived.wg_y, 256);
  KILN_EXPECT_EQ(derived.tm, 8);
}

// The core's loop model: the GPU tilings keep big reductions in one
// dispatch (about 1.4 passes per k at 128x128 TK 8), and still charge
// every step.
KILN_TEST(KernelTargetTest, GemmCoreLoopModel) {
  kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  kiln_kernel_config_t config;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &hopper, KILN_KERNEL_STORAGE_FP32,
                                           &config));
  kiln_kernel_gemm_params_t g;
  memset(&g, 0, sizeof(g));
  g.m = 4096, g.n = 4096, g.k = 4096, g.batch = 1;
  uint32_t grid[3] = {32, 32, 1};
  uint64_t passes = 0;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &g, grid, &passes));
  KILN_EXPECT_LT(passes, KILN_KERNEL_LOOP_PASS_BUDGET / 8);
  KILN_EXPECT_GT(passes, 4096u / 8);
  g.k = 1u << 20;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &g, grid, &passes));
  KILN_EXPECT_GT(passes, KILN_KERNEL_LOOP_PASS_BUDGET);
}

// gemm_coopmat: chosen only where the arch has cooperative matrix (and
// fp16), refused by name elsewhere (lavapipe's "cpu"); every candidate
// fits the NVIDIA rows; the grid follows the block.
KILN_TEST(KernelTargetTest, CoopmatTilings) {
  for (size_t i = 0; i < kiln_target_arch_count(); ++i) {
    const char* arch = kiln_target_arch_at(i)->name;
    kiln_kernel_arch_caps_t caps = caps_for(arch);
    kiln_kernel_config_t config;
    kiln_status_t status = kiln_kernel_config_select(
        KILN_KERNEL_GEMM_COOPMAT, &caps,
        caps.cooperative_matrix ? KILN_KERNEL_STORAGE_FP16 : KILN_KERNEL_STORAGE_FP32, &config);
    if (!caps.cooperative_matrix) {
      KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "cooperative matrix", status);
      continue;
    }
    KILN_ASSERT_OK(status);
    KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP16_STORAGE);
    KILN_EXPECT_TRUE(config.required_features & KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX);
    KILN_EXPECT_TRUE(config.required_features & KILN_FORMAT_FEATURE_STORAGE_16BIT);
    const kiln_kernel_coopmat_tiling_t* row = kiln_kernel_coopmat_tuning(arch);
    KILN_ASSERT_TRUE(row != NULL);
    KILN_EXPECT_EQ(config.workgroup_size[0], row->warps_m * row->warps_n * caps.subgroup_size);
    KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_WORKGROUP_X, 0),
                   config.workgroup_size[0]);
    KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_COOPMAT_BK, 0), row->bk);
    KILN_EXPECT_LE(config.shared_memory_bytes, caps.max_shared_memory_bytes);
  }
  kiln_kernel_arch_caps_t cpu = caps_for("cpu");
  kiln_kernel_config_t config;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_FAILED_PRECONDITION, "VK_NV_cooperative_matrix",
      kiln_kernel_config_select(KILN_KERNEL_GEMM_COOPMAT, &cpu, KILN_KERNEL_STORAGE_FP32,
                                &config));
  kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  for (size_t i = 0; i < kiln_kernel_coopmat_candidate_count(); ++i) {
    const kiln_kernel_coopmat_tiling_t* t = kiln_kernel_coopmat_candidate(i);
    memset(&config, 0, sizeof(config));
    config.kernel = KILN_KERNEL_GEMM_COOPMAT;
    KILN_EXPECT_OK(kiln_kernel_coopmat_tiling_apply(t, &hopper, &config));
    KILN_EXPECT_LE(kiln_kernel_coopmat_shared_bytes(t), KILN_COOPMAT_SHARED_VEC4 * 16u);
    // Each candidate has its own build, in both storages, and so has its
    // split-K build (its parts' sum in the same dispatch).
    for (int build = 0; build < 4; ++build) {
      config.kernel = build < 2 ? KILN_KERNEL_GEMM_COOPMAT : KILN_KERNEL_GEMM_COOPMAT_SPLIT;
      config.variant = build % 2 ? KILN_KERNEL_VARIANT_FP16_STORAGE : KILN_KERNEL_VARIANT_FP32;
      kiln_kernel_spirv_t spirv;
      KILN_EXPECT_OK(kiln_kernel_get_config_spirv(&config, &spirv));
      KILN_EXPECT_TRUE(spirv.word_count > 0);
      KILN_EXPECT_TRUE(strstr(spirv.blob_name, build < 2 ? "gemm_coopmat" : "gemm_coopmat_split") ==
                       spirv.blob_name);
    }
    config.kernel = KILN_KERNEL_GEMM_COOPMAT;
  }
  // A tiling without a build is refused by name, as one over the shared
  // memory would be.
  const kiln_kernel_coopmat_tiling_t unbuilt = {2, 2, 4, 4, 64};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "no build",
                             kiln_kernel_coopmat_tiling_apply(&unbuilt, &hopper, &config));
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM_COOPMAT, &hopper,
                                           KILN_KERNEL_STORAGE_FP32, &config));
  KILN_EXPECT_EQ(config.variant, KILN_KERNEL_VARIANT_FP32);
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = 4096, p.n = 4097, p.k = 4096, p.batch = 3;
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
  KILN_EXPECT_EQ(grid[0], 17u);  // hopper's row: 128x256 blocks
  KILN_EXPECT_EQ(grid[1], 32u);
  KILN_EXPECT_EQ(grid[2], 3u);
  // The loop model covers it (steps of BK 16 grow with k).
  uint64_t passes = 0, longer = 0;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &p, grid, &passes));
  p.k = 8192;
  KILN_ASSERT_OK(kiln_kernel_loop_passes(&config, &p, grid, &longer));
  KILN_EXPECT_GT(longer, passes + 4096 / 32);
  kiln_kernel_coopmat_tiling_t small;
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select(&hopper, true, &small));
  KILN_EXPECT_EQ(small.warps_m * small.tiles_m * 16, 64u);
  // Per shape, the least modelled time (coopmat_tuning.c's candidates):
  // the big blocks where they fill the GPU and waste little
  // (ResNet-50 batch 32's 14x14 layers, n = 196: 256 columns either way),
  // the small ones where the big blocks would mostly pad (its 7x7 layers,
  // n = 49 in blocks of 256 columns) or leave SMs idle (batch 1).
  kiln_kernel_coopmat_tiling_t pick;
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, 1024, 196, 2304, 32, &pick));
  KILN_EXPECT_EQ(pick.warps_n * pick.tiles_n * 16, 256u);
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, 1024, 196, 2304, 1, &pick));
  KILN_EXPECT_EQ(memcmp(&pick, &small, sizeof(pick)), 0);
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, 4096, 4096, 4096, 1, &pick));
  KILN_EXPECT_EQ(pick.warps_n * pick.tiles_n * 16, 256u);
  // Medium blocks: 128x64 for the 7x7 layers (n = 49; 128 and 512
  // blocks), 128x128 for a 14x14 3x3 conv (128 blocks), 64x128 for 64
  // rows. The 128x64 and 64x128 blocks step k by 64
  // through one staging buffer (double buffers would pass the kernel's
  // 41 KiB), 128x128 by 32 through two.
  const struct {
    uint64_t m, n, batch;
    uint32_t rows, cols, bk;
  } medium[] = {{2048, 49, 32, 128, 64, 64}, {512, 49, 32, 128, 64, 64},
                {256, 196, 32, 128, 128, 32}, {64, 3136, 32, 64, 128, 64}};
  for (size_t i = 0; i < sizeof(medium) / sizeof(medium[0]); ++i) {
    KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, medium[i].m, medium[i].n, 4608,
                                                           medium[i].batch, &pick));
    KILN_EXPECT_EQ(pick.warps_m * pick.tiles_m * 16, medium[i].rows);
    KILN_EXPECT_EQ(pick.warps_n * pick.tiles_n * 16, medium[i].cols);
    // 128x128 as 16 subgroups of 2x2 tiles, the others as 8.
    KILN_EXPECT_EQ(pick.warps_m * pick.warps_n,
                   medium[i].rows == 128 && medium[i].cols == 128 ? 16u : 8u);
    KILN_EXPECT_EQ(pick.bk, medium[i].bk);
    const uint32_t rows = medium[i].rows, cols = medium[i].cols, bk = medium[i].bk;
    const uint32_t stage = (rows * (bk / 8 + 1) + bk * cols / 8 + (bk > cols ? bk : cols)) * 16;
    KILN_EXPECT_EQ(kiln_kernel_coopmat_shared_bytes(&pick), (bk == 64 ? 1 : 2) * stage);
    KILN_EXPECT_LE((bk == 64 ? 1 : 2) * stage, KILN_COOPMAT_SHARED_VEC4 * 16u);
    if (bk == 64) KILN_EXPECT_GT(2 * stage, KILN_COOPMAT_SHARED_VEC4 * 16u);
  }
  // A short k keeps to medium blocks where the big ones would fill the GPU
  // (ResNet-50 batch 32's 1x1 expand, 256 x 3136, k 64: 128x128); k over
  // 256 takes the big ones.
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, 256, 3136, 64, 32, &pick));
  KILN_EXPECT_EQ(pick.warps_m * pick.tiles_m * 16, 128u);
  KILN_EXPECT_EQ(pick.warps_n * pick.tiles_n * 16, 128u);
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, 256, 3136, 256, 32, &pick));
  KILN_EXPECT_EQ(pick.warps_n * pick.tiles_n * 16, 128u);
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, 256, 3136, 264, 32, &pick));
  KILN_EXPECT_EQ(pick.warps_n * pick.tiles_n * 16, 256u);
  // 64 blocks of 128x64 (a half-filled GPU): the small ones.
  KILN_ASSERT_OK(kiln_kernel_coopmat_tiling_select_shape(&hopper, 512, 49, 4608, 16, &pick));
  KILN_EXPECT_EQ(memcmp(&pick, &small, sizeof(pick)), 0);
}

static uint64_t tiling_invocations(const kiln_kernel_gemm_tiling_t* t, uint64_t m, uint64_t n,
                                   uint64_t batch) {
  return kiln_kernel_gemm_tiling_blocks(t, m, n, batch) * t->wg_x * t->wg_y *
         kiln_kernel_gemm_tiling_ks(t);
}

// The occupancy-aware tiling (gemm_occupancy.c) on hopper: a product with
// few 64x64 blocks gets narrower blocks or a k split with more invocations
// at work (the target where the preferred candidates reach it); every pick
// fits the caps; products that already fill the GPU keep the small
// tiling; the picks the H100 sweep fitted; CPU, mobile and unknown arches
// are unchanged.
KILN_TEST(KernelTargetTest, OccupancyTilingPerShape) {
  const kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  kiln_kernel_gemm_tiling_t small, pick;
  KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select_small(&hopper, &small));
  KILN_ASSERT_TRUE(kiln_kernel_gemm_occupancy_enabled(&hopper));
  const uint64_t target = (uint64_t)KILN_GEMM_OCCUPANCY_INVOCATIONS_PER_UNIT *
                          kiln_kernel_gemm_compute_units("hopper");
  // m, n, k, batch: MobileNetV2's 7x7 and 14x14 1x1 convs, ResNet-50's
  // late 3x3 (k = 512 * 9) and early 1x1, EfficientNet's squeeze-excite
  // (n = 1), a big MatMul, a degenerate 1x1x1, a batch.
  static const uint64_t kShapes[][4] = {
      {320, 49, 960, 1},  {1280, 49, 320, 1}, {160, 49, 960, 1}, {96, 196, 576, 1},
      {512, 49, 4608, 1}, {256, 3136, 64, 1}, {1152, 1, 48, 1},  {4096, 4096, 4096, 1},
      {1, 1, 1, 1},       {64, 49, 2, 3}};
  for (size_t i = 0; i < sizeof(kShapes) / sizeof(kShapes[0]); ++i) {
    const uint64_t m = kShapes[i][0], n = kShapes[i][1], k = kShapes[i][2], b = kShapes[i][3];
    KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select_shape(&hopper, m, n, k, b, &pick));
    kiln_kernel_config_t config;
    memset(&config, 0, sizeof(config));
    KILN_EXPECT_OK(kiln_kernel_gemm_tiling_apply(&pick, &hopper, &config));
    const uint32_t ks = kiln_kernel_gemm_tiling_ks(&pick);
    KILN_EXPECT_GE(k, kiln_kernel_gemm_occupancy_min_k(ks));
    const uint64_t work = tiling_invocations(&pick, m, n, b);
    KILN_EXPECT_GE(work, tiling_invocations(&small, m, n, b));
    if (tiling_invocations(&small, m, n, b) >= target) {
      KILN_EXPECT_EQ(memcmp(&pick, &small, sizeof(pick)), 0);
    }
  }
  // The sweep's fastest tilings (block m x n, k slices, TK).
  static const struct {
    uint64_t m, n, k;
    uint32_t block_m, block_n, ks, tk;
  } kFitted[] = {
      {128, 768, 3072, 32, 32, 4, 16},  // BERT's second FFN layer
      {128, 2304, 768, 64, 64, 2, 8},   // BERT's QKV projection
      {1280, 49, 320, 32, 32, 4, 8},    // MobileNetV2's last 1x1 conv
      {320, 49, 960, 16, 32, 8, 8},     // MobileNetV2's 7x7 projection
      {64, 196, 384, 16, 32, 8, 8},     // MobileNetV2's 14x14 projection
      {48, 1, 1152, 16, 32, 8, 8},      // EfficientNet's squeeze-excite
      {197, 768, 768, 32, 64, 2, 16},   // ViT's output projection (rows 197: 32-row blocks)
      {197, 768, 3072, 32, 64, 2, 16},  // ViT's second FFN layer
      {197, 3072, 768, 32, 64, 1, 16},  // ViT's first FFN layer: 32-row blocks, k whole
      {24, 3136, 144, 64, 64, 2, 8},    // no k split avoids the row padding: unchanged
      {384, 196, 64, 32, 32, 4, 8},     // MobileNetV2's 14x14 expansion: 4 slices of 16 k
      {576, 196, 96, 32, 32, 4, 8},     // and its next: 4 slices of 24
      {1152, 49, 192, 32, 32, 4, 8},    // EfficientNet's 7x7 expansion: not 8 slices of 24
  };
  for (size_t i = 0; i < sizeof(kFitted) / sizeof(kFitted[0]); ++i) {
    KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select_shape(&hopper, kFitted[i].m, kFitted[i].n,
                                                        kFitted[i].k, 1, &pick));
    KILN_EXPECT_EQ(pick.wg_y * pick.tm, kFitted[i].block_m);
    KILN_EXPECT_EQ(pick.wg_x * pick.tn, kFitted[i].block_n);
    KILN_EXPECT_EQ(kiln_kernel_gemm_tiling_ks(&pick), kFitted[i].ks);
    KILN_EXPECT_EQ(pick.tk, kFitted[i].tk);
  }
  // The motivating case: 5 blocks of 64x64 on 132 SMs; the pick puts at
  // least 8x the invocations to work, by splitting k.
  KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select_shape(&hopper, 320, 49, 960, 1, &pick));
  KILN_EXPECT_GE(tiling_invocations(&pick, 320, 49, 1), 8 * tiling_invocations(&small, 320, 49, 1));
  KILN_EXPECT_GT(kiln_kernel_gemm_tiling_ks(&pick), 1u);
  // Through the config: the workgroup holds the k slices, the grid the
  // pick's blocks.
  kiln_kernel_config_t config;
  KILN_ASSERT_OK(kiln_kernel_config_select_shape(KILN_KERNEL_GEMM_SMALL, &hopper,
                                                 KILN_KERNEL_STORAGE_FP32, 320, 49, 960, 1,
                                                 false, &config));
  KILN_EXPECT_EQ(config.workgroup_size[1], pick.wg_y * kiln_kernel_gemm_tiling_ks(&pick));
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_KSPLIT, 1),
                 kiln_kernel_gemm_tiling_ks(&pick));
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_WORKGROUP_Y, 0),
                 config.workgroup_size[1]);
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = 320, p.n = 49, p.k = 960, p.batch = 1;
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
  KILN_EXPECT_EQ((uint64_t)grid[0] * grid[1] * grid[2],
                 kiln_kernel_gemm_tiling_blocks(&pick, 320, 49, 1));
  // Other arches keep their choice for every shape and kernel.
  const char* const kSame[] = {"cpu", "valhall", "adreno", "unknown", "m1"};
  for (size_t a = 0; a < sizeof(kSame) / sizeof(kSame[0]); ++a) {
    const kiln_kernel_arch_caps_t caps = caps_for(kSame[a]);
    KILN_EXPECT_FALSE(kiln_kernel_gemm_occupancy_enabled(&caps));
    KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select_small(&caps, &small));
    KILN_ASSERT_OK(kiln_kernel_gemm_tiling_select_shape(&caps, 320, 49, 960, 1, &pick));
    KILN_EXPECT_EQ(memcmp(&pick, &small, sizeof(pick)), 0);
    const kiln_kernel_id_t kernels[] = {KILN_KERNEL_GEMM_SMALL, KILN_KERNEL_CONV2D_GEMM};
    for (size_t j = 0; j < 2; ++j) {
      kiln_kernel_config_t plain, shaped;
      KILN_ASSERT_OK(kiln_kernel_config_select(kernels[j], &caps, KILN_KERNEL_STORAGE_FP32, &plain));
      KILN_ASSERT_OK(kiln_kernel_config_select_shape(kernels[j], &caps, KILN_KERNEL_STORAGE_FP32,
                                                     320, 49, 960, 1, false, &shaped));
      KILN_EXPECT_EQ(memcmp(&plain, &shaped, sizeof(plain)), 0);
    }
  }
}

// The tiled gemm on targets that tile per product: 64-row blocks where
// 128-row ones pad m by more than 15% (the grid follows), 128 elsewhere;
// other arches keep the table's tiling.
KILN_TEST(KernelTargetTest, GemmHalvesItsRowsForShortM) {
  const kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  kiln_kernel_config_t plain;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &hopper, KILN_KERNEL_STORAGE_FP32,
                                           &plain));
  const struct {
    uint32_t m, rows;
  } kCases[] = {{64, 64}, {40, 64}, {128, 128}, {256, 128}, {192, 64}, {100, 128}};
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select_shape(KILN_KERNEL_GEMM, &hopper,
                                                   KILN_KERNEL_STORAGE_FP32, kCases[i].m, 25088,
                                                   64, 16, false, &config));
    const uint32_t tm = kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_TM, 0);
    KILN_EXPECT_EQ(config.workgroup_size[1] * tm, kCases[i].rows);
    KILN_EXPECT_EQ(config.workgroup_size[0] * kiln_kernel_config_spec(&config, KILN_SPEC_GEMM_TN, 0),
                   128u);
    KILN_EXPECT_EQ(kiln_kernel_config_spec(&config, KILN_SPEC_WORKGROUP_Y, 0),
                   config.workgroup_size[1]);
    if (kCases[i].rows == 128) KILN_EXPECT_EQ(memcmp(&plain, &config, sizeof(plain)), 0);
    kiln_kernel_gemm_params_t p;
    memset(&p, 0, sizeof(p));
    p.m = kCases[i].m, p.n = 25088, p.k = 64, p.batch = 16;
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_gemm(&config, &p, grid));
    KILN_EXPECT_EQ(grid[1], (kCases[i].m + kCases[i].rows - 1) / kCases[i].rows);
  }
  const kiln_kernel_arch_caps_t valhall = caps_for("valhall");
  kiln_kernel_config_t mobile_plain, mobile;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM, &valhall, KILN_KERNEL_STORAGE_FP32,
                                           &mobile_plain));
  KILN_ASSERT_OK(kiln_kernel_config_select_shape(KILN_KERNEL_GEMM, &valhall,
                                                 KILN_KERNEL_STORAGE_FP32, 64, 25088, 64, 16,
                                                 false, &mobile));
  KILN_EXPECT_EQ(memcmp(&mobile_plain, &mobile, sizeof(mobile)), 0);
}

// gemv with a short k (split-K's sum of parts) on targets that tile per
// product: one k slice, its lanes all on column quads, and the grid
// follows (a longer k: GemvLongKFillsTheUnits); other arches keep gemv's
// k slices.
KILN_TEST(KernelTargetTest, GemvShortKTakesOneSlice) {
  const kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  kiln_kernel_config_t plain, shaped;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMV, &hopper, KILN_KERNEL_STORAGE_FP16,
                                           &plain));
  KILN_EXPECT_GT(plain.workgroup_size[1], 1u);
  // BERT-base's sum: 128 rows of 768 columns, 6 parts.
  KILN_ASSERT_OK(kiln_kernel_config_select_shape(KILN_KERNEL_GEMV, &hopper,
                                                 KILN_KERNEL_STORAGE_FP16, 1, 768, 6, 128,
                                                 false, &shaped));
  KILN_EXPECT_EQ(shaped.workgroup_size[0], KILN_GEMV_SHORT_K_LANES);
  KILN_EXPECT_EQ(shaped.workgroup_size[1], 1u);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&shaped, KILN_SPEC_WORKGROUP_X, 0),
                 KILN_GEMV_SHORT_K_LANES);
  KILN_EXPECT_EQ(kiln_kernel_config_spec(&shaped, KILN_SPEC_WORKGROUP_Y, 0), 1u);
  KILN_EXPECT_LE(shaped.shared_memory_bytes, hopper.max_shared_memory_bytes);
  kiln_kernel_gemm_params_t p;
  memset(&p, 0, sizeof(p));
  p.m = 1, p.n = 768, p.k = 6, p.batch = 128;
  uint32_t grid[3];
  KILN_ASSERT_OK(kiln_kernel_grid_gemm(&shaped, &p, grid));
  KILN_EXPECT_EQ(grid[0], 768u / (4u * KILN_GEMV_SHORT_K_LANES));
  KILN_EXPECT_EQ(grid[2], 128u);
  // A target that keeps one tiling: gemv's own.
  const kiln_kernel_arch_caps_t valhall = caps_for("valhall");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMV, &valhall, KILN_KERNEL_STORAGE_FP32,
                                           &plain));
  KILN_ASSERT_OK(kiln_kernel_config_select_shape(KILN_KERNEL_GEMV, &valhall,
                                                 KILN_KERNEL_STORAGE_FP32, 1, 768, 6, 128,
                                                 false, &shaped));
  KILN_EXPECT_EQ(memcmp(&plain, &shaped, sizeof(plain)), 0);
}

// gemv with a longer k on targets that tile per product: k slices for
// the steps k has (quads along k for a [n][k] B), the rest of the
// workgroup on column quads, fewer quads until the grid covers the units
// (at least four quads along n); other arches keep gemv's own.
KILN_TEST(KernelTargetTest, GemvLongKFillsTheUnits) {
  const kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  const uint64_t units = kiln_kernel_gemm_compute_units("hopper");
  kiln_kernel_config_t plain;
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMV, &hopper, KILN_KERNEL_STORAGE_FP16,
                                           &plain));
  const uint32_t threads = plain.workgroup_size[0] * plain.workgroup_size[1];
  static const struct {
    uint32_t n, k;
    bool along_k;
    uint32_t quads, slices;
  } kCases[] = {
      {1000, 2048, true, 1, 256},  // ResNet-50's classifier: 250 workgroups
      {48, 1152, true, 1, 256},    // a squeeze: 12 workgroups, as few as it has
      {1152, 48, true, 2, 16},     // its excitation: 12 k quads, 144 workgroups
      {1000, 2048, false, 4, 64},  // [k][n]: four quads at least
      {4096, 4096, false, 4, 64},
  };
  for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); ++i) {
    kiln_kernel_config_t shaped;
    KILN_ASSERT_OK(kiln_kernel_config_select_shape(KILN_KERNEL_GEMV, &hopper,
                                                   KILN_KERNEL_STORAGE_FP16, 1, kCases[i].n,
                                                   kCases[i].k, 1, kCases[i].along_k, &shaped));
    KILN_EXPECT_EQ(shaped.workgroup_size[0], kCases[i].quads);
    KILN_EXPECT_EQ(shaped.workgroup_size[1], kCases[i].slices);
    KILN_EXPECT_LE(shaped.workgroup_size[0] * shaped.workgroup_size[1], threads);
    KILN_EXPECT_EQ(shaped.shared_memory_bytes,
                   16u * shaped.workgroup_size[0] * shaped.workgroup_size[1]);
    KILN_EXPECT_EQ(kiln_kernel_config_spec(&shaped, KILN_SPEC_WORKGROUP_X, 0), kCases[i].quads);
    KILN_EXPECT_EQ(kiln_kernel_config_spec(&shaped, KILN_SPEC_WORKGROUP_Y, 0), kCases[i].slices);
    kiln_kernel_gemm_params_t p;
    memset(&p, 0, sizeof(p));
    p.m = 1, p.n = kCases[i].n, p.k = kCases[i].k, p.batch = 1;
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_gemm(&shaped, &p, grid));
    KILN_EXPECT_EQ(grid[0], (kCases[i].n + 4 * kCases[i].quads - 1) / (4 * kCases[i].quads));
    if (kCases[i].quads > (kCases[i].along_k ? 1u : 4u)) KILN_EXPECT_GE(grid[0], units);
  }
  const kiln_kernel_arch_caps_t valhall = caps_for("valhall");
  KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMV, &valhall, KILN_KERNEL_STORAGE_FP32,
                                           &plain));
  kiln_kernel_config_t mobile;
  KILN_ASSERT_OK(kiln_kernel_config_select_shape(KILN_KERNEL_GEMV, &valhall,
                                                 KILN_KERNEL_STORAGE_FP32, 1, 1000, 2048, 1,
                                                 true, &mobile));
  KILN_EXPECT_EQ(memcmp(&plain, &mobile, sizeof(plain)), 0);
}

// gemm_coopmat's k split on hopper (132 units): the parts whose modelled
// time plus their sum's beats the whole product's (coopmat_tuning.c).
KILN_TEST(KernelTargetTest, CoopmatSplitKParts) {
  const kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  KILN_ASSERT_EQ(kiln_kernel_gemm_compute_units("hopper"), 132u);
  // BERT-base: FFN down (24 blocks of 64x64, k 3072) in 12 parts of 256,
  // attention's out-projection and QKV (k 768) in 3.
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 128, 768, 3072, 1), 12u);
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 128, 768, 768, 1), 3u);
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 128, 2304, 768, 1), 3u);
  // FFN up (96 blocks), which the model keeps whole, in the two parts
  // that products leaving units idle take at least (ran faster so on the
  // H200, coopmat_tuning.c); not where a half would be shorter than
  // KILN_GEMM_SPLIT_K_MIN_K or not whole runs of 8.
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 128, 3072, 768, 1), 2u);
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 128, 3072, KILN_GEMM_SPLIT_K_MIN_K, 1),
                 1u);
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 128, 3072, 2 * 260, 1), 1u);
  // A product whose blocks fill the GPU never splits (1024 x 1088 in
  // 128x256 blocks: 40 of 132 SMs, so it does). k with no equal parts of
  // at least 256: none.
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 4096, 4096, 4096, 1), 1u);
  KILN_EXPECT_GT(kiln_kernel_coopmat_split_k_parts(&hopper, 1024, 1088, 3072, 1), 1u);
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&hopper, 128, 768, 511, 1), 1u);
  // Arches without a unit count never split.
  const kiln_kernel_arch_caps_t unknown = caps_for("unknown");
  KILN_EXPECT_EQ(kiln_kernel_coopmat_split_k_parts(&unknown, 128, 768, 3072, 1), 1u);
}

// attention_coopmat: fp16 storage only, on archs with cooperative matrix
// (others refuse it by name, so the lowering keeps attention); one build
// per head-dim capacity, chosen by KILN_SPEC_ATTN_DIM4; 16 query rows per
// workgroup and every key in one dispatch.
KILN_TEST(KernelTargetTest, AttentionCoopmatBuilds) {
  for (size_t i = 0; i < kiln_target_arch_count(); ++i) {
    const char* arch = kiln_target_arch_at(i)->name;
    kiln_kernel_arch_caps_t caps = caps_for(arch);
    kiln_kernel_config_t config;
    kiln_status_t status = kiln_kernel_config_select(KILN_KERNEL_ATTENTION_COOPMAT, &caps,
                                                     KILN_KERNEL_STORAGE_FP16, &config);
    if (!caps.fp16_storage) {
      KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "16-bit storage", status);
      continue;
    }
    if (!caps.cooperative_matrix) {
      KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "cooperative matrix", status);
      continue;
    }
    KILN_ASSERT_OK(status);
    KILN_EXPECT_EQ(config.workgroup_size[0], KILN_ATTN_COOPMAT_THREADS);
    KILN_EXPECT_LE(config.shared_memory_bytes, caps.max_shared_memory_bytes);
    KILN_EXPECT_TRUE(config.required_features & KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX);
    const uint32_t dims[] = {KILN_ATTN_COOPMAT_DIM_SMALL, KILN_ATTN_COOPMAT_DIM_MAX};
    for (size_t d = 0; d < 2; ++d) {
      KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_ATTN_DIM4, dims[d] / 4));
      kiln_kernel_spirv_t spirv;
      KILN_ASSERT_OK(kiln_kernel_get_config_spirv(&config, &spirv));
      KILN_EXPECT_STREQ(spirv.blob_name,
                        d ? "attention_coopmat_d128_f16" : "attention_coopmat_f16");
    }
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_ATTN_DIM4, 8));
    kiln_kernel_spirv_t spirv;
    KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_NOT_FOUND, "no build for head dims up to 32",
                               kiln_kernel_get_config_spirv(&config, &spirv));
    kiln_kernel_attention_params_t p;
    memset(&p, 0, sizeof(p));
    p.batch = 2, p.heads = 12, p.sq = 197, p.sk = 197, p.d = p.dv = 64, p.chunks = 1;
    uint32_t grid[3];
    KILN_ASSERT_OK(kiln_kernel_grid_attention(&config, &p, false, grid));
    KILN_EXPECT_EQ(grid[0], 13u);  // ceil(197 / 16)
    KILN_EXPECT_EQ(grid[1], 12u);
    KILN_EXPECT_EQ(grid[2], 2u);
  }
  kiln_kernel_arch_caps_t hopper = caps_for("hopper");
  kiln_kernel_config_t config;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_UNIMPLEMENTED, "no fp32 variant",
                             kiln_kernel_config_select(KILN_KERNEL_ATTENTION_COOPMAT, &hopper,
                                                       KILN_KERNEL_STORAGE_FP32, &config));
}
