// A minimal compute-only Vulkan harness (volk) for running one kernel of the
// library at a time on the test device, independent of the HAL. With
// KILN_VULKAN_VALIDATION=1 it enables VK_LAYER_KHRONOS_validation and counts
// every message it reports; tests fail on any.
#ifndef KILN_TESTS_SPIRV_GPU_VK_HARNESS_H_
#define KILN_TESTS_SPIRV_GPU_VK_HARNESS_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"
#include "kiln/compiler/kernels.h"
#include "kiln/compiler/kernels_target.h"

typedef struct kiln_vk_harness_t kiln_vk_harness_t;
typedef struct kiln_vk_buffer_t kiln_vk_buffer_t;

// Creates an instance and a device on physical device KILN_TEST_DEVICE
// (an ordinal; default 0).
kiln_status_t kiln_vk_harness_create(kiln_vk_harness_t** out_harness);
void kiln_vk_harness_destroy(kiln_vk_harness_t* harness);

// The device's capabilities in the kernel library's terms.
const kiln_kernel_arch_caps_t* kiln_vk_harness_caps(const kiln_vk_harness_t* harness);
const char* kiln_vk_harness_device_name(const kiln_vk_harness_t* harness);
// Validation messages seen so far (0 when validation is off).
uint32_t kiln_vk_harness_message_count(const kiln_vk_harness_t* harness);
const char* kiln_vk_harness_last_message(const kiln_vk_harness_t* harness);
bool kiln_vk_harness_validation_enabled(const kiln_vk_harness_t* harness);

// Deliberately makes one invalid but harmless call (a pipeline layout with
// a zero-sized push-constant range) so tests can check that the layer is
// live and its messages are counted. With `expected` the message is neither
// printed nor a failure; any other message fails the running test (or,
// outside a test, makes kiln_vk_harness_destroy exit the process with
// status 1).
void kiln_vk_harness_provoke_validation_error(kiln_vk_harness_t* harness, bool expected);

// Host-visible storage buffer of `size` bytes, filled from `data` (zeros
// when NULL).
kiln_status_t kiln_vk_buffer_create(kiln_vk_harness_t* harness, size_t size,
                                    const void* data, kiln_vk_buffer_t** out_buffer);
void kiln_vk_buffer_destroy(kiln_vk_harness_t* harness, kiln_vk_buffer_t* buffer);
kiln_status_t kiln_vk_buffer_read(kiln_vk_harness_t* harness,
                                  kiln_vk_buffer_t* buffer, void* out_data,
                                  size_t size);

// Builds a pipeline for `spirv` specialized by `config`'s constants, binds
// buffers[i] at set 0 binding i, pushes `push` and dispatches `grid`, then
// waits. A device lacking the variant's features gives FAILED_PRECONDITION.
kiln_status_t kiln_vk_harness_dispatch(kiln_vk_harness_t* harness,
                                       const kiln_kernel_spirv_t* spirv,
                                       const kiln_kernel_config_t* config,
                                       const void* push, uint32_t push_size,
                                       kiln_vk_buffer_t* const* buffers,
                                       uint32_t buffer_count,
                                       const uint32_t grid[3]);

#endif  // KILN_TESTS_SPIRV_GPU_VK_HARNESS_H_
