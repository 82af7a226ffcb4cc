// The validation plumbing itself: a message sent through the instance's
// debug-utils messenger is counted on the device and kept as the last
// message, which is what every other test asserts to be zero.
#include <string.h>

#include "../../drivers/vulkan/vulkan_internal.h"
#include "test_device.h"

KILN_TEST(ValidationTest, MessengerMessagesAreCountedOnTheDevice) {
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  options.enable_validation = true;
  options.print_validation_messages = false;
  kiln_hal_device_t* device = kiln_test_device_create_with(&options);
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
