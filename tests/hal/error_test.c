// Error paths return statuses naming what is wrong: bindings outside the
// layout, wrong usage, too-large dispatches, misused command buffers.
#include <stdlib.h>

#include "kiln/drivers/registration.h"
#include "test_device.h"

typedef struct fixture_t {
  kiln_hal_device_t* device;
  kiln_hal_executable_t* executable;
  kiln_hal_buffer_t* storage;
  kiln_hal_buffer_t* transfer_only;
  kiln_hal_command_buffer_t* cb;
} fixture_t;

static fixture_t fixture_create(void) {
  fixture_t f;
  f.device = kiln_test_device_create();
  f.executable = kiln_test_scale_add_executable(f.device, 0);
  f.storage = kiln_test_buffer(f.device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                               KILN_HAL_BUFFER_USAGE_DEFAULT, 1024);
  f.transfer_only = kiln_test_buffer(f.device, KILN_HAL_MEMORY_DEVICE_LOCAL,
                                     KILN_HAL_BUFFER_USAGE_TRANSFER_SRC, 1024);
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(f.device, 0, &f.cb));
  return f;
}

static void fixture_release(fixture_t* f) {
  kiln_hal_command_buffer_release(f->cb);
  kiln_hal_buffer_release(f->storage);
  kiln_hal_buffer_release(f->transfer_only);
  kiln_hal_executable_release(f->executable);
  kiln_test_device_release(f->device);
}

KILN_TEST(ErrorTest, DispatchArgumentsAreChecked) {
  fixture_t f = fixture_create();
  kiln_test_scale_push_t push = {1, 256};
  kiln_hal_binding_t bindings[] = {
      {0, 0, f.storage, 0, 0, KILN_HAL_WHOLE_BUFFER},
      {0, 1, f.storage, 0, 512, 512},
  };
  kiln_hal_dispatch_t dispatch = {f.executable, 0, {4, 1, 1}, &push,
                                  sizeof(push), bindings, 2};
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "not recording",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(f.cb));
  KILN_EXPECT_OK(kiln_hal_command_buffer_dispatch(f.cb, &dispatch));

  bindings[1].binding = 7;  // not in the layout
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE,
                             "(set 0, binding 7) is not in the entry point's layout",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  bindings[1].binding = 0;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "bound twice",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  bindings[1].binding = 1;
  bindings[1].length = 1024;  // 512 + 1024 > 1024
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "does not fit",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  bindings[1].length = 512;
  bindings[1].offset = 3;  // misaligned
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "not a multiple",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  bindings[1].offset = 512;
  bindings[1].buffer = f.transfer_only;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "DISPATCH_STORAGE",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  bindings[1].buffer = f.storage;
  dispatch.binding_count = 1;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "1 bindings given",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  dispatch.binding_count = 2;
  dispatch.push_constant_bytes = 4;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "push-constant",
                             kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  dispatch.push_constant_bytes = sizeof(push);
  dispatch.entry_point = 1;
  KILN_EXPECT_STATUS(KILN_STATUS_OUT_OF_RANGE,
                     kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  dispatch.entry_point = 0;
  uint32_t max_x = kiln_hal_device_info(f.device)->max_workgroup_count[0];
  if (max_x < UINT32_MAX) {
    dispatch.workgroup_count[0] = max_x + 1;
    KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE,
                               "workgroup count",
                               kiln_hal_command_buffer_dispatch(f.cb, &dispatch));
  }
  dispatch.workgroup_count[0] = 4;
  KILN_EXPECT_EQ(kiln_hal_command_buffer_dispatch_count(f.cb), 1);
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(f.cb));
  // The one valid dispatch still runs cleanly.
  KILN_EXPECT_OK(kiln_test_submit_and_wait(f.device, f.cb, NULL));
  fixture_release(&f);
}

KILN_TEST(ErrorTest, TransferArgumentsAreChecked) {
  fixture_t f = fixture_create();
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(f.cb));
  uint32_t pattern = 0;
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "TRANSFER_DST",
                             kiln_hal_command_buffer_fill(f.cb, f.transfer_only,
                                                          0, 64, &pattern, 4));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "pattern length 3",
                             kiln_hal_command_buffer_fill(f.cb, f.storage, 0, 64,
                                                          &pattern, 3));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "multiples of 4",
                             kiln_hal_command_buffer_fill(f.cb, f.storage, 2, 64,
                                                          &pattern, 4));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_OUT_OF_RANGE, "does not fit",
                             kiln_hal_command_buffer_copy(f.cb, f.storage, 512,
                                                          f.storage, 0, 1024));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "overlap",
                             kiln_hal_command_buffer_copy(f.cb, f.storage, 0,
                                                          f.storage, 64, 128));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_INVALID_ARGUMENT, "TRANSFER_DST",
                             kiln_hal_command_buffer_copy(f.cb, f.storage, 0,
                                                          f.transfer_only, 0, 64));
  KILN_EXPECT_STATUS(KILN_STATUS_INVALID_ARGUMENT,
                     kiln_hal_command_buffer_barrier(f.cb, 0, KILN_HAL_STAGE_DISPATCH));
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(f.cb));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "not recording",
                             kiln_hal_command_buffer_end(f.cb));
  kiln_hal_command_buffer_t* fresh = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(f.device, 0, &fresh));
  KILN_EXPECT_STATUS_MESSAGE(KILN_STATUS_FAILED_PRECONDITION, "was not ended",
                             kiln_test_submit_and_wait(f.device, fresh, NULL));
  kiln_hal_command_buffer_release(fresh);
  // Staged reads need TRANSFER_SRC on device-local, unmappable memory; on
  // devices whose device-local memory is host-visible they go direct.
  fixture_release(&f);
}

static kiln_status_t create_with(kiln_allocator_t allocator,
                                 kiln_hal_device_t** out_device) {
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  KILN_RETURN_IF_ERROR(kiln_drivers_register_all(registry));
  const char* uri = getenv("KILN_TEST_DEVICE");
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  return kiln_hal_create_device(
      registry, kiln_make_cstring_view(uri && uri[0] ? uri : "vulkan"),
      &options, allocator, out_device);
}

// Host memory goes through the allocator given at device creation; running
// out of it is a status, never a crash or a leak.
KILN_TEST(ErrorTest, HostAllocationsUseTheDeviceAllocator) {
  kiln_counting_allocator_t counting;
  kiln_counting_allocator_init(&counting, kiln_allocator_system(), SIZE_MAX);
  kiln_hal_device_t* device = NULL;
  KILN_ASSERT_OK(create_with(kiln_counting_allocator(&counting), &device));
  kiln_hal_executable_t* executable = kiln_test_two_entries_executable(device);
  kiln_hal_buffer_t* buffer = kiln_test_buffer(
      device, KILN_HAL_MEMORY_DEVICE_LOCAL, KILN_HAL_BUFFER_USAGE_DEFAULT, 256);
  kiln_hal_command_buffer_t* cb = NULL;
  KILN_ASSERT_OK(kiln_hal_command_buffer_create(device, 0, &cb));
  KILN_ASSERT_OK(kiln_hal_command_buffer_begin(cb));
  uint32_t count = 64;
  kiln_hal_binding_t binding = {0, 0, buffer, 0, 0, KILN_HAL_WHOLE_BUFFER};
  kiln_hal_dispatch_t dispatch = {executable, 0, {1, 1, 1}, &count, 4, &binding, 1};
  for (int i = 0; i < 100; ++i) {
    KILN_ASSERT_OK(kiln_hal_command_buffer_dispatch(cb, &dispatch));
  }
  KILN_ASSERT_OK(kiln_hal_command_buffer_end(cb));
  KILN_ASSERT_OK(kiln_test_submit_and_wait(device, cb, NULL));
  KILN_EXPECT_GT(counting.live_blocks, 3);
  kiln_hal_command_buffer_release(cb);
  kiln_hal_buffer_release(buffer);
  kiln_hal_executable_release(executable);
  kiln_test_device_release(device);
  KILN_EXPECT_EQ(counting.live_blocks, 0);

  // Every budget below what the same work needs fails cleanly.
  for (size_t budget = 0; budget < 6; ++budget) {
    kiln_counting_allocator_init(&counting, kiln_allocator_system(), budget);
    device = NULL;
    kiln_status_t status = create_with(kiln_counting_allocator(&counting), &device);
    if (!status) {
      kiln_hal_buffer_t* b = NULL;
      kiln_hal_buffer_params_t params = {KILN_HAL_MEMORY_DEVICE_LOCAL,
                                         KILN_HAL_BUFFER_USAGE_DEFAULT, 64};
      status = kiln_hal_buffer_allocate(device, &params, &b);
      kiln_hal_buffer_release(b);
      kiln_hal_device_release(device);
    }
    if (status) {
      KILN_EXPECT_EQ(kiln_status_code(status), KILN_STATUS_RESOURCE_EXHAUSTED);
    }
    kiln_status_free(status);
    KILN_EXPECT_EQ(counting.live_blocks, 0);
  }
}
