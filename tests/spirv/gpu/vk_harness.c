// Compute-only Vulkan harness for the kernel tests; see vk_harness.h.
#include "vk_harness.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <volk.h>

#include "kiln_test.h"

struct kiln_vk_harness_t {
  VkInstance instance;
  VkDebugUtilsMessengerEXT messenger;
  VkPhysicalDevice physical_device;
  VkDevice device;
  VkQueue queue;
  uint32_t queue_family;
  VkCommandPool command_pool;
  VkPhysicalDeviceMemoryProperties memory;
  bool validation;
  bool fp16_storage_enabled;
  uint32_t message_count;
  bool expecting;          // inside kiln_vk_harness_provoke_validation_error
  uint32_t outside_count;  // messages while no test was running
  char last_message[1024];
  char device_name[VK_MAX_PHYSICAL_DEVICE_NAME_SIZE];
  kiln_kernel_arch_caps_t caps;
};

struct kiln_vk_buffer_t {
  VkBuffer buffer;
  VkDeviceMemory memory;
  size_t size;
  void* mapped;
};

static kiln_status_t kiln_vk_check(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return kiln_ok_status();
  return kiln_make_status(KILN_STATUS_INTERNAL, "%s failed: VkResult %d", what,
                          (int)result);
}
#define VK_CHECK(call) KILN_RETURN_IF_ERROR(kiln_vk_check((call), #call))

static VKAPI_ATTR VkBool32 VKAPI_CALL kiln_vk_debug_callback(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity,
    VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user) {
  (void)types;
  kiln_vk_harness_t* harness = (kiln_vk_harness_t*)user;
  ++harness->message_count;
  snprintf(harness->last_message, sizeof(harness->last_message), "[%s] %s",
           (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) ? "error"
                                                                      : "warning",
           data && data->pMessage ? data->pMessage : "");
  if (harness->expecting) return VK_FALSE;  // provoked on purpose
  fprintf(stderr, "validation: %s\n", harness->last_message);
  // Every other message fails the test that caused it, wherever it came
  // from (not only inside gpu_run); outside a test, the process fails at
  // kiln_vk_harness_destroy.
  if (kiln_test_current()) {
    kiln_test_fail(false, __FILE__, __LINE__, "Vulkan validation message: %s",
                   harness->last_message);
  } else {
    ++harness->outside_count;
  }
  return VK_FALSE;
}

static bool kiln_vk_layer_available(const char* name) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, NULL) != VK_SUCCESS) return false;
  VkLayerProperties* layers = calloc(count ? count : 1, sizeof(*layers));
  if (!layers) return false;
  bool found = false;
  if (vkEnumerateInstanceLayerProperties(&count, layers) == VK_SUCCESS) {
    for (uint32_t i = 0; i < count; ++i) {
      if (strcmp(layers[i].layerName, name) == 0) found = true;
    }
  }
  free(layers);
  return found;
}

static kiln_status_t kiln_vk_create_instance(kiln_vk_harness_t* h) {
  VK_CHECK(volkInitialize());
  const char* env = getenv("KILN_VULKAN_VALIDATION");
  h->validation = env && strcmp(env, "1") == 0;
  const char* layer = "VK_LAYER_KHRONOS_validation";
  if (h->validation && !kiln_vk_layer_available(layer)) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "KILN_VULKAN_VALIDATION=1 but %s is not installed",
                            layer);
  }
  VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "kiln_spirv_gpu_tests";
  app.apiVersion = VK_API_VERSION_1_1;
  const char* extensions[] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger_info.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                                   VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger_info.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                               VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger_info.pfnUserCallback = kiln_vk_debug_callback;
  messenger_info.pUserData = h;
  VkInstanceCreateInfo info = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  if (h->validation) {
    info.enabledLayerCount = 1;
    info.ppEnabledLayerNames = &layer;
    info.enabledExtensionCount = 1;
    info.ppEnabledExtensionNames = extensions;
    info.pNext = &messenger_info;  // also covers instance creation itself
  }
  VK_CHECK(vkCreateInstance(&info, NULL, &h->instance));
  volkLoadInstance(h->instance);
  if (h->validation) {
    VK_CHECK(vkCreateDebugUtilsMessengerEXT(h->instance, &messenger_info, NULL,
                                            &h->messenger));
  }
  return kiln_ok_status();
}

static kiln_status_t kiln_vk_pick_device(kiln_vk_harness_t* h) {
  uint32_t count = 0;
  VK_CHECK(vkEnumeratePhysicalDevices(h->instance, &count, NULL));
  if (count == 0) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE, "no Vulkan physical device");
  }
  VkPhysicalDevice devices[16];
  if (count > 16) count = 16;
  VkResult result = vkEnumeratePhysicalDevices(h->instance, &count, devices);
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    return kiln_vk_check(result, "vkEnumeratePhysicalDevices");
  }
  // KILN_TEST_DEVICE is a device URI: "vulkan" or "vulkan://<ordinal>".
  uint32_t ordinal = 0;
  const char* env = getenv("KILN_TEST_DEVICE");
  if (env && strncmp(env, "vulkan://", 9) == 0) {
    char* end = NULL;
    unsigned long value = strtoul(env + 9, &end, 10);
    if (end == env + 9 || *end != '\0') {
      return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                              "KILN_TEST_DEVICE='%s': only vulkan://<ordinal> "
                              "is supported by this harness", env);
    }
    ordinal = (uint32_t)value;
  } else if (env && env[0] && strcmp(env, "vulkan") != 0) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "KILN_TEST_DEVICE='%s' is not a Vulkan device URI", env);
  }
  if (ordinal >= count) {
    return kiln_make_status(KILN_STATUS_NOT_FOUND,
                            "KILN_TEST_DEVICE=%u but only %u devices", ordinal, count);
  }
  h->physical_device = devices[ordinal];
  return kiln_ok_status();
}

static kiln_status_t kiln_vk_create_device(kiln_vk_harness_t* h) {
  VkPhysicalDeviceSubgroupProperties subgroup = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceProperties2 properties = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties.pNext = &subgroup;
  vkGetPhysicalDeviceProperties2(h->physical_device, &properties);
  snprintf(h->device_name, sizeof(h->device_name), "%s",
           properties.properties.deviceName);
  VkPhysicalDevice16BitStorageFeatures storage16 = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceFeatures2 features = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &storage16;
  vkGetPhysicalDeviceFeatures2(h->physical_device, &features);
  vkGetPhysicalDeviceMemoryProperties(h->physical_device, &h->memory);

  const VkPhysicalDeviceLimits* limits = &properties.properties.limits;
  h->caps.subgroup_size = subgroup.subgroupSize;
  h->caps.max_workgroup_invocations = limits->maxComputeWorkGroupInvocations;
  h->caps.max_shared_memory_bytes = limits->maxComputeSharedMemorySize;
  h->caps.fp16_storage = storage16.storageBuffer16BitAccess == VK_TRUE;
  h->caps.subgroup_arithmetic =
      (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
      (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);

  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(h->physical_device, &family_count, NULL);
  VkQueueFamilyProperties families[16];
  if (family_count > 16) family_count = 16;
  vkGetPhysicalDeviceQueueFamilyProperties(h->physical_device, &family_count, families);
  h->queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < family_count; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      h->queue_family = i;
      break;
    }
  }
  if (h->queue_family == UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "device '%s' has no compute queue", h->device_name);
  }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info = {VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue_info.queueFamilyIndex = h->queue_family;
  queue_info.queueCount = 1;
  queue_info.pQueuePriorities = &priority;
  // Enable only what the variants need.
  VkPhysicalDevice16BitStorageFeatures enable16 = {
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  enable16.storageBuffer16BitAccess = storage16.storageBuffer16BitAccess;
  VkPhysicalDeviceFeatures2 enable = {VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  enable.pNext = &enable16;
  VkDeviceCreateInfo info = {VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &enable;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue_info;
  VK_CHECK(vkCreateDevice(h->physical_device, &info, NULL, &h->device));
  volkLoadDevice(h->device);
  // As the HAL tests do (tests/hal/test_device.c): keep lavapipe and the
  // libraries it pulled in (LLVM, libxml2, ICU) mapped after the loader
  // unloads it at vkDestroyInstance, so their global state stays reachable
  // at exit instead of being reported by LeakSanitizer as leaked, and
  // lavapipe's own known leak (tests/hal/lsan_suppressions.txt) is named.
  // No-op when lavapipe is not the loaded driver.
  (void)dlopen("libvulkan_lvp.so", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  vkGetDeviceQueue(h->device, h->queue_family, 0, &h->queue);
  VkCommandPoolCreateInfo pool_info = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool_info.queueFamilyIndex = h->queue_family;
  pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  VK_CHECK(vkCreateCommandPool(h->device, &pool_info, NULL, &h->command_pool));
  return kiln_ok_status();
}

kiln_status_t kiln_vk_harness_create(kiln_vk_harness_t** out_harness) {
  *out_harness = NULL;
  kiln_vk_harness_t* h = calloc(1, sizeof(*h));
  if (!h) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "harness");
  kiln_status_t status = kiln_vk_create_instance(h);
  if (kiln_status_is_ok(status)) status = kiln_vk_pick_device(h);
  if (kiln_status_is_ok(status)) status = kiln_vk_create_device(h);
  if (!kiln_status_is_ok(status)) {
    kiln_vk_harness_destroy(h);
    return status;
  }
  *out_harness = h;
  return kiln_ok_status();
}

void kiln_vk_harness_destroy(kiln_vk_harness_t* h) {
  if (!h) return;
  if (h->device) {
    if (h->command_pool) vkDestroyCommandPool(h->device, h->command_pool, NULL);
    vkDestroyDevice(h->device, NULL);
  }
  if (h->messenger) vkDestroyDebugUtilsMessengerEXT(h->instance, h->messenger, NULL);
  if (h->instance) vkDestroyInstance(h->instance, NULL);
  uint32_t outside = h->outside_count;
  free(h);
  if (outside) {
    // Called at exit, after googletest's verdict: exit non-zero so the
    // suite fails (scripts/test.sh counts such a suite as failed).
    fprintf(stderr, "%u Vulkan validation message(s) outside any test\n", outside);
    fflush(stderr);
    _exit(1);
  }
}

const kiln_kernel_arch_caps_t* kiln_vk_harness_caps(const kiln_vk_harness_t* h) {
  return &h->caps;
}
const char* kiln_vk_harness_device_name(const kiln_vk_harness_t* h) {
  return h->device_name;
}
uint32_t kiln_vk_harness_message_count(const kiln_vk_harness_t* h) {
  return h->message_count;
}
const char* kiln_vk_harness_last_message(const kiln_vk_harness_t* h) {
  return h->last_message;
}
bool kiln_vk_harness_validation_enabled(const kiln_vk_harness_t* h) {
  return h->validation;
}

void kiln_vk_harness_provoke_validation_error(kiln_vk_harness_t* h, bool expected) {
  h->expecting = expected;
  VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, 0};
  VkPipelineLayoutCreateInfo info = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  info.pushConstantRangeCount = 1;
  info.pPushConstantRanges = &range;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  if (vkCreatePipelineLayout(h->device, &info, NULL, &layout) == VK_SUCCESS) {
    vkDestroyPipelineLayout(h->device, layout, NULL);
  }
  h->expecting = false;
}

kiln_status_t kiln_vk_buffer_create(kiln_vk_harness_t* h, size_t size,
                                    const void* data, kiln_vk_buffer_t** out_buffer) {
  *out_buffer = NULL;
  if (size == 0) size = 4;
  kiln_vk_buffer_t* b = calloc(1, sizeof(*b));
  if (!b) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "buffer");
  b->size = size;
  VkBufferCreateInfo info = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  // Whole 16-byte texels, so a texel view covers every element.
  info.size = (size + 15) & ~(size_t)15;
  info.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  kiln_status_t status = kiln_vk_check(vkCreateBuffer(h->device, &info, NULL, &b->buffer),
                                       "vkCreateBuffer");
  VkMemoryRequirements requirements;
  uint32_t type = UINT32_MAX;
  if (kiln_status_is_ok(status)) {
    vkGetBufferMemoryRequirements(h->device, b->buffer, &requirements);
    const VkMemoryPropertyFlags want = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    for (uint32_t i = 0; i < h->memory.memoryTypeCount; ++i) {
      if ((requirements.memoryTypeBits & (1u << i)) &&
          (h->memory.memoryTypes[i].propertyFlags & want) == want) {
        type = i;
        break;
      }
    }
    if (type == UINT32_MAX) {
      status = kiln_make_status(KILN_STATUS_UNAVAILABLE, "no host-coherent memory");
    }
  }
  if (kiln_status_is_ok(status)) {
    VkMemoryAllocateInfo alloc = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    alloc.allocationSize = requirements.size;
    alloc.memoryTypeIndex = type;
    status = kiln_vk_check(vkAllocateMemory(h->device, &alloc, NULL, &b->memory),
                           "vkAllocateMemory");
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_vk_check(vkBindBufferMemory(h->device, b->buffer, b->memory, 0),
                           "vkBindBufferMemory");
  }
  if (kiln_status_is_ok(status)) {
    status = kiln_vk_check(vkMapMemory(h->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->mapped),
                           "vkMapMemory");
  }
  if (!kiln_status_is_ok(status)) {
    kiln_vk_buffer_destroy(h, b);
    return status;
  }
  if (data) memcpy(b->mapped, data, size);
  else memset(b->mapped, 0, size);
  *out_buffer = b;
  return kiln_ok_status();
}

void kiln_vk_buffer_destroy(kiln_vk_harness_t* h, kiln_vk_buffer_t* b) {
  if (!b) return;
  if (b->mapped) vkUnmapMemory(h->device, b->memory);
  if (b->buffer) vkDestroyBuffer(h->device, b->buffer, NULL);
  if (b->memory) vkFreeMemory(h->device, b->memory, NULL);
  free(b);
}

kiln_status_t kiln_vk_buffer_read(kiln_vk_harness_t* h, kiln_vk_buffer_t* b,
                                  void* out_data, size_t size) {
  (void)h;
  if (size > b->size) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE,
                            "read of %zu bytes from a %zu-byte buffer", size, b->size);
  }
  memcpy(out_data, b->mapped, size);
  return kiln_ok_status();
}

// Every object one dispatch creates, destroyed together.
typedef struct kiln_vk_dispatch_objects_t {
  VkShaderModule module;
  VkDescriptorSetLayout set_layout;
  VkPipelineLayout pipeline_layout;
  VkPipeline pipeline;
  VkDescriptorPool pool;
  VkCommandBuffer command_buffer;
  VkFence fence;
  VkBufferView views[8];  // texel bindings' views (the variant's texel_bindings)
} kiln_vk_dispatch_objects_t;

static void kiln_vk_dispatch_objects_destroy(kiln_vk_harness_t* h,
                                             kiln_vk_dispatch_objects_t* o) {
  if (o->fence) vkDestroyFence(h->device, o->fence, NULL);
  if (o->command_buffer) vkFreeCommandBuffers(h->device, h->command_pool, 1, &o->command_buffer);
  if (o->pool) vkDestroyDescriptorPool(h->device, o->pool, NULL);
  if (o->pipeline) vkDestroyPipeline(h->device, o->pipeline, NULL);
  if (o->pipeline_layout) vkDestroyPipelineLayout(h->device, o->pipeline_layout, NULL);
  if (o->set_layout) vkDestroyDescriptorSetLayout(h->device, o->set_layout, NULL);
  if (o->module) vkDestroyShaderModule(h->device, o->module, NULL);
  for (int i = 0; i < 8; ++i) {
    if (o->views[i]) vkDestroyBufferView(h->device, o->views[i], NULL);
  }
}

static kiln_status_t kiln_vk_record_and_run(
    kiln_vk_harness_t* h, kiln_vk_dispatch_objects_t* o,
    const kiln_kernel_spirv_t* spirv, const kiln_kernel_config_t* config,
    const void* push, uint32_t push_size, kiln_vk_buffer_t* const* buffers,
    uint32_t buffer_count, const uint32_t grid[3]) {
  VkShaderModuleCreateInfo module_info = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
  module_info.codeSize = spirv->word_count * 4;
  module_info.pCode = spirv->words;
  VK_CHECK(vkCreateShaderModule(h->device, &module_info, NULL, &o->module));

  VkDescriptorSetLayoutBinding bindings[8];
  VkDescriptorBufferInfo buffer_infos[8];
  VkWriteDescriptorSet writes[8];
  if (buffer_count > 8) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "too many buffers");
  }
  uint32_t texel_count = 0;
  for (uint32_t i = 0; i < buffer_count; ++i) {
    bool texel = (spirv->texel_bindings >> i) & 1u;
    bindings[i] = (VkDescriptorSetLayoutBinding){
        i, texel ? VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER : VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
        1, VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    buffer_infos[i] = (VkDescriptorBufferInfo){buffers[i]->buffer, 0, VK_WHOLE_SIZE};
    if (texel) {
      VkBufferViewCreateInfo view_info = {VK_STRUCTURE_TYPE_BUFFER_VIEW_CREATE_INFO};
      view_info.buffer = buffers[i]->buffer;
      view_info.format = VK_FORMAT_R32G32B32A32_SFLOAT;
      view_info.range = VK_WHOLE_SIZE;
      VK_CHECK(vkCreateBufferView(h->device, &view_info, NULL, &o->views[i]));
      texel_count++;
    }
  }
  VkDescriptorSetLayoutCreateInfo set_info = {
      VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set_info.bindingCount = buffer_count;
  set_info.pBindings = bindings;
  VK_CHECK(vkCreateDescriptorSetLayout(h->device, &set_info, NULL, &o->set_layout));
  VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size};
  VkPipelineLayoutCreateInfo layout_info = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout_info.setLayoutCount = 1;
  layout_info.pSetLayouts = &o->set_layout;
  layout_info.pushConstantRangeCount = push_size ? 1 : 0;
  layout_info.pPushConstantRanges = &range;
  VK_CHECK(vkCreatePipelineLayout(h->device, &layout_info, NULL, &o->pipeline_layout));

  VkSpecializationMapEntry entries[KILN_KERNEL_MAX_SPEC_VALUES];
  uint32_t values[KILN_KERNEL_MAX_SPEC_VALUES];
  for (size_t i = 0; i < config->spec_count; ++i) {
    entries[i] = (VkSpecializationMapEntry){config->spec[i].id, (uint32_t)(i * 4), 4};
    values[i] = config->spec[i].value;
  }
  VkSpecializationInfo specialization = {(uint32_t)config->spec_count, entries,
                                         config->spec_count * 4, values};
  VkComputePipelineCreateInfo pipeline_info = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  pipeline_info.stage.module = o->module;
  pipeline_info.stage.pName = "main";
  pipeline_info.stage.pSpecializationInfo = &specialization;
  pipeline_info.layout = o->pipeline_layout;
  VK_CHECK(vkCreateComputePipelines(h->device, VK_NULL_HANDLE, 1, &pipeline_info,
                                    NULL, &o->pipeline));

  VkDescriptorPoolSize pool_sizes[2];
  uint32_t pool_size_count = 0;
  if (buffer_count > texel_count) {
    pool_sizes[pool_size_count++] = (VkDescriptorPoolSize){VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                           buffer_count - texel_count};
  }
  if (texel_count) {
    pool_sizes[pool_size_count++] =
        (VkDescriptorPoolSize){VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, texel_count};
  }
  VkDescriptorPoolCreateInfo pool_info = {VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
  pool_info.maxSets = 1;
  pool_info.poolSizeCount = pool_size_count;
  pool_info.pPoolSizes = pool_sizes;
  VK_CHECK(vkCreateDescriptorPool(h->device, &pool_info, NULL, &o->pool));
  VkDescriptorSet set;
  VkDescriptorSetAllocateInfo set_alloc = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
  set_alloc.descriptorPool = o->pool;
  set_alloc.descriptorSetCount = 1;
  set_alloc.pSetLayouts = &o->set_layout;
  VK_CHECK(vkAllocateDescriptorSets(h->device, &set_alloc, &set));
  for (uint32_t i = 0; i < buffer_count; ++i) {
    writes[i] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    writes[i].dstSet = set;
    writes[i].dstBinding = i;
    writes[i].descriptorCount = 1;
    writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    writes[i].pBufferInfo = &buffer_infos[i];
    if (o->views[i]) {
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER;
      writes[i].pBufferInfo = NULL;
      writes[i].pTexelBufferView = &o->views[i];
    }
  }
  vkUpdateDescriptorSets(h->device, buffer_count, writes, 0, NULL);

  VkCommandBufferAllocateInfo cb_alloc = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
  cb_alloc.commandPool = h->command_pool;
  cb_alloc.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  cb_alloc.commandBufferCount = 1;
  VK_CHECK(vkAllocateCommandBuffers(h->device, &cb_alloc, &o->command_buffer));
  VkCommandBufferBeginInfo begin = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VK_CHECK(vkBeginCommandBuffer(o->command_buffer, &begin));
  vkCmdBindPipeline(o->command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE, o->pipeline);
  vkCmdBindDescriptorSets(o->command_buffer, VK_PIPELINE_BIND_POINT_COMPUTE,
                          o->pipeline_layout, 0, 1, &set, 0, NULL);
  if (push_size) {
    vkCmdPushConstants(o->command_buffer, o->pipeline_layout,
                       VK_SHADER_STAGE_COMPUTE_BIT, 0, push_size, push);
  }
  vkCmdDispatch(o->command_buffer, grid[0], grid[1], grid[2]);
  // Make the shader's writes visible to the host reads that follow.
  VkMemoryBarrier barrier = {VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(o->command_buffer, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &barrier, 0, NULL, 0, NULL);
  VK_CHECK(vkEndCommandBuffer(o->command_buffer));

  VkFenceCreateInfo fence_info = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
  VK_CHECK(vkCreateFence(h->device, &fence_info, NULL, &o->fence));
  VkSubmitInfo submit = {VK_STRUCTURE_TYPE_SUBMIT_INFO};
  submit.commandBufferCount = 1;
  submit.pCommandBuffers = &o->command_buffer;
  VK_CHECK(vkQueueSubmit(h->queue, 1, &submit, o->fence));
  VK_CHECK(vkWaitForFences(h->device, 1, &o->fence, VK_TRUE, 60ull * 1000000000ull));
  return kiln_ok_status();
}

kiln_status_t kiln_vk_harness_dispatch(kiln_vk_harness_t* h,
                                       const kiln_kernel_spirv_t* spirv,
                                       const kiln_kernel_config_t* config,
                                       const void* push, uint32_t push_size,
                                       kiln_vk_buffer_t* const* buffers,
                                       uint32_t buffer_count,
                                       const uint32_t grid[3]) {
  uint32_t have = (h->caps.fp16_storage ? KILN_KERNEL_FEATURE_FP16_STORAGE : 0) |
                  (h->caps.subgroup_arithmetic ? KILN_KERNEL_FEATURE_SUBGROUP_ARITHMETIC : 0);
  if ((spirv->required_features & have) != spirv->required_features) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "device '%s' lacks features 0x%x needed by '%s'",
                            h->device_name, spirv->required_features & ~have,
                            spirv->blob_name);
  }
  kiln_vk_dispatch_objects_t objects;
  memset(&objects, 0, sizeof(objects));
  kiln_status_t status = kiln_vk_record_and_run(h, &objects, spirv, config, push,
                                                push_size, buffers, buffer_count, grid);
  kiln_vk_dispatch_objects_destroy(h, &objects);
  return kiln_status_annotate(status, "running kernel '%s' on '%s'",
                              spirv->blob_name, h->device_name);
}
