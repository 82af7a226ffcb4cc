// kiln_spirv_validate: real kernels pass, corrupt or mistargeted SPIR-V is
// rejected with a status naming the kernel and the validator's finding.
#include <stdlib.h>
#include <string.h>

#include "fixture_util.h"
#include "kiln/compiler/kernels.h"
#include "kiln/compiler/spirv.h"
#include "kiln_test.h"

static kiln_kernel_spirv_t gemm_spirv(void) {
  kiln_kernel_spirv_t spirv;
  kiln_status_ignore(kiln_kernel_get_spirv(KILN_KERNEL_GEMM,
                                           KILN_KERNEL_VARIANT_FP32, &spirv));
  return spirv;
}

KILN_TEST(SpirvValidateTest, LibraryKernelPassesBothEnvs) {
  kiln_kernel_spirv_t spirv = gemm_spirv();
  KILN_ASSERT_TRUE(spirv.words != NULL);
  KILN_EXPECT_OK(kiln_spirv_validate("gemm", spirv.words, spirv.word_count,
                                     KILN_SPIRV_TARGET_VULKAN_1_1));
  KILN_EXPECT_OK(kiln_spirv_validate("gemm", spirv.words, spirv.word_count,
                                     KILN_SPIRV_TARGET_VULKAN_1_3));
}

KILN_TEST(SpirvValidateTest, EmptyAndTinyInputsAreRejected) {
  uint32_t header[4] = {0x07230203u, 0x00010300u, 0, 0};
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "kernel 'empty'",
      kiln_spirv_validate("empty", NULL, 0, KILN_SPIRV_TARGET_VULKAN_1_1));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "shorter than its 5-word header",
      kiln_spirv_validate("tiny", header, 4, KILN_SPIRV_TARGET_VULKAN_1_1));
}

KILN_TEST(SpirvValidateTest, BadMagicIsRejected) {
  kiln_kernel_spirv_t spirv = gemm_spirv();
  uint32_t* copy = malloc(spirv.word_count * 4);
  KILN_ASSERT_TRUE(copy != NULL);
  memcpy(copy, spirv.words, spirv.word_count * 4);
  copy[0] = 0xdeadbeefu;
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "kernel 'bad_magic': SPIR-V failed vulkan1.1",
      kiln_spirv_validate("bad_magic", copy, spirv.word_count,
                          KILN_SPIRV_TARGET_VULKAN_1_1));
  free(copy);
}

KILN_TEST(SpirvValidateTest, TruncatedModuleIsRejected) {
  kiln_kernel_spirv_t spirv = gemm_spirv();
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "kernel 'truncated'",
      kiln_spirv_validate("truncated", spirv.words, spirv.word_count / 2,
                          KILN_SPIRV_TARGET_VULKAN_1_1));
}

KILN_TEST(SpirvValidateTest, CorruptInstructionIsRejected) {
  kiln_kernel_spirv_t spirv = gemm_spirv();
  uint32_t* copy = malloc(spirv.word_count * 4);
  KILN_ASSERT_TRUE(copy != NULL);
  memcpy(copy, spirv.words, spirv.word_count * 4);
  // Word 5 starts the first instruction (OpCapability): give it a word
  // count that runs past the end of the module.
  copy[5] = (0xffffu << 16) | (copy[5] & 0xffffu);
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_spirv_validate("corrupt", copy, spirv.word_count,
                                         KILN_SPIRV_TARGET_VULKAN_1_1));
  // An undefined id in the id-bound slot makes every id out of range.
  memcpy(copy, spirv.words, spirv.word_count * 4);
  copy[3] = 1;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "kernel 'bound'",
                             kiln_spirv_validate("bound", copy, spirv.word_count,
                                                 KILN_SPIRV_TARGET_VULKAN_1_1));
  free(copy);
}

KILN_TEST(SpirvValidateTest, Vulkan13ModuleFailsVulkan11Rules) {
  kiln_file_contents_t contents;
  const uint32_t* words = NULL;
  size_t count = 0;
  KILN_ASSERT_OK(kiln_test_load_fixture("fixture_vulkan13", &contents, &words, &count));
  KILN_EXPECT_OK(kiln_spirv_validate("v13", words, count, KILN_SPIRV_TARGET_VULKAN_1_3));
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "kernel 'v13': SPIR-V failed vulkan1.1",
      kiln_spirv_validate("v13", words, count, KILN_SPIRV_TARGET_VULKAN_1_1));
  kiln_file_contents_deinit(&contents);
}

KILN_TEST(SpirvValidateTest, UnknownEnvIsRejected) {
  kiln_kernel_spirv_t spirv = gemm_spirv();
  KILN_EXPECT_STATUS_MESSAGE(
      KILN_STATUS_INVALID_ARGUMENT, "unknown SPIR-V target env",
      kiln_spirv_validate("gemm", spirv.words, spirv.word_count,
                          (kiln_spirv_target_env_t)7));
}
