// The harness itself: it reports the device, and with validation on it
// really sees validation errors (otherwise "no messages" would prove
// nothing about the kernel tests).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  kiln_vk_harness_provoke_validation_error(h);
  KILN_EXPECT_GT(kiln_vk_harness_message_count(h), before);
  KILN_EXPECT_CONTAINS(kiln_vk_harness_last_message(h), "VkPushConstantRange");
}
