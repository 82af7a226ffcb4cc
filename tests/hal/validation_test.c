// The validation plumbing itself: a message sent through the instance's
// debug-utils messenger is counted on the device and kept as the last
// message, which is what every other test asserts to be zero.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/drivers/registration.h"

#include "../../drivers/vulkan/vulkan_internal.h"
#include "test_device.h"

KILN_TEST(ValidationTest, MessengerMessagesAreCountedOnTheDevice) {
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  options.enable_validation = true;
  options.print_validation_messages = false;
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  KILN_ASSERT_OK(kiln_drivers_register_all(registry));
  const char* uri = getenv("KILN_TEST_DEVICE");
  kiln_hal_device_t* device = NULL;
  kiln_status_t status = kiln_hal_create_device(
      registry, kiln_make_cstring_view(uri && uri[0] ? uri : "vulkan"),
      &options, kiln_allocator_system(), &device);
  if (kiln_status_code(status) == KILN_STATUS_UNAVAILABLE &&
      strstr(kiln_status_message(status), "is not installed")) {
    // No validation layer on this machine: nothing to check here (the CI
    // machine has it, and this test runs there).
    fprintf(stderr, "skipped: %s\n", kiln_status_message(status));
    kiln_status_free(status);
    return;
  }
  KILN_ASSERT_OK(status);
  KILN_ASSERT_TRUE(kiln_hal_device_info(device)->validation_enabled);
  KILN_EXPECT_EQ(kiln_hal_device_validation_message_count(device), 0);
  kiln_vk_device_t* vk_device = kiln_vk_device_cast(device);
  VkDebugUtilsMessengerCallbackDataEXT data = {
      .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CALLBACK_DATA_EXT,
      .pMessage = "synthetic validation error",
  };
  vkSubmitDebugUtilsMessageEXT(vk_device->instance.instance,
                               VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                               VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
                               &data);
  KILN_EXPECT_EQ(kiln_hal_device_validation_message_count(device), 1);
  KILN_EXPECT_STREQ(kiln_hal_device_last_validation_message(device),
                    "synthetic validation error");
  // Cleared so the fixture's zero-message check passes for this test only.
  device->validation_message_count = 0;
  kiln_test_device_release(device);
}
