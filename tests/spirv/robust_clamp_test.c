// The HAL's local index clamp (hal/spirv_clamp_local.c) over every kernel
// build of the library: each takes the local path (no fallback to the full
// pass), the rewrite validates, kernels with workgroup arrays get clamps,
// and storage-buffer accesses are left to the device (no OpArrayLength is
// added, unlike SPIRV-Tools' pass, which the no-robustness device still
// gets). The clamps' run-time effect is tested on a device by
// KernelInterfaceTest.OutOfBoundsSharedIndexRunsSafely.
#include <stdlib.h>
#include <string.h>

#include "hal_internal.h"
#include "kiln/compiler/kernels.h"
#include "kiln/compiler/kernels_target.h"
#include "kiln/compiler/kernels_gemm_tuning.h"
#include "kiln_test.h"

enum { kOpExtInst = 12, kOpArrayLength = 68, kOpVariable = 59, kStorageWorkgroup = 4 };

static size_t count_opcode(const uint32_t* words, size_t count, uint32_t opcode) {
  size_t n = 0;
  for (size_t at = 5; at < count && (words[at] >> 16); at += words[at] >> 16) {
    if ((words[at] & 0xffff) == opcode) ++n;
  }
  return n;
}

static bool has_workgroup_variable(const uint32_t* words, size_t count) {
  for (size_t at = 5; at < count && (words[at] >> 16); at += words[at] >> 16) {
    if ((words[at] & 0xffff) == kOpVariable && words[at + 3] == kStorageWorkgroup) return true;
  }
  return false;
}

static void device_info(kiln_hal_device_info_t* info, bool robust) {
  memset(info, 0, sizeof(*info));
  strcpy(info->name, "test device");
  info->api_major = 1;
  info->api_minor = 1;
  info->robust_buffer_access = robust;
}

KILN_TEST(RobustClampTest, EveryLibraryKernelTakesTheLocalClamp) {
  kiln_hal_device_info_t info;
  device_info(&info, true);
  kiln_allocator_t allocator = kiln_allocator_system();
  size_t builds = 0, with_shared = 0;
  for (unsigned id = 0; id < KILN_KERNEL_COUNT; ++id) {
    for (unsigned v = 0; v < KILN_KERNEL_VARIANT_COUNT; ++v) {
      kiln_kernel_spirv_t spirv;
      kiln_status_t status =
          kiln_kernel_get_spirv((kiln_kernel_id_t)id, (kiln_kernel_variant_t)v, &spirv);
      if (status) {
        kiln_status_free(status);
        continue;
      }
      ++builds;
      uint32_t* out = NULL;
      size_t out_count = 0;
      KILN_ASSERT_OK(kiln_hal_spirv_clamp_local(&info, allocator, spirv.words,
                                                spirv.word_count, &out, &out_count));
      KILN_EXPECT_OK(kiln_hal_spirv_validate(&info, spirv.blob_name, v, out, out_count));
      KILN_EXPECT_EQ(count_opcode(out, out_count, kOpArrayLength),
                     count_opcode(spirv.words, spirv.word_count, kOpArrayLength));
      if (has_workgroup_variable(spirv.words, spirv.word_count)) {
        ++with_shared;
        KILN_EXPECT_GT(count_opcode(out, out_count, kOpExtInst),
                       count_opcode(spirv.words, spirv.word_count, kOpExtInst));
      }
      kiln_allocator_free(allocator, out);
    }
  }
  KILN_EXPECT_GT(builds, 20);
  KILN_EXPECT_GT(with_shared, 3);  // gemm, conv, reductions use workgroup tiles
}

KILN_TEST(RobustClampTest, DeviceWithoutRobustBuffersGetsTheFullPass) {
  kiln_hal_device_info_t info;
  device_info(&info, false);
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_spirv(KILN_KERNEL_GEMM, KILN_KERNEL_VARIANT_FP32, &spirv));
  uint32_t* out = NULL;
  size_t out_count = 0;
  KILN_ASSERT_OK(kiln_hal_spirv_make_robust(&info, "gemm", 0, kiln_allocator_system(),
                                            spirv.words, spirv.word_count, &out, &out_count));
  // The full pass bounds runtime-array buffer indices with OpArrayLength.
  KILN_EXPECT_GT(count_opcode(out, out_count, kOpArrayLength),
                 count_opcode(spirv.words, spirv.word_count, kOpArrayLength));
  kiln_allocator_free(kiln_allocator_system(), out);
}

KILN_TEST(RobustClampTest, MalformedInputIsLeftToTheFullPass) {
  kiln_hal_device_info_t info;
  device_info(&info, true);
  uint32_t header_only[5] = {0x07230203, 0x00010300, 0, 0, 0};
  uint32_t* out = NULL;
  size_t out_count = 0;
  KILN_EXPECT_STATUS(KILN_STATUS_UNIMPLEMENTED,
                     kiln_hal_spirv_clamp_local(&info, kiln_allocator_system(), header_only, 5,
                                                &out, &out_count));
  header_only[3] = 0xffffffffu;  // an id bound past the tables' cap
  KILN_EXPECT_STATUS(KILN_STATUS_UNIMPLEMENTED,
                     kiln_hal_spirv_clamp_local(&info, kiln_allocator_system(), header_only, 5,
                                                &out, &out_count));
  KILN_EXPECT_TRUE(out == NULL);
}

enum { kOpIMul = 132, kOpCooperativeMatrixLoadNV = 5359, kOpCooperativeMatrixStoreNV = 5360 };

// gemm_coopmat's cooperative-matrix loads and stores (workgroup memory)
// each get their extent clamp (an OpIMul of stride by rows - 1, see
// spirv_clamp_local.c) and the rewrite validates.
KILN_TEST(RobustClampTest, CooperativeMatrixAccessesAreBoundedByExtent) {
  kiln_hal_device_info_t info;
  device_info(&info, true);
  kiln_allocator_t allocator = kiln_allocator_system();
  const kiln_kernel_variant_t variants[] = {KILN_KERNEL_VARIANT_FP32,
                                            KILN_KERNEL_VARIANT_FP16_STORAGE};
  // Every build: each tiling and both storages.
  for (size_t b = 0; b < 2 * kiln_kernel_coopmat_candidate_count(); ++b) {
    kiln_kernel_config_t config;
    memset(&config, 0, sizeof(config));
    config.kernel = KILN_KERNEL_GEMM_COOPMAT;
    config.variant = variants[b % 2];
    const kiln_kernel_coopmat_tiling_t* t = kiln_kernel_coopmat_candidate(b / 2);
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_WARPS_M, t->warps_m));
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_WARPS_N, t->warps_n));
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_TILES_M, t->tiles_m));
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_TILES_N, t->tiles_n));
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_COOPMAT_BK, t->bk));
    kiln_kernel_spirv_t spirv;
    KILN_ASSERT_OK(kiln_kernel_get_config_spirv(&config, &spirv));
    KILN_EXPECT_TRUE(kiln_hal_spirv_uses_cooperative_matrix(spirv.words, spirv.word_count));
    size_t accesses = count_opcode(spirv.words, spirv.word_count, kOpCooperativeMatrixLoadNV) +
                      count_opcode(spirv.words, spirv.word_count, kOpCooperativeMatrixStoreNV);
    KILN_EXPECT_GE(accesses, 3);  // A, B (two layouts) loads and the C store
    uint32_t* out = NULL;
    size_t out_count = 0;
    KILN_ASSERT_OK(kiln_hal_spirv_make_robust(&info, spirv.blob_name, 0, allocator, spirv.words,
                                              spirv.word_count, &out, &out_count));
    KILN_EXPECT_EQ(count_opcode(out, out_count, kOpIMul),
                   count_opcode(spirv.words, spirv.word_count, kOpIMul) + accesses);
    KILN_EXPECT_OK(kiln_hal_spirv_validate(&info, spirv.blob_name, 0, out, out_count));
    kiln_allocator_free(allocator, out);
  }
}

// The full pass knows nothing of cooperative-matrix accesses: a device
// without robustBufferAccess refuses such a kernel, by name.
KILN_TEST(RobustClampTest, CooperativeMatrixNeedsRobustBufferAccess) {
  kiln_hal_device_info_t info;
  device_info(&info, false);
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_spirv(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP32, &spirv));
  uint32_t* out = NULL;
  size_t out_count = 0;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_FAILED_PRECONDITION, "cooperative matrix",
      kiln_hal_spirv_make_robust(&info, "gemm_coopmat", 0, kiln_allocator_system(), spirv.words,
                                 spirv.word_count, &out, &out_count));
  KILN_EXPECT_TRUE(out == NULL);
}

// Forms the extent clamp cannot bound are refused, not passed on: a layout
// operand that is not a constant, and a load straight from a buffer on a
// device without cooperativeMatrixRobustBufferAccess (the load's pointer
// swapped for a storage-buffer one of the same module).
KILN_TEST(RobustClampTest, UnboundableCooperativeMatrixFormsAreRefused) {
  kiln_hal_device_info_t info;
  device_info(&info, true);
  kiln_kernel_spirv_t spirv;
  KILN_ASSERT_OK(kiln_kernel_get_spirv(KILN_KERNEL_GEMM_COOPMAT, KILN_KERNEL_VARIANT_FP32, &spirv));
  uint32_t* words = malloc(spirv.word_count * sizeof(uint32_t));
  KILN_ASSERT_TRUE(words != NULL);
  size_t load_at = 0;
  for (size_t at = 5; at < spirv.word_count && (spirv.words[at] >> 16); at += spirv.words[at] >> 16) {
    if ((spirv.words[at] & 0xffff) == kOpCooperativeMatrixLoadNV) {
      load_at = at;
      break;
    }
  }
  KILN_ASSERT_GT(load_at, 0);
  memcpy(words, spirv.words, spirv.word_count * sizeof(uint32_t));
  words[load_at + 5] = words[load_at + 4];  // column-major := the stride id
  uint32_t* out = NULL;
  size_t out_count = 0;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "cooperative-matrix",
                             kiln_hal_spirv_make_robust(&info, "bad", 0, kiln_allocator_system(),
                                                        words, spirv.word_count, &out,
                                                        &out_count));
  // A pointer into a storage buffer: any access chain of one (the A vec4s).
  enum { kOpAccessChain = 65, kOpTypePointer = 32, kStorageStorageBuffer = 12 };
  uint32_t buffer_chain = 0;
  for (size_t at = 5; at < spirv.word_count && (spirv.words[at] >> 16) && !buffer_chain;
       at += spirv.words[at] >> 16) {
    if ((spirv.words[at] & 0xffff) != kOpAccessChain) continue;
    uint32_t type = spirv.words[at + 1];
    for (size_t t = 5; t < spirv.word_count && (spirv.words[t] >> 16); t += spirv.words[t] >> 16) {
      if ((spirv.words[t] & 0xffff) == kOpTypePointer && spirv.words[t + 1] == type &&
          spirv.words[t + 2] == kStorageStorageBuffer) {
        buffer_chain = spirv.words[at + 2];
        break;
      }
    }
  }
  KILN_ASSERT_GT(buffer_chain, 0);
  memcpy(words, spirv.words, spirv.word_count * sizeof(uint32_t));
  words[load_at + 3] = buffer_chain;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "cooperativeMatrixRobustBufferAccess",
                             kiln_hal_spirv_make_robust(&info, "bad", 0, kiln_allocator_system(),
                                                        words, spirv.word_count, &out,
                                                        &out_count));
  free(words);
}

// An H200-like device description: Vulkan 1.3, subgroups of 32, 48 KiB of
// shared memory, cooperative matrix and fp16.
static void h200_like_info(kiln_hal_device_info_t* info) {
  device_info(info, true);
  info->api_minor = 3;
  info->limits.subgroup_size = 32;
  info->limits.max_workgroup_invocations = 1024;
  info->limits.max_shared_memory_bytes = 48 * 1024;
  info->limits.max_push_constant_bytes = 256;
  info->features = KILN_TARGET_FEATURE_COOPERATIVE_MATRIX | KILN_TARGET_FEATURE_FP16 |
                   KILN_TARGET_FEATURE_STORAGE_16BIT;
  for (uint32_t i = 0; i < 3; ++i) info->max_workgroup_size[i] = 1024;
}

// What the runtime does to gemm_coopmat before a driver sees it, on an
// H200-like device description (no device needed): validation for Vulkan
// 1.3, the interface check (bindings, push constants, specialized
// workgroup size, shared memory within 48 KiB), then the robust rewrite.
KILN_TEST(RobustClampTest, CoopmatPassesTheLoaderChecks) {
  kiln_hal_device_info_t info;
  h200_like_info(&info);
  kiln_kernel_arch_caps_t hopper;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("hopper", &hopper));
  const kiln_kernel_storage_t storages[] = {KILN_KERNEL_STORAGE_FP32, KILN_KERNEL_STORAGE_FP16};
  for (size_t s = 0; s < 2; ++s) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_GEMM_COOPMAT, &hopper, storages[s],
                                             &config));
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_GEMM_HAS_BIAS, 1));
    kiln_kernel_spirv_t spirv;
    KILN_ASSERT_OK(kiln_kernel_get_spirv(KILN_KERNEL_GEMM_COOPMAT, config.variant, &spirv));
    kiln_hal_binding_layout_t bindings[5];
    for (uint32_t b = 0; b < 5; ++b) {
      bindings[b] = (kiln_hal_binding_layout_t){0, b, b < 4, KILN_HAL_BINDING_STORAGE_BUFFER};
    }
    kiln_hal_specialization_constant_t constants[KILN_KERNEL_MAX_SPEC_VALUES];
    for (size_t i = 0; i < config.spec_count; ++i) {
      constants[i] = (kiln_hal_specialization_constant_t){config.spec[i].id, config.spec[i].value};
    }
    kiln_hal_entry_point_spec_t entry = {
        "main", {config.workgroup_size[0], 1, 1}, sizeof(kiln_kernel_gemm_params_t), bindings, 5,
        0};
    kiln_target_limits_t limits = {0, config.workgroup_size[0], config.shared_memory_bytes,
                                   sizeof(kiln_kernel_gemm_params_t), 0};
    kiln_hal_executable_variant_spec_t variant = {
        "hopper", info.features, limits, spirv.words, spirv.word_count, &entry, 1,
        constants, (uint32_t)config.spec_count};
    kiln_hal_executable_spec_t spec = {"gemm_coopmat", &variant, 1};
    KILN_EXPECT_OK(kiln_hal_executable_check_variant(&info, &spec, 0, kiln_allocator_system()));
    uint32_t* out = NULL;
    size_t out_count = 0;
    KILN_EXPECT_OK(kiln_hal_spirv_make_robust(&info, spirv.blob_name, 0, kiln_allocator_system(),
                                              spirv.words, spirv.word_count, &out, &out_count));
    kiln_allocator_free(kiln_allocator_system(), out);
  }
}

// attention_coopmat (both head-dim builds) through the loader's checks on
// an H200-like description, like gemm_coopmat above. Its rescale stores a
// tile and loads it back from one address, which the optimizer turns into
// one pointer: the clamp takes that sharing (one chain clamp for accesses
// of one shape, layout and stride) and refuses it once their strides differ.
KILN_TEST(RobustClampTest, AttentionCoopmatPassesTheLoaderChecks) {
  kiln_hal_device_info_t info;
  h200_like_info(&info);
  kiln_kernel_arch_caps_t hopper;
  KILN_ASSERT_OK(kiln_kernel_arch_caps_for_arch("hopper", &hopper));
  const uint32_t dims[] = {KILN_ATTN_COOPMAT_DIM_SMALL, KILN_ATTN_COOPMAT_DIM_MAX};
  for (size_t d = 0; d < 2; ++d) {
    kiln_kernel_config_t config;
    KILN_ASSERT_OK(kiln_kernel_config_select(KILN_KERNEL_ATTENTION_COOPMAT, &hopper,
                                             KILN_KERNEL_STORAGE_FP16, &config));
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_ATTN_DIM4, dims[d] / 4));
    KILN_ASSERT_OK(kiln_kernel_config_set_spec(&config, KILN_SPEC_ATTN_MASK, KILN_ATTN_MASK_ADD));
    kiln_kernel_spirv_t spirv;
    KILN_ASSERT_OK(kiln_kernel_get_config_spirv(&config, &spirv));
    KILN_EXPECT_STREQ(spirv.blob_name, d ? "attention_coopmat_d128_f16" : "attention_coopmat_f16");
    kiln_hal_binding_layout_t bindings[5];
    for (uint32_t b = 0; b < 5; ++b) {
      bindings[b] = (kiln_hal_binding_layout_t){0, b, b < 4, KILN_HAL_BINDING_STORAGE_BUFFER};
    }
    kiln_hal_specialization_constant_t constants[KILN_KERNEL_MAX_SPEC_VALUES];
    for (size_t i = 0; i < config.spec_count; ++i) {
      constants[i] = (kiln_hal_specialization_constant_t){config.spec[i].id, config.spec[i].value};
    }
    kiln_hal_entry_point_spec_t entry = {"main", {config.workgroup_size[0], 1, 1},
                                         sizeof(kiln_kernel_attention_params_t), bindings, 5, 0};
    kiln_target_limits_t limits = {0, config.workgroup_size[0], config.shared_memory_bytes,
                                   sizeof(kiln_kernel_attention_params_t), 0};
    kiln_hal_executable_variant_spec_t variant = {
        "hopper", info.features, limits, spirv.words, spirv.word_count, &entry, 1,
        constants, (uint32_t)config.spec_count};
    kiln_hal_executable_spec_t spec = {"attention_coopmat", &variant, 1};
    KILN_EXPECT_OK(kiln_hal_executable_check_variant(&info, &spec, 0, kiln_allocator_system()));
    uint32_t* out = NULL;
    size_t out_count = 0;
    KILN_ASSERT_OK(kiln_hal_spirv_make_robust(&info, spirv.blob_name, 0, kiln_allocator_system(),
                                              spirv.words, spirv.word_count, &out, &out_count));
    KILN_EXPECT_OK(kiln_hal_spirv_validate(&info, spirv.blob_name, 0, out, out_count));
    // One extent clamp per distinct pointer; fewer than the accesses, as
    // some pointers are shared.
    size_t accesses = 0, shared_first = 0, shared_second = 0, other_stride = 0;
    size_t ops[256];
    for (size_t at = 5; at < spirv.word_count && (spirv.words[at] >> 16);
         at += spirv.words[at] >> 16) {
      const uint32_t opcode = spirv.words[at] & 0xffff;
      if (opcode != kOpCooperativeMatrixLoadNV && opcode != kOpCooperativeMatrixStoreNV) continue;
      KILN_ASSERT_LT(accesses, 256);
      ops[accesses++] = at;
    }
    const uint32_t* w = spirv.words;
#define POINTER(at) (w[at] & 0xffff) == kOpCooperativeMatrixLoadNV ? w[(at) + 3] : w[(at) + 1]
#define STRIDE_AT(at) ((w[at] & 0xffff) == kOpCooperativeMatrixLoadNV ? (at) + 4 : (at) + 3)
    for (size_t i = 0; i < accesses && !shared_second; ++i) {
      for (size_t j = i + 1; j < accesses; ++j) {
        if ((POINTER(ops[i])) == (POINTER(ops[j]))) {
          shared_first = ops[i], shared_second = ops[j];
          break;
        }
      }
    }
    KILN_ASSERT_GT(shared_second, 0);
    for (size_t i = 0; i < accesses; ++i) {
      if (w[STRIDE_AT(ops[i])] != w[STRIDE_AT(shared_first)]) other_stride = ops[i];
    }
    KILN_ASSERT_GT(other_stride, 0);
    size_t added = count_opcode(out, out_count, kOpIMul) - count_opcode(w, spirv.word_count, kOpIMul);
    KILN_EXPECT_GE(added, 1);
    KILN_EXPECT_LT(added, accesses);
    kiln_allocator_free(kiln_allocator_system(), out);
    uint32_t* words = malloc(spirv.word_count * sizeof(uint32_t));
    KILN_ASSERT_TRUE(words != NULL);
    memcpy(words, w, spirv.word_count * sizeof(uint32_t));
    words[STRIDE_AT(shared_second)] = w[STRIDE_AT(other_stride)];
    out = NULL;
    KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "different shapes, layouts or strides",
                               kiln_hal_spirv_make_robust(&info, "bad", 0, kiln_allocator_system(),
                                                          words, spirv.word_count, &out,
                                                          &out_count));
    KILN_EXPECT_TRUE(out == NULL);
    free(words);
#undef POINTER
#undef STRIDE_AT
  }
}
