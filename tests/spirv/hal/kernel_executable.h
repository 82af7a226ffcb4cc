// The kernel library as HAL executables, for tests and the benchmark: one
// executable per kernel with a variant per target arch, each variant's
// tiling and SPIR-V chosen by kernels_target.h for that arch's caps.
#ifndef KILN_TESTS_SPIRV_HAL_KERNEL_EXECUTABLE_H_
#define KILN_TESTS_SPIRV_HAL_KERNEL_EXECUTABLE_H_

#include <stddef.h>
#include <stdint.h>

#include "kiln/compiler/kernels.h"
#include "kiln/compiler/kernels_target.h"
#include "kiln/hal.h"

// Opens the device named by KILN_TEST_DEVICE (default "vulkan"); with
// KILN_VULKAN_VALIDATION=1 the HAL enables the validation layer.
kiln_status_t kiln_kernel_test_device_create(kiln_hal_device_t** out_device);

typedef struct kiln_kernel_executable_t {
  kiln_hal_executable_t* executable;
  kiln_kernel_config_t config;  // of the variant the device picked
  uint32_t variant_index;       // into the arches passed at creation
} kiln_kernel_executable_t;

// `arches` in order of preference (the HAL still ranks by triple match);
// `ops` are spec constants added to every variant.
kiln_status_t kiln_kernel_executable_create(
    kiln_hal_device_t* device, kiln_kernel_id_t kernel, const char* const* arches,
    size_t arch_count, const kiln_kernel_spec_value_t* ops, size_t op_count,
    kiln_kernel_executable_t* out_executable);
// The same with one variant: `arch`'s tiling under the portable selector
// "unknown", so any device runs it (benchmarks compare tilings this way).
kiln_status_t kiln_kernel_executable_create_portable(
    kiln_hal_device_t* device, kiln_kernel_id_t kernel, const char* arch,
    const kiln_kernel_spec_value_t* ops, size_t op_count,
    kiln_kernel_executable_t* out_executable);

// One portable variant of exactly `config` (its kernel, variant, workgroup
// and spec constants): the sweep's tilings.
kiln_status_t kiln_kernel_executable_create_from_config(
    kiln_hal_device_t* device, const kiln_kernel_config_t* config,
    kiln_kernel_executable_t* out_executable);

// The same with `words` (a build of config's kernel specialized offline,
// e.g. by spirv-opt) in place of the library's SPIR-V; the HAL validates
// and clamps it as any module.
kiln_status_t kiln_kernel_executable_create_from_words(
    kiln_hal_device_t* device, const kiln_kernel_config_t* config, const uint32_t* words,
    size_t word_count, kiln_kernel_executable_t* out_executable);

// Allocates a device-local buffer of `count` floats, filled from `data`
// when not NULL.
kiln_status_t kiln_kernel_test_buffer(kiln_hal_device_t* device, const float* data,
                                      size_t count, kiln_hal_buffer_t** out_buffer);

// Records a dispatch binding buffers[i] at (0, i).
kiln_status_t kiln_kernel_test_dispatch(kiln_hal_command_buffer_t* cb,
                                        const kiln_kernel_executable_t* kernel,
                                        const void* push, uint32_t push_bytes,
                                        kiln_hal_buffer_t* const* buffers,
                                        uint32_t buffer_count, const uint32_t grid[3]);

kiln_status_t kiln_kernel_test_submit_and_wait(kiln_hal_device_t* device,
                                               kiln_hal_command_buffer_t* cb);

#endif  // KILN_TESTS_SPIRV_HAL_KERNEL_EXECUTABLE_H_
