// The harness itself: it reports the device, and with validation on it
// really sees validation errors (otherwise "no messages" would prove
// nothing about the kernel tests).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "gpu_test_util.h"
#include "kiln_test.h"

KILN_TEST(GpuHarnessTest, DeviceCaps) {
  kiln_vk_harness_t* h = gpu_harness();
  const kiln_kernel_arch_caps_t* caps = kiln_vk_harness_caps(h);
  KILN_EXPECT_GT(caps->subgroup_size, 0);
  KILN_EXPECT_GE(caps->max_workgroup_invocations, 128);  // Vulkan minimum
  KILN_EXPECT_GE(caps->max_shared_memory_bytes, 16384);  // Vulkan minimum
  fprintf(stderr, "device '%s': subgroup %u, %u invocations, %u B shared, fp16 storage %d, "
          "subgroup arithmetic %d, validation %d\n",
          kiln_vk_harness_device_name(h), caps->subgroup_size,
          caps->max_workgroup_invocations, caps->max_shared_memory_bytes,
          caps->fp16_storage, caps->subgroup_arithmetic,
          kiln_vk_harness_validation_enabled(h));
}

KILN_TEST(GpuHarnessTest, ValidationLayerIsLiveAndCounted) {
  kiln_vk_harness_t* h = gpu_harness();
  const char* env = getenv("KILN_VULKAN_VALIDATION");
  KILN_EXPECT_EQ(kiln_vk_harness_validation_enabled(h), env && strcmp(env, "1") == 0);
  if (!kiln_vk_harness_validation_enabled(h)) return;  // nothing to observe
  uint32_t before = kiln_vk_harness_message_count(h);
  kiln_vk_harness_provoke_validation_error(h, true);
  KILN_EXPECT_GT(kiln_vk_harness_message_count(h), before);
  KILN_EXPECT_CONTAINS(kiln_vk_harness_last_message(h), "VkPushConstantRange");
}

// Registered only with KILN_TEST_DELIBERATE_FAILURES=1 (tests/shim): an
// unexpected validation message anywhere fails the test that caused it.
KILN_TEST(ShimDeliberateGpuHarness, UnexpectedValidationMessage) {
  kiln_vk_harness_provoke_validation_error(gpu_harness(), false);
}

KILN_TEST(GpuHarnessTest, UnexpectedValidationMessageFailsItsTest) {
  if (!kiln_vk_harness_validation_enabled(gpu_harness())) return;  // nothing to observe
  char command[4096];
  snprintf(command, sizeof(command),
           "KILN_TEST_DELIBERATE_FAILURES=1 '%s' "
           "--gtest_filter=ShimDeliberateGpuHarness.UnexpectedValidationMessage 2>&1",
           kiln_test_self_path());
  FILE* pipe = popen(command, "r");
  KILN_ASSERT_TRUE(pipe != NULL);
  static char output[65536];
  size_t used = fread(output, 1, sizeof(output) - 1, pipe);
  output[used] = 0;
  int status = pclose(pipe);
  KILN_EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) != 0);
  KILN_EXPECT_CONTAINS(output, "Vulkan validation message: [error]");
  KILN_EXPECT_CONTAINS(output, "VUID-VkPushConstantRange-size-00296");
  KILN_EXPECT_CONTAINS(output,
                       "[  FAILED  ] ShimDeliberateGpuHarness.UnexpectedValidationMessage");
}
