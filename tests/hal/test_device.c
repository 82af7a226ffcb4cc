#include "test_device.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/base/file.h"
#include "kiln/drivers/registration.h"

#ifndef KILN_HAL_TEST_KERNEL_DIR
#error "KILN_HAL_TEST_KERNEL_DIR must name the compiled kernels' folder"
#endif

const char* kiln_test_device_uri(void) {
  const char* uri = getenv("KILN_TEST_DEVICE");
  return uri && uri[0] ? uri : "vulkan";
}

kiln_hal_device_t* kiln_test_device_create_with(
    const kiln_hal_device_options_t* options) {
  return kiln_test_device_create_at(kiln_test_device_uri(), options);
}

kiln_hal_device_t* kiln_test_device_create_at(
    const char* uri, const kiln_hal_device_options_t* options) {
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  KILN_ASSERT_OK(kiln_drivers_register_all(registry));
  kiln_hal_device_t* device = NULL;
  KILN_ASSERT_OK(kiln_hal_create_device(registry, kiln_make_cstring_view(uri),
                                        options, kiln_allocator_system(),
                                        &device));
  // Keeps Mesa's lavapipe mapped after the loader unloads it, so a leak
  // inside it is attributed by name (see lsan_suppressions.txt).
  if (kiln_hal_device_info(device)->driver_id == 13) {
    (void)dlopen("libvulkan_lvp.so", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  }
  return device;
}

kiln_hal_device_t* kiln_test_device_create(void) {
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  return kiln_test_device_create_with(&options);
}

void kiln_test_device_release(kiln_hal_device_t* device) {
  if (!device) return;
  KILN_EXPECT_OK(kiln_hal_device_wait_idle(device, KILN_INFINITE_TIMEOUT_NS));
  uint64_t messages = kiln_hal_device_validation_message_count(device);
  if (messages) {
    KILN_ADD_FAILURE("%llu validation messages; last: %s",
                     (unsigned long long)messages,
                     kiln_hal_device_last_validation_message(device));
  }
  kiln_hal_device_release(device);
}

kiln_test_spirv_t kiln_test_spirv_load(const char* name) {
  // KILN_HAL_TEST_KERNEL_DIR in the environment lets a copied build run
  // elsewhere (the GPU machine); the build folder is the default.
  const char* dir = getenv("KILN_HAL_TEST_KERNEL_DIR");
  if (!dir || !dir[0]) dir = KILN_HAL_TEST_KERNEL_DIR;
  char path[1024];
  snprintf(path, sizeof(path), "%s/%s.spv", dir, name);
  kiln_file_contents_t contents;
  KILN_ASSERT_OK(kiln_file_read_all(path, kiln_allocator_system(), &contents));
  KILN_ASSERT_EQ(contents.size % 4, 0);
  kiln_test_spirv_t spirv = {(uint32_t*)contents.data, contents.size / 4};
  return spirv;
}

void kiln_test_spirv_free(kiln_test_spirv_t* spirv) {
  kiln_allocator_free(kiln_allocator_system(), spirv->words);
  spirv->words = NULL;
}

kiln_hal_buffer_t* kiln_test_buffer(kiln_hal_device_t* device,
                                    kiln_hal_memory_type_t type,
                                    kiln_hal_buffer_usage_t usage,
                                    uint64_t size) {
  kiln_hal_buffer_params_t params = {type, usage, size};
  kiln_hal_buffer_t* buffer = NULL;
  KILN_ASSERT_OK(kiln_hal_buffer_allocate(device, &params, &buffer));
  return buffer;
}

kiln_status_t kiln_test_submit_and_wait(kiln_hal_device_t* device,
                                        kiln_hal_command_buffer_t* cb,
                                        const kiln_hal_binding_table_t* table) {
  kiln_hal_fence_t* fence = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_fence_create(device, &fence));
  kiln_hal_submit_batch_t batch = {
      .command_buffers = &cb,
      .binding_tables = table,
      .command_buffer_count = 1,
      .fence = fence,
  };
  kiln_status_t status = kiln_hal_device_queue_submit(device, &batch);
  if (!status) status = kiln_hal_fence_wait(fence, 60ll * 1000 * 1000 * 1000);
  kiln_hal_fence_release(fence);
  return status;
}

static const kiln_hal_binding_layout_t kScaleAddBindings[] = {{0, 0, true},
                                                              {0, 1, false}};

kiln_hal_executable_t* kiln_test_scale_add_executable(kiln_hal_device_t* device,
                                                      float bias) {
  kiln_test_spirv_t spirv = kiln_test_spirv_load("scale_add");
  kiln_hal_entry_point_spec_t entry = {
      "main", {64, 1, 1}, sizeof(kiln_test_scale_push_t), kScaleAddBindings, 2,
      0};
  kiln_hal_specialization_constant_t bias_constant = {0, 0};
  memcpy(&bias_constant.value, &bias, 4);
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, spirv.words, spirv.word_count, &entry, 1,
      &bias_constant, 1};
  kiln_hal_executable_spec_t spec = {"scale_add", &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  kiln_status_t status = kiln_hal_executable_create(device, &spec, &executable);
  kiln_test_spirv_free(&spirv);
  KILN_ASSERT_OK(status);
  return executable;
}

kiln_hal_executable_t* kiln_test_two_entries_executable(
    kiln_hal_device_t* device) {
  kiln_test_spirv_t spirv = kiln_test_spirv_load("two_entries");
  static const kiln_hal_binding_layout_t binding = {0, 0, false};
  kiln_hal_entry_point_spec_t entries[2] = {
      {"add_one", {64, 1, 1}, 4, &binding, 1, 0},
      {"double_it", {64, 1, 1}, 4, &binding, 1, 0},
  };
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", 0, {0}, spirv.words, spirv.word_count, entries, 2, NULL, 0};
  kiln_hal_executable_spec_t spec = {"two_entries", &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  kiln_status_t status = kiln_hal_executable_create(device, &spec, &executable);
  kiln_test_spirv_free(&spirv);
  KILN_ASSERT_OK(status);
  return executable;
}
