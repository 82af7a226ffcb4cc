// Logical device creation and teardown, and the device vtable.
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulkan_internal.h"

uint64_t kiln_vk_timeout_to_vulkan(int64_t timeout_ns) {
  if (timeout_ns == KILN_INFINITE_TIMEOUT_NS) return UINT64_MAX;
  return timeout_ns <= 0 ? 0 : (uint64_t)timeout_ns;
}

void kiln_vk_device_note_completed(kiln_vk_device_t* device, uint64_t value) {
  uint64_t known = __atomic_load_n(&device->completed_value, __ATOMIC_ACQUIRE);
  while (known < value &&
         !__atomic_compare_exchange_n(&device->completed_value, &known, value, true,
                                      __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
  }
}

kiln_status_t kiln_vk_device_wait_value(kiln_vk_device_t* device,
                                        uint64_t value, int64_t timeout_ns) {
  if (value <= __atomic_load_n(&device->completed_value, __ATOMIC_ACQUIRE)) {
    return kiln_ok_status();
  }
  if (device->host_timeline) {
    KILN_RETURN_IF_ERROR(kiln_vk_host_wait_value(device, value, timeout_ns));
    kiln_vk_device_note_completed(device, value);
    return kiln_ok_status();
  }
  VkResult result = kiln_vk_wait(device, VK_NULL_HANDLE, value, timeout_ns);
  if (result == VK_TIMEOUT) {
    return kiln_make_status(KILN_STATUS_DEADLINE_EXCEEDED,
                            "device '%s': work did not finish within %lld ns",
                            device->base.info.name, (long long)timeout_ns);
  }
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(result, "vkWaitSemaphores"));
  kiln_vk_device_note_completed(device, value);
  return kiln_ok_status();
}

static kiln_status_t device_wait_idle(kiln_hal_device_t* base,
                                      int64_t timeout_ns) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  pthread_mutex_lock(&device->queue_mutex);
  uint64_t value = device->submit_value;
  pthread_mutex_unlock(&device->queue_mutex);
  return kiln_vk_device_wait_value(device, value, timeout_ns);
}

static kiln_status_t device_cache_stats(kiln_hal_device_t* base,
                                        kiln_hal_pipeline_cache_stats_t* out) {
  *out = kiln_vk_device_cast(base)->cache_stats;
  return kiln_ok_status();
}

static void device_destroy(kiln_hal_device_t* base) {
  kiln_vk_device_t* device = kiln_vk_device_cast(base);
  if (device->device) {
    device->vk.vkDeviceWaitIdle(device->device);
    kiln_vk_host_timeline_destroy(device);
    kiln_vk_transfer_deinit(device);
    kiln_vk_memory_deinit(&device->memory);
    if (device->pipeline_cache) {
      device->vk.vkDestroyPipelineCache(device->device, device->pipeline_cache,
                                        NULL);
    }
    if (device->submit_timeline) {
      device->vk.vkDestroySemaphore(device->device, device->submit_timeline,
                                    NULL);
    }
    device->vk.vkDestroyDevice(device->device, NULL);
  }
  kiln_vk_instance_destroy(&device->instance);
  pthread_mutex_destroy(&device->queue_mutex);
  pthread_mutex_destroy(&device->transfer_mutex);
  pthread_mutex_destroy(&device->reuse.mutex);
  kiln_allocator_free(base->allocator, device);
}

static const kiln_hal_device_vtable_t kDeviceVtable = {
    .destroy = device_destroy,
    .buffer_allocate = kiln_vk_buffer_allocate,
    .command_buffer_create = kiln_vk_command_buffer_create,
    .executable_create = kiln_vk_executable_create,
    .semaphore_create = kiln_vk_semaphore_create,
    .fence_create = kiln_vk_fence_create,
    .queue_submit = kiln_vk_queue_submit,
    .wait_idle = device_wait_idle,
    .write_buffer = kiln_vk_device_write_buffer,
    .read_buffer = kiln_vk_device_read_buffer,
    .pipeline_cache_stats = device_cache_stats,
    .buffer_reuse = kiln_vk_buffer_reuse_take,
    .pipeline_cache_save = kiln_vk_pipeline_cache_save,
};

// Matches "0", "3" (ordinals) or a device UUID (with or without dashes).
static bool path_matches(kiln_string_view_t path, uint32_t ordinal,
                         const kiln_hal_device_info_t* info) {
  if (path.size == 0) return ordinal == 0;
  uint64_t number = 0;
  kiln_status_t status = kiln_string_view_parse_u64(path, &number);
  if (!status) return number == ordinal;
  kiln_status_free(status);
  char want[40], have[40];
  size_t want_length = 0, have_length = 0;
  for (size_t i = 0; i < path.size && want_length < sizeof(want) - 1; ++i) {
    if (path.data[i] != '-') want[want_length++] = (char)tolower(path.data[i]);
  }
  for (const char* c = info->uuid_text; *c && have_length < sizeof(have) - 1;
       ++c) {
    if (*c != '-') have[have_length++] = *c;
  }
  return want_length == have_length && memcmp(want, have, have_length) == 0;
}

static kiln_status_t pick_physical_device(kiln_vk_device_t* device,
                                          kiln_string_view_t path,
                                          uint32_t api_cap) {
  VkInstance instance = device->instance.instance;
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      vkEnumeratePhysicalDevices(instance, &count, NULL),
      "vkEnumeratePhysicalDevices"));
  if (count == 0) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "the Vulkan loader found no devices");
  }
  VkPhysicalDevice handles[32];
  if (count > 32) count = 32;
  VkResult result = vkEnumeratePhysicalDevices(instance, &count, handles);
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    return kiln_vk_result_status(result, "vkEnumeratePhysicalDevices");
  }
  for (uint32_t i = 0; i < count; ++i) {
    kiln_hal_device_info_t info;
    kiln_vk_device_support_t support;
    kiln_status_t status =
        kiln_vk_query_device(instance, handles[i], i, api_cap, &info, &support);
    if (status) {
      kiln_status_free(status);
      continue;
    }
    if (!path_matches(path, i, &info)) continue;
    bool validation = device->base.info.validation_enabled;
    device->base.info = info;
    device->base.info.validation_enabled = validation;
    device->support = support;
    device->physical_device = handles[i];
    return kiln_ok_status();
  }
  return kiln_make_status(KILN_STATUS_NOT_FOUND,
                          "no usable Vulkan device matches '%.*s' (%u "
                          "devices; use an ordinal or a device UUID)",
                          KILN_SV_ARG(path), count);
}

// A validation layer older than an extension reports every use of it as an
// error; under such a layer kiln leaves VK_KHR_cooperative_matrix (1.3.255)
// off, and says so in the device info.
static void drop_features_the_layer_predates(kiln_vk_device_t* device) {
  const uint32_t cooperative_matrix_header = VK_MAKE_API_VERSION(0, 1, 3, 255);
  if (device->instance.validation && device->support.cooperative_matrix &&
      device->instance.validation_layer_version < cooperative_matrix_header) {
    device->support.cooperative_matrix = false;
    // Only the KHR shapes go; the NV extension (kiln's kernels) predates
    // the layer's header and stays.
    kiln_hal_device_info_t* info = &device->base.info;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < info->cooperative_matrix_shape_count; ++i) {
      if (info->cooperative_matrix_shapes[i].nv) {
        info->cooperative_matrix_shapes[kept++] = info->cooperative_matrix_shapes[i];
      }
    }
    info->cooperative_matrix_shape_count = kept;
    size_t used = strlen(device->base.info.triple_reason);
    snprintf(device->base.info.triple_reason + used,
             sizeof(device->base.info.triple_reason) - used,
             "; VK_KHR_cooperative_matrix off: the validation layer predates it");
  }
}

// Variants are then chosen for `triple` (a test knob, see vulkan_uri_options.c).
static void pose_as(kiln_vk_device_t* device,
                    const kiln_target_triple_t* triple) {
  char text[KILN_TARGET_TRIPLE_TEXT_CAPACITY], was[KILN_TARGET_TRIPLE_TEXT_CAPACITY];
  kiln_target_triple_format(triple, text, sizeof(text));
  kiln_target_triple_format(&device->base.info.triple, was, sizeof(was));
  device->base.info.triple = *triple;
  size_t used = strlen(device->base.info.triple_reason);
  snprintf(device->base.info.triple_reason + used,
           sizeof(device->base.info.triple_reason) - used,
           "; posing as %s instead of %s (?triple=): variants for it, "
           "checked against this device's own features and limits",
           text, was);
}

static kiln_status_t create_logical_device(kiln_vk_device_t* device) {
  drop_features_the_layer_predates(device);
  if (kiln_vk_pipeline_stats_requested() && !device->support.pipeline_statistics) {
    fprintf(stderr,
            "kiln vulkan: KILN_VULKAN_PIPELINE_STATS: device '%s' lacks "
            "VK_KHR_pipeline_executable_properties (pipelineExecutableInfo); no statistics\n",
            device->base.info.name);
  }
  device->support.pipeline_statistics =
      device->support.pipeline_statistics && kiln_vk_pipeline_stats_requested();
  const kiln_vk_device_support_t* s = &device->support;
  const char* extensions[8];
  uint32_t extension_count = 0;
  if (s->push_descriptors) {
    extensions[extension_count++] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
  }
  if (s->cooperative_matrix) {
    extensions[extension_count++] = VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME;
  }
  if (s->cooperative_matrix_nv) {
    extensions[extension_count++] = VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME;
  }
  if (s->portability_subset) {
    extensions[extension_count++] = "VK_KHR_portability_subset";
  }
  if (s->timeline_is_khr) {
    extensions[extension_count++] = VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME;
  }
  if (s->robustness2) {
    extensions[extension_count++] = VK_EXT_ROBUSTNESS_2_EXTENSION_NAME;
  }
  if (s->pipeline_statistics) {
    extensions[extension_count++] = VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME;
  }
  bool v12 = s->api_version >= VK_API_VERSION_1_2;
  bool v13 = s->api_version >= VK_API_VERSION_1_3;

  // Only the features kernels use are enabled, plus robust buffer access:
  // modules are untrusted, and an out-of-bounds buffer or texel access must
  // not reach other memory (docs/security.md has the cost).
  VkPhysicalDeviceFeatures2 features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.robustBufferAccess = s->core_features.robustBufferAccess;
  features.features.shaderInt64 = s->core_features.shaderInt64;
  features.features.shaderInt16 = s->core_features.shaderInt16;
  features.features.shaderFloat64 = s->core_features.shaderFloat64;
  VkPhysicalDeviceVulkan11Features v11f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
      .storageBuffer16BitAccess = s->v11.storageBuffer16BitAccess,
      .uniformAndStorageBuffer16BitAccess =
          s->v11.uniformAndStorageBuffer16BitAccess,
  };
  VkPhysicalDeviceVulkan12Features v12f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
      .storageBuffer8BitAccess = s->v12.storageBuffer8BitAccess,
      .uniformAndStorageBuffer8BitAccess =
          s->v12.uniformAndStorageBuffer8BitAccess,
      .shaderFloat16 = s->v12.shaderFloat16,
      .shaderInt8 = s->v12.shaderInt8,
      .timelineSemaphore = s->timeline_semaphore,
      .vulkanMemoryModel = s->v12.vulkanMemoryModel,
      .vulkanMemoryModelDeviceScope = s->v12.vulkanMemoryModelDeviceScope,
      .hostQueryReset = s->v12.hostQueryReset,
  };
  VkPhysicalDeviceVulkan13Features v13f = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
      .subgroupSizeControl = s->v13.subgroupSizeControl,
      .computeFullSubgroups = s->v13.computeFullSubgroups,
      .shaderIntegerDotProduct = s->v13.shaderIntegerDotProduct,
  };
  VkPhysicalDevice16BitStorageFeatures storage16 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES,
      .storageBuffer16BitAccess = s->v11.storageBuffer16BitAccess,
  };
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES,
      .timelineSemaphore = VK_TRUE,
  };
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
      .cooperativeMatrix = VK_TRUE,
  };
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
      .cooperativeMatrix = VK_TRUE,
      .cooperativeMatrixRobustBufferAccess = s->cooperative_matrix_nv_robust,
  };
  VkPhysicalDeviceRobustness2FeaturesEXT robustness2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT,
      .robustBufferAccess2 = s->robust_buffer_access2,
      .robustImageAccess2 = s->robust_image_access2,
  };
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_info = {
      .sType =
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
      .pipelineExecutableInfo = VK_TRUE,
  };
  void* chain = NULL;
  if (s->robustness2) {
    robustness2.pNext = chain;
    chain = &robustness2;
  }
  if (s->pipeline_statistics) {
    executable_info.pNext = chain;
    chain = &executable_info;
  }
  if (v12) {
    v11f.pNext = chain;
    chain = &v11f;
    v12f.pNext = chain;
    chain = &v12f;
  } else {
    storage16.pNext = chain;
    chain = &storage16;
    if (s->timeline_is_khr) {
      timeline.pNext = chain;
      chain = &timeline;
    }
  }
  if (v13) {
    v13f.pNext = chain;
    chain = &v13f;
  }
  if (s->cooperative_matrix) {
    coop.pNext = chain;
    chain = &coop;
  }
  if (s->cooperative_matrix_nv) {
    coop_nv.pNext = chain;
    chain = &coop_nv;
  }
  features.pNext = chain;

  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
      .queueFamilyIndex = s->queue_family,
      .queueCount = 1,
      .pQueuePriorities = &priority,
  };
  VkDeviceCreateInfo create_info = {
      .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
      .pNext = &features,
      .queueCreateInfoCount = 1,
      .pQueueCreateInfos = &queue_info,
      .enabledExtensionCount = extension_count,
      .ppEnabledExtensionNames = extensions,
  };
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      vkCreateDevice(device->physical_device, &create_info, NULL,
                     &device->device),
      "vkCreateDevice"));
  volkLoadDeviceTable(&device->vk, device->device);
  // The HAL leaves buffer indices to the device when it bounds them.
  device->base.info.robust_buffer_access = s->core_features.robustBufferAccess;
  device->vk.vkGetDeviceQueue(device->device, s->queue_family, 0,
                              &device->queue);
  if (!s->timeline_semaphore) {
    // Vulkan 1.1 without timelines: fences, with the values on the host.
    return kiln_vk_host_timeline_create(device);
  }
  if (s->timeline_is_khr) {
    device->wait_semaphores = device->vk.vkWaitSemaphoresKHR;
    device->signal_semaphore = device->vk.vkSignalSemaphoreKHR;
    device->get_semaphore_counter_value =
        device->vk.vkGetSemaphoreCounterValueKHR;
  } else {
    device->wait_semaphores = device->vk.vkWaitSemaphores;
    device->signal_semaphore = device->vk.vkSignalSemaphore;
    device->get_semaphore_counter_value = device->vk.vkGetSemaphoreCounterValue;
  }
  VkSemaphoreTypeCreateInfo type_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
      .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE,
      .initialValue = 0,
  };
  VkSemaphoreCreateInfo semaphore_info = {
      .sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &type_info};
  return kiln_vk_result_status(
      device->vk.vkCreateSemaphore(device->device, &semaphore_info, NULL,
                                   &device->submit_timeline),
      "vkCreateSemaphore (submit timeline)");
}

kiln_status_t kiln_vk_device_create(kiln_string_view_t path,
                                    const kiln_hal_device_options_t* options,
                                    kiln_allocator_t allocator,
                                    kiln_hal_device_t** out_device) {
  *out_device = NULL;
  KILN_RETURN_IF_ERROR(kiln_vk_loader_initialize());
  kiln_vk_device_t* device = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_allocator_calloc(allocator, sizeof(*device), (void**)&device));
  kiln_hal_resource_init(&device->base.resource, &kDeviceVtable);
  device->base.allocator = allocator;
  pthread_mutex_init(&device->queue_mutex, NULL);
  pthread_mutex_init(&device->transfer_mutex, NULL);
  pthread_mutex_init(&device->reuse.mutex, NULL);
  device->print_validation_messages = options->print_validation_messages;
  bool validation =
      options->enable_validation || kiln_vk_validation_from_environment();
  device->base.info.validation_enabled = validation;
  kiln_vk_memory_init(&device->memory, device);
  kiln_vk_uri_options_t uri_options;
  kiln_status_t status = kiln_vk_uri_options_parse(&path, &uri_options);
  if (!status) {
    status = kiln_vk_instance_create(validation, device, uri_options.api_cap,
                                     &device->instance);
  }
  if (!status) {
    status = pick_physical_device(device, path, uri_options.api_cap);
  }
  if (!status && uri_options.pose) pose_as(device, &uri_options.pose_triple);
  if (!status) status = create_logical_device(device);
  device->spin_ns = kiln_vk_wait_spin_ns(uri_options.wait, device->support.cpu_device);
  if (!status) {
    status = kiln_vk_pipeline_cache_create(device, options->pipeline_cache_path);
  }
  if (status) {
    device_destroy(&device->base);
    return status;
  }
  *out_device = &device->base;
  return kiln_ok_status();
}
