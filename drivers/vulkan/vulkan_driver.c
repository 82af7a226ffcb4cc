// The "vulkan" driver factory: availability, device listing, creation.
#include <stdio.h>
#include <string.h>

#include "kiln/drivers/vulkan.h"
#include "vulkan_internal.h"

static kiln_status_t query_available(void* self) {
  (void)self;
  return kiln_vk_loader_initialize();
}

static kiln_status_t enumerate_devices(void* self, kiln_allocator_t allocator,
                                       kiln_hal_device_entry_t** out_entries,
                                       size_t* out_count) {
  (void)self;
  *out_entries = NULL;
  *out_count = 0;
  uint32_t api_cap = 0;
  KILN_RETURN_IF_ERROR(kiln_vk_api_cap_from_environment(&api_cap));
  kiln_vk_instance_t instance;
  KILN_RETURN_IF_ERROR(
      kiln_vk_instance_create(false, NULL, api_cap, &instance));
  uint32_t count = 0;
  VkPhysicalDevice handles[32];
  kiln_status_t status = kiln_vk_result_status(
      vkEnumeratePhysicalDevices(instance.instance, &count, NULL),
      "vkEnumeratePhysicalDevices");
  if (!status && count > 32) count = 32;
  if (!status && count) {
    VkResult result =
        vkEnumeratePhysicalDevices(instance.instance, &count, handles);
    if (result != VK_INCOMPLETE) {
      status = kiln_vk_result_status(result, "vkEnumeratePhysicalDevices");
    }
  }
  kiln_hal_device_entry_t* entries = NULL;
  if (!status && count) {
    status = kiln_allocator_calloc_array(allocator, count, sizeof(*entries),
                                         (void**)&entries);
  }
  size_t used = 0;
  for (uint32_t i = 0; !status && i < count; ++i) {
    kiln_hal_device_info_t info;
    kiln_vk_device_support_t support;
    kiln_status_t device_status =
        kiln_vk_query_device(instance.instance, handles[i], i, api_cap, &info,
                             &support);
    kiln_hal_device_entry_t* entry = &entries[used++];
    snprintf(entry->path, sizeof(entry->path), "%u", i);
    if (device_status) {
      // Listed with the reason instead of the name, so users see why.
      char reason[200];
      kiln_status_format(device_status, reason, sizeof(reason));
      kiln_status_free(device_status);
      snprintf(entry->name, sizeof(entry->name), "(unusable: %s)", reason);
      snprintf(entry->triple, sizeof(entry->triple), "unknown-unknown-unknown");
      continue;
    }
    snprintf(entry->name, sizeof(entry->name), "%s", info.name);
    snprintf(entry->uuid_text, sizeof(entry->uuid_text), "%s", info.uuid_text);
    kiln_target_triple_format(&info.triple, entry->triple,
                              sizeof(entry->triple));
  }
  kiln_vk_instance_destroy(&instance);
  if (status) {
    kiln_allocator_free(allocator, entries);
    return status;
  }
  *out_entries = entries;
  *out_count = used;
  return kiln_ok_status();
}

static kiln_status_t create_device(void* self, kiln_string_view_t path,
                                   const kiln_hal_device_options_t* options,
                                   kiln_allocator_t allocator,
                                   kiln_hal_device_t** out_device) {
  (void)self;
  return kiln_vk_device_create(path, options, allocator, out_device);
}

static const kiln_hal_driver_factory_t kVulkanFactory = {
    .name = "vulkan",
    .description = "Vulkan 1.1+ compute (loader opened at run time)",
    .self = NULL,
    .query_available = query_available,
    .enumerate_devices = enumerate_devices,
    .create_device = create_device,
};

const kiln_hal_driver_factory_t* kiln_hal_vulkan_driver_factory(void) {
  return &kVulkanFactory;
}

kiln_status_t kiln_hal_vulkan_driver_register(
    kiln_hal_driver_registry_t* registry) {
  return kiln_hal_driver_registry_register(registry, &kVulkanFactory);
}
