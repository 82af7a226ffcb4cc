// Loading the Vulkan loader, instance creation, the validation layer and its
// debug messenger, and VkResult -> status.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulkan_internal.h"

static pthread_once_t g_loader_once = PTHREAD_ONCE_INIT;
static VkResult g_loader_result = VK_ERROR_INITIALIZATION_FAILED;

// Once loaded, drivers stay loaded: an instance that lives as long as the
// process keeps the loader from unloading ICDs when the last device goes.
// NVIDIA's ICD does not survive repeated unload/reload in one process
// (vkCreateInstance fails with VK_ERROR_INCOMPATIBLE_DRIVER after about
// twenty cycles, seen on the H200 with driver 580), and a driver that stays
// mapped also lets LeakSanitizer name leaks inside it.
static VkInstance g_anchor_instance = VK_NULL_HANDLE;

// volk keeps instance-level functions in process globals. Rewriting them for
// every instance raced with other threads calling them (TSan), so they are
// loaded once, under this lock. They are the loader's trampolines, valid for
// every instance; the one instance extension kiln uses (debug utils) is
// looked up per instance instead (kiln_vk_instance_t).
static pthread_mutex_t g_volk_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_instance_functions_loaded = false;

static void load_instance_functions(VkInstance instance) {
  pthread_mutex_lock(&g_volk_lock);
  if (!g_instance_functions_loaded) {
    volkLoadInstanceOnly(instance);
    g_instance_functions_loaded = true;
  }
  pthread_mutex_unlock(&g_volk_lock);
}

static uint32_t instance_api_version(void) {
  uint32_t loader_version = volkGetInstanceVersion();
  return loader_version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3
                                              : loader_version;
}

static void load_once(void) {
  g_loader_result = volkInitialize();
  if (g_loader_result != VK_SUCCESS) return;
  // The same API version as real instances: the loader may hide functions
  // of versions an instance did not ask for.
  VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                           .pApplicationName = "kiln (driver anchor)",
                           .apiVersion = instance_api_version()};
  // With debug utils enabled (the loader implements it) so volk's globals
  // for it are set too, for code that calls them directly.
  const char* debug_utils = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
  VkInstanceCreateInfo info = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app,
                               .enabledExtensionCount = 1,
                               .ppEnabledExtensionNames = &debug_utils};
  if (vkCreateInstance(&info, NULL, &g_anchor_instance) != VK_SUCCESS) {
    info.enabledExtensionCount = 0;
    // A failure here is reported by the real instance creation later.
    if (vkCreateInstance(&info, NULL, &g_anchor_instance) != VK_SUCCESS) {
      g_anchor_instance = VK_NULL_HANDLE;
      return;
    }
  }
  load_instance_functions(g_anchor_instance);
}

kiln_status_t kiln_vk_loader_initialize(void) {
  pthread_once(&g_loader_once, load_once);
  if (g_loader_result != VK_SUCCESS) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "the Vulkan loader (libvulkan.so.1) could not be "
                            "opened: install libvulkan1 and a Vulkan driver "
                            "(e.g. mesa-vulkan-drivers)");
  }
  if (volkGetInstanceVersion() < VK_API_VERSION_1_1) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "the Vulkan loader supports only Vulkan %u.%u; "
                            "kiln needs 1.1",
                            VK_API_VERSION_MAJOR(volkGetInstanceVersion()),
                            VK_API_VERSION_MINOR(volkGetInstanceVersion()));
  }
  return kiln_ok_status();
}

const char* kiln_vk_result_name(VkResult result) {
  switch (result) {
#define CASE(x) case x: return #x
    CASE(VK_SUCCESS);
    CASE(VK_NOT_READY);
    CASE(VK_TIMEOUT);
    CASE(VK_INCOMPLETE);
    CASE(VK_ERROR_OUT_OF_HOST_MEMORY);
    CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY);
    CASE(VK_ERROR_INITIALIZATION_FAILED);
    CASE(VK_ERROR_DEVICE_LOST);
    CASE(VK_ERROR_MEMORY_MAP_FAILED);
    CASE(VK_ERROR_LAYER_NOT_PRESENT);
    CASE(VK_ERROR_EXTENSION_NOT_PRESENT);
    CASE(VK_ERROR_FEATURE_NOT_PRESENT);
    CASE(VK_ERROR_INCOMPATIBLE_DRIVER);
    CASE(VK_ERROR_TOO_MANY_OBJECTS);
    CASE(VK_ERROR_FORMAT_NOT_SUPPORTED);
    CASE(VK_ERROR_FRAGMENTED_POOL);
    CASE(VK_ERROR_OUT_OF_POOL_MEMORY);
    CASE(VK_ERROR_INVALID_SHADER_NV);
#undef CASE
    default: return "VkResult";
  }
}

kiln_status_t kiln_vk_result_status(VkResult result, const char* what) {
  if (result == VK_SUCCESS) return kiln_ok_status();
  kiln_status_code_t code = KILN_STATUS_INTERNAL;
  switch (result) {
    case VK_TIMEOUT: code = KILN_STATUS_DEADLINE_EXCEEDED; break;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_TOO_MANY_OBJECTS:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL: code = KILN_STATUS_RESOURCE_EXHAUSTED; break;
    case VK_ERROR_DEVICE_LOST: code = KILN_STATUS_ABORTED; break;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_INCOMPATIBLE_DRIVER: code = KILN_STATUS_UNAVAILABLE; break;
    default: break;
  }
  return kiln_make_status(code, "%s failed: %s (%d)", what,
                          kiln_vk_result_name(result), (int)result);
}

bool kiln_vk_validation_from_environment(void) {
  const char* value = getenv("KILN_VULKAN_VALIDATION");
  return value && value[0] && strcmp(value, "0") != 0;
}

// The messenger reports into the device; its user data is the device, which
// outlives the instance's messenger.
static VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity,
    VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT* data, void* user_data) {
  kiln_vk_device_t* device = user_data;
  const char* message = data && data->pMessage ? data->pMessage : "(none)";
  bool print = true;
  if (device) {
    kiln_hal_device_record_validation_message(&device->base, message);
    print = device->print_validation_messages;
  }
  if (print) {
    fprintf(stderr, "[kiln vulkan validation %s] %s\n",
            severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT
                ? "error"
                : "warning",
            message);
  }
  (void)types;
  return VK_FALSE;
}

static bool layer_available(const char* name, uint32_t* out_version) {
  uint32_t count = 0;
  if (vkEnumerateInstanceLayerProperties(&count, NULL) != VK_SUCCESS) {
    return false;
  }
  VkLayerProperties* layers = calloc(count ? count : 1, sizeof(*layers));
  if (!layers) return false;
  bool found = false;
  if (vkEnumerateInstanceLayerProperties(&count, layers) == VK_SUCCESS) {
    for (uint32_t i = 0; i < count; ++i) {
      if (strcmp(layers[i].layerName, name) == 0) {
        found = true;
        *out_version = layers[i].specVersion;
      }
    }
  }
  free(layers);
  return found;
}

kiln_status_t kiln_vk_instance_create(bool validation,
                                      struct kiln_vk_device_t* device,
                                      uint32_t api_cap,
                                      kiln_vk_instance_t* out_instance) {
  memset(out_instance, 0, sizeof(*out_instance));
  KILN_RETURN_IF_ERROR(kiln_vk_loader_initialize());
  static const char* kLayer = "VK_LAYER_KHRONOS_validation";
  uint32_t layer_version = 0;
  if (validation && !layer_available(kLayer, &layer_version)) {
    return kiln_make_status(KILN_STATUS_UNAVAILABLE,
                            "validation was requested but %s is not "
                            "installed (apt-get install vulkan-validationlayers)",
                            kLayer);
  }
  uint32_t api_version = instance_api_version();
  // Under a cap the instance asks for that version, so the validation layer
  // reports any use of something newer.
  if (api_cap && api_cap < api_version) api_version = api_cap;
  VkApplicationInfo app = {
      .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
      .pApplicationName = "kiln",
      .pEngineName = "kiln",
      .apiVersion = api_version,
  };
  const char* extensions[1] = {VK_EXT_DEBUG_UTILS_EXTENSION_NAME};
  VkDebugUtilsMessengerCreateInfoEXT messenger_info = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
      .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                         VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
      .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                     VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
      .pfnUserCallback = on_debug_message,
      .pUserData = device,
  };
  VkInstanceCreateInfo create_info = {
      .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
      // Also catches messages from instance creation and destruction.
      .pNext = validation ? &messenger_info : NULL,
      .pApplicationInfo = &app,
      .enabledLayerCount = validation ? 1 : 0,
      .ppEnabledLayerNames = validation ? &kLayer : NULL,
      .enabledExtensionCount = validation ? 1 : 0,
      .ppEnabledExtensionNames = validation ? extensions : NULL,
  };
  VkInstance instance = VK_NULL_HANDLE;
  KILN_RETURN_IF_ERROR(kiln_vk_result_status(
      vkCreateInstance(&create_info, NULL, &instance), "vkCreateInstance"));
  load_instance_functions(instance);  // a no-op after the first instance
  out_instance->instance = instance;
  out_instance->validation = validation;
  out_instance->validation_layer_version = layer_version;
  if (validation) {
    out_instance->create_messenger =
        (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            instance, "vkCreateDebugUtilsMessengerEXT");
    out_instance->destroy_messenger =
        (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
            instance, "vkDestroyDebugUtilsMessengerEXT");
    VkResult result = VK_ERROR_EXTENSION_NOT_PRESENT;
    if (out_instance->create_messenger && out_instance->destroy_messenger) {
      result = out_instance->create_messenger(instance, &messenger_info, NULL,
                                              &out_instance->messenger);
    }
    if (result != VK_SUCCESS) {
      kiln_vk_instance_destroy(out_instance);
      return kiln_vk_result_status(result, "vkCreateDebugUtilsMessengerEXT");
    }
  }
  return kiln_ok_status();
}

void kiln_vk_instance_destroy(kiln_vk_instance_t* instance) {
  if (!instance->instance) return;
  if (instance->messenger) {
    instance->destroy_messenger(instance->instance, instance->messenger,
                                NULL);
  }
  vkDestroyInstance(instance->instance, NULL);
  memset(instance, 0, sizeof(*instance));
}
