// Shared fixture of the HAL conformance tests: the device named by
// KILN_TEST_DEVICE (default "vulkan"), with the validation layer when
// KILN_VULKAN_VALIDATION=1; releasing it fails the test if any validation
// message arrived. Kernels come from tests/hal/kernels, compiled by glslc.
#ifndef KILN_TESTS_HAL_TEST_DEVICE_H_
#define KILN_TESTS_HAL_TEST_DEVICE_H_

#include "kiln/base/time.h"
#include "kiln/hal.h"
#include "kiln_test.h"

// Creates the test device (fatal failure when it cannot).
kiln_hal_device_t* kiln_test_device_create(void);
kiln_hal_device_t* kiln_test_device_create_with(
    const kiln_hal_device_options_t* options);
// The device URI the tests use (KILN_TEST_DEVICE, default "vulkan").
const char* kiln_test_device_uri(void);
kiln_hal_device_t* kiln_test_device_create_at(
    const char* uri, const kiln_hal_device_options_t* options);
// Expects zero validation messages, then releases.
void kiln_test_device_release(kiln_hal_device_t* device);

typedef struct kiln_test_spirv_t {
  uint32_t* words;
  size_t word_count;
} kiln_test_spirv_t;

// Loads <kernel dir>/<name>.spv (fatal failure when missing).
kiln_test_spirv_t kiln_test_spirv_load(const char* name);
void kiln_test_spirv_free(kiln_test_spirv_t* spirv);

// Allocates a buffer with the given memory type and usage (fatal on error).
kiln_hal_buffer_t* kiln_test_buffer(kiln_hal_device_t* device,
                                    kiln_hal_memory_type_t type,
                                    kiln_hal_buffer_usage_t usage,
                                    uint64_t size);

// Submits one command buffer (optionally with a binding table) and waits.
kiln_status_t kiln_test_submit_and_wait(kiln_hal_device_t* device,
                                        kiln_hal_command_buffer_t* cb,
                                        const kiln_hal_binding_table_t* table);


// Executables over the test kernels (fatal on error). scale_add:
// out = in * scale + bias, bindings (0,0) in, (0,1) out, push {float, uint}.
kiln_hal_executable_t* kiln_test_scale_add_executable(kiln_hal_device_t* device,
                                                      float bias);
// two_entries: entry 0 "add_one", entry 1 "double_it"; binding (0,0),
// push {uint count}.
kiln_hal_executable_t* kiln_test_two_entries_executable(
    kiln_hal_device_t* device);

typedef struct kiln_test_scale_push_t {
  float scale;
  uint32_t count;
} kiln_test_scale_push_t;

#endif  // KILN_TESTS_HAL_TEST_DEVICE_H_
