// KILN_VULKAN_PIPELINE_STATS=1: every compute pipeline kiln creates prints
// the driver's statistics of its executables to stderr (registers, shared
// memory, spills: whatever VK_KHR_pipeline_executable_properties reports;
// NVIDIA reports the register count that decides how many workgroups share
// an SM). Off by default: capturing statistics may bypass the driver's
// pipeline cache.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulkan_internal.h"

bool kiln_vk_pipeline_stats_requested(void) {
  const char* value = getenv("KILN_VULKAN_PIPELINE_STATS");
  return value && value[0] && strcmp(value, "0") != 0;
}

static void print_statistic(const VkPipelineExecutableStatisticKHR* s) {
  switch (s->format) {
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
      fprintf(stderr, "; %s %s", s->name, s->value.b32 ? "yes" : "no");
      break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
      fprintf(stderr, "; %s %" PRId64, s->name, s->value.i64);
      break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
      fprintf(stderr, "; %s %" PRIu64, s->name, s->value.u64);
      break;
    case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_FLOAT64_KHR:
      fprintf(stderr, "; %s %g", s->name, s->value.f64);
      break;
    default:
      break;
  }
}

void kiln_vk_pipeline_stats_print(kiln_vk_device_t* device, VkPipeline pipeline,
                                  const char* executable_name, const char* entry_name) {
  if (!device->support.pipeline_statistics) return;
  const struct VolkDeviceTable* vk = &device->vk;
  VkPipelineInfoKHR pipeline_info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR,
                                     .pipeline = pipeline};
  VkPipelineExecutablePropertiesKHR executables[4];
  uint32_t executable_count = 4;
  for (uint32_t i = 0; i < executable_count; ++i) {
    executables[i] = (VkPipelineExecutablePropertiesKHR){
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR};
  }
  VkResult result = vk->vkGetPipelineExecutablePropertiesKHR(device->device, &pipeline_info,
                                                             &executable_count, executables);
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    fprintf(stderr, "kiln vulkan: pipeline stats of '%s': vkGetPipelineExecutablePropertiesKHR "
                    "failed (%d)\n", executable_name, (int)result);
    return;
  }
  for (uint32_t e = 0; e < executable_count; ++e) {
    VkPipelineExecutableInfoKHR info = {.sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
                                        .pipeline = pipeline,
                                        .executableIndex = e};
    VkPipelineExecutableStatisticKHR stats[32];
    uint32_t stat_count = 32;
    for (uint32_t i = 0; i < stat_count; ++i) {
      stats[i] = (VkPipelineExecutableStatisticKHR){
          .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    }
    result = vk->vkGetPipelineExecutableStatisticsKHR(device->device, &info, &stat_count, stats);
    if (result != VK_SUCCESS && result != VK_INCOMPLETE) stat_count = 0;
    fprintf(stderr, "kiln vulkan: pipeline stats '%s' entry '%s' executable %u (%s, subgroup %u)",
            executable_name, entry_name, e, executables[e].name, executables[e].subgroupSize);
    for (uint32_t i = 0; i < stat_count; ++i) print_statistic(&stats[i]);
    fprintf(stderr, "\n");
  }
}
