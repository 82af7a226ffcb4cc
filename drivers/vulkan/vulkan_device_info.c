// Reads what a physical device reports (properties, features, limits,
// memory heaps, cooperative-matrix shapes) into the HAL's device info and
// decides which optional Vulkan features kiln will use.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulkan_internal.h"

static bool has_extension(const VkExtensionProperties* list, uint32_t count,
                          const char* name) {
  for (uint32_t i = 0; i < count; ++i) {
    if (strcmp(list[i].extensionName, name) == 0) return true;
  }
  return false;
}

static kiln_hal_element_type_t component_to_element(VkComponentTypeKHR type) {
  switch (type) {
    case VK_COMPONENT_TYPE_FLOAT16_KHR: return KILN_HAL_ELEMENT_F16;
    case VK_COMPONENT_TYPE_FLOAT32_KHR: return KILN_HAL_ELEMENT_F32;
    case VK_COMPONENT_TYPE_FLOAT64_KHR: return KILN_HAL_ELEMENT_F64;
    case VK_COMPONENT_TYPE_SINT8_KHR: return KILN_HAL_ELEMENT_I8;
    case VK_COMPONENT_TYPE_SINT16_KHR: return KILN_HAL_ELEMENT_I16;
    case VK_COMPONENT_TYPE_SINT32_KHR: return KILN_HAL_ELEMENT_I32;
    case VK_COMPONENT_TYPE_SINT64_KHR: return KILN_HAL_ELEMENT_I64;
    case VK_COMPONENT_TYPE_UINT8_KHR: return KILN_HAL_ELEMENT_U8;
    case VK_COMPONENT_TYPE_UINT16_KHR: return KILN_HAL_ELEMENT_U16;
    case VK_COMPONENT_TYPE_UINT32_KHR: return KILN_HAL_ELEMENT_U32;
    case VK_COMPONENT_TYPE_UINT64_KHR: return KILN_HAL_ELEMENT_U64;
    case VK_COMPONENT_TYPE_BFLOAT16_KHR: return KILN_HAL_ELEMENT_BF16;
    default: return KILN_HAL_ELEMENT_TYPE_COUNT;
  }
}

static void query_cooperative_matrix(VkInstance instance,
                                     VkPhysicalDevice physical_device,
                                     kiln_hal_device_info_t* info) {
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
      (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)
          vkGetInstanceProcAddr(
              instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  if (!get) return;
  uint32_t count = 0;
  if (get(physical_device, &count, NULL) != VK_SUCCESS || count == 0) return;
  VkCooperativeMatrixPropertiesKHR* shapes = calloc(count, sizeof(*shapes));
  if (!shapes) return;
  for (uint32_t i = 0; i < count; ++i) {
    shapes[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
  }
  if (get(physical_device, &count, shapes) == VK_SUCCESS) {
    for (uint32_t i = 0; i < count; ++i) {
      if (shapes[i].scope != VK_SCOPE_SUBGROUP_KHR ||
          info->cooperative_matrix_shape_count ==
              KILN_HAL_MAX_COOPERATIVE_MATRIX_SHAPES) {
        continue;
      }
      kiln_hal_cooperative_matrix_shape_t* shape =
          &info->cooperative_matrix_shapes[info->cooperative_matrix_shape_count];
      shape->m = shapes[i].MSize;
      shape->n = shapes[i].NSize;
      shape->k = shapes[i].KSize;
      shape->a_type = component_to_element(shapes[i].AType);
      shape->c_type = component_to_element(shapes[i].ResultType);
      if (shape->a_type == KILN_HAL_ELEMENT_TYPE_COUNT ||
          shape->c_type == KILN_HAL_ELEMENT_TYPE_COUNT) {
        continue;  // a component type kiln has no name for
      }
      info->cooperative_matrix_shape_count++;
    }
  }
  free(shapes);
}

// The NV shapes, and whether one is gemm_coopmat's (16x16x16 f16 x f16 ->
// f32, subgroup scope).
static bool query_cooperative_matrix_nv(VkInstance instance,
                                        VkPhysicalDevice physical_device,
                                        kiln_hal_device_info_t* info) {
  PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
      (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)vkGetInstanceProcAddr(
          instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
  if (!get) return false;
  uint32_t count = 0;
  if (get(physical_device, &count, NULL) != VK_SUCCESS || count == 0) return false;
  VkCooperativeMatrixPropertiesNV* shapes = calloc(count, sizeof(*shapes));
  if (!shapes) return false;
  for (uint32_t i = 0; i < count; ++i) {
    shapes[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  }
  bool kernel_shape = false;
  if (get(physical_device, &count, shapes) == VK_SUCCESS) {
    for (uint32_t i = 0; i < count; ++i) {
      const VkCooperativeMatrixPropertiesNV* p = &shapes[i];
      if (p->scope != VK_SCOPE_SUBGROUP_NV) continue;
      if (p->MSize == 16 && p->NSize == 16 && p->KSize == 16 &&
          p->AType == VK_COMPONENT_TYPE_FLOAT16_NV && p->BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
          p->CType == VK_COMPONENT_TYPE_FLOAT32_NV && p->DType == VK_COMPONENT_TYPE_FLOAT32_NV) {
        kernel_shape = true;
      }
      if (info->cooperative_matrix_shape_count == KILN_HAL_MAX_COOPERATIVE_MATRIX_SHAPES) continue;
      kiln_hal_cooperative_matrix_shape_t* shape =
          &info->cooperative_matrix_shapes[info->cooperative_matrix_shape_count];
      shape->m = p->MSize;
      shape->n = p->NSize;
      shape->k = p->KSize;
      // The NV component types are the KHR ones' values (the KHR enum aliases them).
      shape->a_type = component_to_element((VkComponentTypeKHR)p->AType);
      shape->c_type = component_to_element((VkComponentTypeKHR)p->DType);
      shape->nv = true;
      if (shape->a_type != KILN_HAL_ELEMENT_TYPE_COUNT &&
          shape->c_type != KILN_HAL_ELEMENT_TYPE_COUNT) {
        info->cooperative_matrix_shape_count++;
      }
    }
  }
  free(shapes);
  return kernel_shape;
}

static void format_uuid(const uint8_t uuid[16], char* out, size_t size) {
  snprintf(out, size,
           "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
           uuid[0], uuid[1], uuid[2], uuid[3], uuid[4], uuid[5], uuid[6],
           uuid[7], uuid[8], uuid[9], uuid[10], uuid[11], uuid[12], uuid[13],
           uuid[14], uuid[15]);
}

kiln_status_t kiln_vk_query_device(VkInstance instance,
                                   VkPhysicalDevice physical_device,
                                   uint32_t ordinal, uint32_t api_cap,
                                   kiln_hal_device_info_t* out_info,
                                   kiln_vk_device_support_t* out_support) {
  memset(out_info, 0, sizeof(*out_info));
  memset(out_support, 0, sizeof(*out_support));
  kiln_hal_device_info_t* info = out_info;
  kiln_vk_device_support_t* support = out_support;

  VkPhysicalDeviceProperties basic;
  vkGetPhysicalDeviceProperties(physical_device, &basic);
  // Under a cap (KILN_VULKAN_API_VERSION, ?api=) the device is used as a
  // plain device of that version: no later core, no optional extension.
  uint32_t api = basic.apiVersion;
  if (api_cap && api_cap < api) api = api_cap;
  support->api_version = api;
  support->api_cap = api_cap;
  support->cpu_device = basic.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU;
  support->min_texel_buffer_offset_alignment =
      basic.limits.minTexelBufferOffsetAlignment
          ? basic.limits.minTexelBufferOffsetAlignment
          : 1;
  support->max_texel_buffer_elements = basic.limits.maxTexelBufferElements;
  memcpy(support->pipeline_cache_uuid, basic.pipelineCacheUUID, VK_UUID_SIZE);
  if (basic.apiVersion < VK_API_VERSION_1_1) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "device %u '%s' supports Vulkan %u.%u; kiln needs "
                            "1.1",
                            ordinal, basic.deviceName,
                            VK_API_VERSION_MAJOR(basic.apiVersion),
                            VK_API_VERSION_MINOR(basic.apiVersion));
  }
  bool v12 = api >= VK_API_VERSION_1_2;
  bool v13 = api >= VK_API_VERSION_1_3;

  uint32_t extension_count = 0;
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      vkEnumerateDeviceExtensionProperties(physical_device, NULL,
                                           &extension_count, NULL),
      "vkEnumerateDeviceExtensionProperties"));
  VkExtensionProperties* extensions =
      calloc(extension_count ? extension_count : 1, sizeof(*extensions));
  if (!extensions) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "out of memory listing device extensions");
  }
  VkResult result = vkEnumerateDeviceExtensionProperties(
      physical_device, NULL, &extension_count, extensions);
  if (result != VK_SUCCESS && result != VK_INCOMPLETE) {
    free(extensions);
    return kiln_vk_result_status(result, "vkEnumerateDeviceExtensionProperties");
  }
#define HAS(name) (!api_cap && has_extension(extensions, extension_count, name))
  support->push_descriptors = HAS(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  support->cooperative_matrix = HAS(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  support->cooperative_matrix_nv = HAS(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  // Required wherever the device lists it, cap or not.
  support->portability_subset =
      has_extension(extensions, extension_count, "VK_KHR_portability_subset");
  // A query only (nothing is enabled), so it stays under a cap: the driver
  // id names the driver for the triple.
  support->driver_properties =
      v12 || has_extension(extensions, extension_count,
                           VK_KHR_DRIVER_PROPERTIES_EXTENSION_NAME);
  bool timeline_ext = HAS(VK_KHR_TIMELINE_SEMAPHORE_EXTENSION_NAME);
  bool size_control_ext = HAS(VK_EXT_SUBGROUP_SIZE_CONTROL_EXTENSION_NAME);
  support->robustness2 = HAS(VK_EXT_ROBUSTNESS_2_EXTENSION_NAME);
  support->pipeline_statistics =
      HAS(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
#undef HAS
  free(extensions);

  // Properties.
  VkPhysicalDeviceIDProperties id_props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ID_PROPERTIES};
  VkPhysicalDeviceSubgroupProperties subgroup_props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
      .pNext = &id_props};
  VkPhysicalDeviceDriverProperties driver_props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  VkPhysicalDeviceSubgroupSizeControlProperties size_props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES};
  void* chain = &subgroup_props;
  if (support->driver_properties) {
    driver_props.pNext = chain;
    chain = &driver_props;
  }
  if (v13 || size_control_ext) {
    size_props.pNext = chain;
    chain = &size_props;
  }
  VkPhysicalDeviceProperties2 props = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, .pNext = chain};
  vkGetPhysicalDeviceProperties2(physical_device, &props);

  // Features: the 1.1/1.2/1.3 aggregate structs where the device has them,
  // the KHR timeline struct on a 1.1 device.
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR coop_features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop_nv_features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV};
  VkPhysicalDeviceTimelineSemaphoreFeatures timeline_features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_TIMELINE_SEMAPHORE_FEATURES};
  VkPhysicalDevice16BitStorageFeatures storage16 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES};
  VkPhysicalDeviceRobustness2FeaturesEXT robustness2 = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_ROBUSTNESS_2_FEATURES_EXT};
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable_features = {
      .sType =
          VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  support->v11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
  support->v12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
  support->v13.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES;
  chain = NULL;
  if (v12) {
    support->v11.pNext = chain;
    chain = &support->v11;
    support->v12.pNext = chain;
    chain = &support->v12;
  } else {
    storage16.pNext = chain;
    chain = &storage16;
    if (timeline_ext) {
      timeline_features.pNext = chain;
      chain = &timeline_features;
    }
  }
  if (v13) {
    support->v13.pNext = chain;
    chain = &support->v13;
  }
  if (support->cooperative_matrix) {
    coop_features.pNext = chain;
    chain = &coop_features;
  }
  if (support->cooperative_matrix_nv) {
    coop_nv_features.pNext = chain;
    chain = &coop_nv_features;
  }
  if (support->robustness2) {
    robustness2.pNext = chain;
    chain = &robustness2;
  }
  if (support->pipeline_statistics) {
    executable_features.pNext = chain;
    chain = &executable_features;
  }
  VkPhysicalDeviceFeatures2 features = {
      .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2, .pNext = chain};
  vkGetPhysicalDeviceFeatures2(physical_device, &features);
  support->core_features = features.features;
  if (!v12) {
    support->v11.storageBuffer16BitAccess = storage16.storageBuffer16BitAccess;
    support->v11.uniformAndStorageBuffer16BitAccess =
        storage16.uniformAndStorageBuffer16BitAccess;
    support->v12.timelineSemaphore = timeline_features.timelineSemaphore;
    support->timeline_is_khr = timeline_features.timelineSemaphore;
  }
  support->v11.pNext = support->v12.pNext = support->v13.pNext = NULL;
  if (api_cap && !v12) {
    // 16-bit storage is optional in 1.1 and many phones lack it.
    support->v11.storageBuffer16BitAccess = VK_FALSE;
    support->v11.uniformAndStorageBuffer16BitAccess = VK_FALSE;
  }
  support->timeline_semaphore = support->v12.timelineSemaphore;
  support->robust_buffer_access2 =
      support->robustness2 && robustness2.robustBufferAccess2 &&
      support->core_features.robustBufferAccess;
  support->robust_image_access2 =
      support->robustness2 && robustness2.robustImageAccess2;
  support->robustness2 =
      support->robust_buffer_access2 || support->robust_image_access2;
  support->cooperative_matrix =
      support->cooperative_matrix && coop_features.cooperativeMatrix;
  support->pipeline_statistics =
      support->pipeline_statistics && executable_features.pipelineExecutableInfo;
  // gemm_coopmat's SPIR-V also declares Float16 and VulkanMemoryModel.
  support->cooperative_matrix_nv = support->cooperative_matrix_nv &&
                                   coop_nv_features.cooperativeMatrix &&
                                   support->v12.shaderFloat16 &&
                                   support->v12.vulkanMemoryModel;
  support->cooperative_matrix_nv_robust =
      support->cooperative_matrix_nv &&
      coop_nv_features.cooperativeMatrixRobustBufferAccess &&
      support->core_features.robustBufferAccess;
  support->subgroup_size_control =
      (v13 || size_control_ext) && support->v13.subgroupSizeControl &&
      (size_props.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT);
  if (!v13 && size_control_ext) {
    // Features of the EXT are not queried on pre-1.3 devices: stay off.
    support->subgroup_size_control = false;
  }

  // Queue: the first family with compute.
  uint32_t family_count = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count,
                                           NULL);
  VkQueueFamilyProperties families[16];
  if (family_count > 16) family_count = 16;
  vkGetPhysicalDeviceQueueFamilyProperties(physical_device, &family_count,
                                           families);
  support->queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < family_count; ++i) {
    if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      support->queue_family = i;
      support->timestamp_valid_bits = families[i].timestampValidBits;
      break;
    }
  }
  if (support->queue_family == UINT32_MAX) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "device %u '%s' has no compute queue", ordinal,
                            basic.deviceName);
  }
  vkGetPhysicalDeviceMemoryProperties(physical_device, &support->memory);

  // The HAL's view.
  snprintf(info->driver, sizeof(info->driver), "vulkan");
  snprintf(info->path, sizeof(info->path), "%u", ordinal);
  snprintf(info->name, sizeof(info->name), "%s", basic.deviceName);
  if (support->driver_properties) {
    snprintf(info->driver_name, sizeof(info->driver_name), "%s",
             driver_props.driverName);
    snprintf(info->driver_info, sizeof(info->driver_info), "%s",
             driver_props.driverInfo);
    info->driver_id = driver_props.driverID;
  }
  info->driver_version = basic.driverVersion;
  info->vendor_id = basic.vendorID;
  info->device_id = basic.deviceID;
  memcpy(info->uuid, id_props.deviceUUID, 16);
  format_uuid(info->uuid, info->uuid_text, sizeof(info->uuid_text));
  info->api_major = VK_API_VERSION_MAJOR(api);
  info->api_minor = VK_API_VERSION_MINOR(api);
  info->api_patch = api == basic.apiVersion ? VK_API_VERSION_PATCH(api) : 0;

  kiln_target_features_t f = 0;
  if (support->v12.shaderFloat16) f |= KILN_TARGET_FEATURE_FP16;
  if (support->core_features.shaderFloat64) f |= KILN_TARGET_FEATURE_FP64;
  if (support->core_features.shaderInt64) f |= KILN_TARGET_FEATURE_INT64;
  if (support->core_features.shaderInt16) f |= KILN_TARGET_FEATURE_INT16;
  if (support->v12.shaderInt8) f |= KILN_TARGET_FEATURE_INT8_ARITHMETIC;
  if (support->v11.storageBuffer16BitAccess) {
    f |= KILN_TARGET_FEATURE_STORAGE_16BIT;
  }
  if (support->v12.storageBuffer8BitAccess) {
    f |= KILN_TARGET_FEATURE_STORAGE_8BIT;
  }
  if (support->v13.shaderIntegerDotProduct) f |= KILN_TARGET_FEATURE_INT8_DOT;
  const VkSubgroupFeatureFlags wanted_ops = VK_SUBGROUP_FEATURE_BASIC_BIT |
                                            VK_SUBGROUP_FEATURE_ARITHMETIC_BIT |
                                            VK_SUBGROUP_FEATURE_SHUFFLE_BIT |
                                            VK_SUBGROUP_FEATURE_BALLOT_BIT;
  if ((subgroup_props.supportedOperations & wanted_ops) == wanted_ops &&
      (subgroup_props.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT)) {
    f |= KILN_TARGET_FEATURE_SUBGROUP_OPS;
  }
  if (support->subgroup_size_control) {
    f |= KILN_TARGET_FEATURE_SUBGROUP_SIZE_CONTROL;
  }
  if (support->timeline_semaphore) f |= KILN_TARGET_FEATURE_TIMELINE_SEMAPHORE;
  if (support->push_descriptors) f |= KILN_TARGET_FEATURE_PUSH_DESCRIPTORS;
  info->features = f;

  const VkPhysicalDeviceLimits* limits = &basic.limits;
  info->limits.subgroup_size = subgroup_props.subgroupSize;
  info->limits.max_workgroup_invocations = limits->maxComputeWorkGroupInvocations;
  info->limits.max_shared_memory_bytes = limits->maxComputeSharedMemorySize;
  info->limits.max_push_constant_bytes = limits->maxPushConstantsSize;
  info->limits.max_storage_buffer_range = limits->maxStorageBufferRange;
  info->min_subgroup_size = subgroup_props.subgroupSize;
  info->max_subgroup_size = subgroup_props.subgroupSize;
  if (support->subgroup_size_control) {
    info->min_subgroup_size = size_props.minSubgroupSize;
    info->max_subgroup_size = size_props.maxSubgroupSize;
  }
  for (int i = 0; i < 3; ++i) {
    info->max_workgroup_count[i] = limits->maxComputeWorkGroupCount[i];
    info->max_workgroup_size[i] = limits->maxComputeWorkGroupSize[i];
  }
  info->min_storage_buffer_offset_alignment =
      limits->minStorageBufferOffsetAlignment
          ? limits->minStorageBufferOffsetAlignment
          : 1;
  info->timestamps = support->timestamp_valid_bits > 0 &&
                     limits->timestampComputeAndGraphics;
  info->timestamp_period_ns = limits->timestampPeriod;
  if (support->cooperative_matrix) {
    query_cooperative_matrix(instance, physical_device, info);
  }
  // Kiln's cooperative-matrix kernels are SPV_NV_cooperative_matrix (the
  // form Debian's glslang and SPIRV-Tools build and validate), so the
  // target feature means the NV extension with their 16x16x16 shape.
  if (support->cooperative_matrix_nv &&
      !query_cooperative_matrix_nv(instance, physical_device, info)) {
    support->cooperative_matrix_nv = support->cooperative_matrix_nv_robust = false;
  }
  if (support->cooperative_matrix_nv) {
    info->features |= KILN_TARGET_FEATURE_COOPERATIVE_MATRIX;
  }
  info->cooperative_matrix_robust_buffer_access = support->cooperative_matrix_nv_robust;
  info->memory_heap_count = support->memory.memoryHeapCount;
  if (info->memory_heap_count > KILN_HAL_MAX_MEMORY_HEAPS) {
    info->memory_heap_count = KILN_HAL_MAX_MEMORY_HEAPS;
  }
  for (uint32_t i = 0; i < info->memory_heap_count; ++i) {
    info->memory_heaps[i].size = support->memory.memoryHeaps[i].size;
    info->memory_heaps[i].device_local =
        support->memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT;
  }

  kiln_target_device_facts_t facts = {
      .vendor_id = info->vendor_id,
      .device_id = info->device_id,
      .device_name = info->name,
      .driver_id = info->driver_id,
      .os = NULL,
  };
  kiln_target_triple_derive(&facts, &info->triple, info->triple_reason,
                            sizeof(info->triple_reason));
  snprintf(info->driver_mechanisms, sizeof(info->driver_mechanisms),
           "%s; %s; %s%s%s",
           support->timeline_semaphore
               ? (support->timeline_is_khr ? "timeline semaphores (KHR)"
                                           : "timeline semaphores")
               : "no timeline semaphores: fences, timeline kept on the host",
           support->push_descriptors ? "push descriptors"
                                     : "descriptor sets (no push descriptors)",
           support->subgroup_size_control ? "subgroup size control"
                                          : "fixed subgroup size",
           v12 && support->v12.vulkanMemoryModel ? "; Vulkan memory model" : "",
           support->portability_subset ? "; portability subset" : "");
  if (api_cap) {
    size_t used = strlen(info->triple_reason);
    snprintf(info->triple_reason + used, sizeof(info->triple_reason) - used,
             "; used as plain Vulkan %u.%u (KILN_VULKAN_API_VERSION or "
             "?api=): no later features or extensions",
             info->api_major, info->api_minor);
  }
  return kiln_ok_status();
}
