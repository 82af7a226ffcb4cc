// Helpers shared inside hal/; not public.
#ifndef KILN_HAL_HAL_INTERNAL_H_
#define KILN_HAL_HAL_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/hal/device.h"

// True when the SPIR-V declares a GLCompute OpEntryPoint named `name`.
bool kiln_hal_spirv_has_compute_entry_point(const uint32_t* words,
                                            size_t word_count,
                                            const char* name);

// Validates SPIR-V for the device's Vulkan version (SPIRV-Tools); the
// status names the executable, the variant and the word at fault.
kiln_status_t kiln_hal_spirv_validate(const kiln_hal_device_info_t* info,
                                      const char* executable_name,
                                      uint32_t variant_index,
                                      const uint32_t* words,
                                      size_t word_count);

#endif  // KILN_HAL_HAL_INTERNAL_H_
