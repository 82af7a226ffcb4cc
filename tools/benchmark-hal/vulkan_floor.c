// kiln-vulkan-floor: the raw-Vulkan yardstick scripts/bench-hal.sh sets beside
// kiln-benchmark-hal. Plain Vulkan through the system loader, no kiln code,
// the same empty 64-invocation kernel. Rows (medians, microseconds):
//   submit_rtt_us  one recorded dispatch: submit + wait on a fence
//   dispatch_us    per dispatch+barrier inside one command buffer: GPU time
//                  (timestamps; 0 when the queue has none) and host time of
//                  a resubmit
//   record_us      host cost of recording one dispatch+barrier
// KILN_VULKAN_VALIDATION=1 enables the Khronos validation layer; any
// message it prints makes the run fail (exit 1).
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <vulkan/vulkan.h>

static const uint32_t kEmptySpirv[] =
#include "empty.spv.inc"
    ;

typedef struct floor_t {
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  bool timestamps;
  float timestamp_period;
  VkCommandPool pool;
  VkFence fence;
  VkQueryPool queries;
  VkShaderModule shader;
  VkPipelineLayout layout;
  VkPipeline pipeline;
} floor_t;

static unsigned validation_messages;

#define CHECK(expr)                                                          \
  do {                                                                       \
    VkResult result_ = (expr);                                               \
    if (result_ != VK_SUCCESS) {                                             \
      fprintf(stderr, "kiln-vulkan-floor: %s failed (VkResult %d)\n", #expr, \
              (int)result_);                                                 \
      exit(1);                                                               \
    }                                                                        \
  } while (0)

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int compare_doubles(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

static double median(double* values, size_t count) {
  qsort(values, count, sizeof(double), compare_doubles);
  return values[count / 2];
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity,
    VkDebugUtilsMessageTypeFlagsEXT type,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  (void)severity, (void)type, (void)user;
  ++validation_messages;
  fprintf(stderr, "kiln-vulkan-floor: validation: %s\n", data->pMessage);
  return VK_FALSE;
}

static void create_instance(floor_t* f, bool validation) {
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "kiln-vulkan-floor",
                           .apiVersion = VK_API_VERSION_1_1};
  const char* layer = "VK_LAYER_KHRONOS_validation";
  const char* extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app,
                               .enabledLayerCount = validation ? 1 : 0,
                               .ppEnabledLayerNames = &layer,
                               .enabledExtensionCount = validation ? 1 : 0,
                               .ppEnabledExtensionNames = &extension};
  CHECK(vkCreateInstance(&info, NULL, &f->instance));
  if (!validation) return;
  PFN_vkCreateDebugUtilsMessengerEXT create =
      (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
          f->instance, "vkCreateDebugUtilsMessengerEXT");
  if (!create) {
    fprintf(stderr, "kiln-vulkan-floor: no VK_EXT_debug_utils\n");
    exit(1);
  }
  VkDebugUtilsMessengerCreateInfoEXT messenger = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = on_message};
  CHECK(create(f->instance, &messenger, NULL, &f->messenger));
}

static void create_device(floor_t* f, uint32_t ordinal) {
  uint32_t count = 0;
  CHECK(vkEnumeratePhysicalDevices(f->instance, &count, NULL));
  if (ordinal >= count || count > 64) {
    fprintf(stderr, "kiln-vulkan-floor: device %u not found (%u devices)\n",
            ordinal, count);
    exit(1);
  }
  VkPhysicalDevice devices[64];
  CHECK(vkEnumeratePhysicalDevices(f->instance, &count, devices));
  f->physical = devices[ordinal];
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(f->physical, &props);
  f->timestamp_period = props.limits.timestampPeriod;
  uint32_t families = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(f->physical, &families, NULL);
  VkQueueFamilyProperties family_props[32];
  if (families > 32) families = 32;
  vkGetPhysicalDeviceQueueFamilyProperties(f->physical, &families, family_props);
  f->queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < families && f->queue_family == UINT32_MAX; ++i) {
    if (family_props[i].queueFlags & VK_QUEUE_COMPUTE_BIT) f->queue_family = i;
  }
  if (f->queue_family == UINT32_MAX) {
    fprintf(stderr, "kiln-vulkan-floor: device %u has no compute queue\n", ordinal);
    exit(1);
  }
  f->timestamps = family_props[f->queue_family].timestampValidBits > 0;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                   .queueFamilyIndex = f->queue_family,
                                   .queueCount = 1,
                                   .pQueuePriorities = &priority};
  VkDeviceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                             .queueCreateInfoCount = 1,
                             .pQueueCreateInfos = &queue};
  CHECK(vkCreateDevice(f->physical, &info, NULL, &f->device));
  vkGetDeviceQueue(f->device, f->queue_family, 0, &f->queue);
  printf("device: %s (vendor 0x%x, api %u.%u.%u)\n", props.deviceName,
         props.vendorID, VK_API_VERSION_MAJOR(props.apiVersion),
         VK_API_VERSION_MINOR(props.apiVersion),
         VK_API_VERSION_PATCH(props.apiVersion));
}

static void create_objects(floor_t* f) {
  VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = f->queue_family};
  CHECK(vkCreateCommandPool(f->device, &pool, NULL, &f->pool));
  VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  CHECK(vkCreateFence(f->device, &fence, NULL, &f->fence));
  if (f->timestamps) {
    VkQueryPoolCreateInfo queries = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                     .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                     .queryCount = 2};
    CHECK(vkCreateQueryPool(f->device, &queries, NULL, &f->queries));
  }
  VkShaderModuleCreateInfo shader = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = sizeof(kEmptySpirv),
                                     .pCode = kEmptySpirv};
  CHECK(vkCreateShaderModule(f->device, &shader, NULL, &f->shader));
  VkPipelineLayoutCreateInfo layout = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  CHECK(vkCreatePipelineLayout(f->device, &layout, NULL, &f->layout));
  VkComputePipelineCreateInfo pipeline = {
      .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
      .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = f->shader,
                .pName = "main"},
      .layout = f->layout};
  CHECK(vkCreateComputePipelines(f->device, VK_NULL_HANDLE, 1, &pipeline, NULL,
                                 &f->pipeline));
}

static void destroy(floor_t* f) {
  vkDestroyPipeline(f->device, f->pipeline, NULL);
  vkDestroyPipelineLayout(f->device, f->layout, NULL);
  vkDestroyShaderModule(f->device, f->shader, NULL);
  if (f->queries) vkDestroyQueryPool(f->device, f->queries, NULL);
  vkDestroyFence(f->device, f->fence, NULL);
  vkDestroyCommandPool(f->device, f->pool, NULL);
  vkDestroyDevice(f->device, NULL);
  if (f->messenger) {
    PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            f->instance, "vkDestroyDebugUtilsMessengerEXT");
    if (destroy_messenger) destroy_messenger(f->instance, f->messenger, NULL);
  }
  vkDestroyInstance(f->instance, NULL);
}

static VkCommandBuffer allocate(floor_t* f) {
  VkCommandBufferAllocateInfo info = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = f->pool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
  VkCommandBuffer cb;
  CHECK(vkAllocateCommandBuffers(f->device, &info, &cb));
  return cb;
}

// `count` dispatch+barrier pairs, between timestamps when the queue has them.
static void record(floor_t* f, VkCommandBuffer cb, int count) {
  VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  CHECK(vkBeginCommandBuffer(cb, &begin));
  if (f->queries) {
    vkCmdResetQueryPool(cb, f->queries, 0, 2);
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, f->queries, 0);
  }
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, f->pipeline);
  VkMemoryBarrier barrier = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                             .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT |
                                              VK_ACCESS_TRANSFER_WRITE_BIT,
                             .dstAccessMask = VK_ACCESS_SHADER_READ_BIT |
                                              VK_ACCESS_SHADER_WRITE_BIT |
                                              VK_ACCESS_TRANSFER_READ_BIT |
                                              VK_ACCESS_TRANSFER_WRITE_BIT};
  const VkPipelineStageFlags stages =
      VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT;
  for (int i = 0; i < count; ++i) {
    vkCmdDispatch(cb, 1, 1, 1);
    vkCmdPipelineBarrier(cb, stages, stages, 0, 1, &barrier, 0, NULL, 0, NULL);
  }
  if (f->queries) {
    vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, f->queries, 1);
  }
  CHECK(vkEndCommandBuffer(cb));
}

static void submit_wait(floor_t* f, VkCommandBuffer cb) {
  VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                         .commandBufferCount = 1,
                         .pCommandBuffers = &cb};
  CHECK(vkQueueSubmit(f->queue, 1, &submit, f->fence));
  CHECK(vkWaitForFences(f->device, 1, &f->fence, VK_TRUE, UINT64_MAX));
  CHECK(vkResetFences(f->device, 1, &f->fence));
}

static double gpu_us(floor_t* f) {
  if (!f->queries) return 0.0;
  uint64_t stamps[2];
  CHECK(vkGetQueryPoolResults(f->device, f->queries, 0, 2, sizeof(stamps), stamps,
                              sizeof(uint64_t),
                              VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
  return (double)(stamps[1] - stamps[0]) * f->timestamp_period / 1e3;
}

static int parse_count(const char* text, const char* what, long min) {
  char* end = NULL;
  long value = strtol(text, &end, 10);
  if (!*text || !end || *end || value < min || value > 1000000) {
    fprintf(stderr, "kiln-vulkan-floor: --%s=%s: expected %ld..1000000\n", what,
            text, min);
    exit(2);
  }
  return (int)value;
}

int main(int argc, char** argv) {
  uint32_t ordinal = 0;
  int round_trips = 400, dispatches = 5000;
  enum { kRepeats = 7 };
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--version") == 0) {
      printf("kiln-vulkan-floor %s\n", KILN_VERSION_STRING);
      return 0;
    } else if (strcmp(argv[i], "--help") == 0) {
      printf("usage: %s [--device=N] [--round-trips=N] [--dispatches=N]\n"
             "Raw-Vulkan floors of one empty dispatch, no kiln code (see "
             "scripts/bench-hal.sh).\n",
             argv[0]);
      return 0;
    } else if (strncmp(argv[i], "--device=", 9) == 0) {
      ordinal = (uint32_t)parse_count(argv[i] + 9, "device", 0);
    } else if (strncmp(argv[i], "--round-trips=", 14) == 0) {
      round_trips = parse_count(argv[i] + 14, "round-trips", 10);
    } else if (strncmp(argv[i], "--dispatches=", 13) == 0) {
      dispatches = parse_count(argv[i] + 13, "dispatches", 1);
    } else {
      fprintf(stderr,
              "usage: %s [--device=N] [--round-trips=N] [--dispatches=N]\n"
              "Raw-Vulkan floors of one empty dispatch (see "
              "scripts/bench-hal.sh).\nunknown argument '%s'\n",
              argv[0], argv[i]);
      return 2;
    }
  }
  const char* validation = getenv("KILN_VULKAN_VALIDATION");
  floor_t f;
  memset(&f, 0, sizeof(f));
  create_instance(&f, validation && strcmp(validation, "1") == 0);
  create_device(&f, ordinal);
  create_objects(&f);

  // 1. Round trip of one recorded dispatch.
  VkCommandBuffer one = allocate(&f);
  record(&f, one, 1);
  for (int i = 0; i < 20; ++i) submit_wait(&f, one);
  double* samples = (double*)malloc(sizeof(double) * (size_t)round_trips);
  if (!samples) return 1;
  for (int i = 0; i < round_trips; ++i) {
    double start = now_us();
    submit_wait(&f, one);
    samples[i] = now_us() - start;
  }
  double rtt = median(samples, (size_t)round_trips);
  printf("submit_rtt_us: %.2f (p10 %.2f, p90 %.2f)\n", rtt,
         samples[round_trips / 10], samples[round_trips * 9 / 10]);
  free(samples);

  // 2. Recording cost, then GPU and host time per dispatch of a resubmit.
  VkCommandBuffer many = allocate(&f);
  double recording[kRepeats];
  for (int r = 0; r < kRepeats; ++r) {
    double start = now_us();
    record(&f, many, dispatches);
    recording[r] = (now_us() - start) / dispatches;
  }
  submit_wait(&f, many);
  double host[kRepeats], gpu[kRepeats];
  for (int r = 0; r < kRepeats; ++r) {
    double start = now_us();
    submit_wait(&f, many);
    host[r] = (now_us() - start) / dispatches;
    gpu[r] = gpu_us(&f) / dispatches;
  }
  printf("dispatch_us: %.3f gpu, %.3f host (per dispatch+barrier, %d in one "
         "command buffer)\n",
         median(gpu, kRepeats), median(host, kRepeats), dispatches);
  printf("record_us: %.4f raw (per dispatch+barrier, %d in one command buffer)\n",
         median(recording, kRepeats), dispatches);

  CHECK(vkDeviceWaitIdle(f.device));
  destroy(&f);
  if (validation_messages) {
    fprintf(stderr, "kiln-vulkan-floor: %u validation message(s)\n",
            validation_messages);
    return 1;
  }
  return 0;
}
