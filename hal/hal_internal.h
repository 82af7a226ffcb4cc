// Helpers shared inside hal/; not public.
#ifndef KILN_HAL_HAL_INTERNAL_H_
#define KILN_HAL_HAL_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/allocator.h"
#include "kiln/hal/device.h"
#include "kiln/hal/executable.h"

// SPIRV-Tools headers are included by the .c/.cc files that need them.
#ifdef __cplusplus
extern "C" {
#endif

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

// The newest SPIR-V environment (an spv_target_env) the device's Vulkan
// version allows, and its name for messages.
int kiln_hal_spirv_env(const kiln_hal_device_info_t* info,
                       const char** out_name);

// Reflects the SPIR-V of `variant_index` (already validated) and requires its
// entry points' interfaces to equal the declared ones: resources (set,
// binding, descriptor type, read-only), push-constant size, workgroup size
// after specialization; every specialization constant must be a 32-bit
// constant the SPIR-V declares. Returns the workgroup (shared) memory the
// specialized kernel needs. Errors name executable, variant, entry, field.
kiln_status_t kiln_hal_spirv_check_interface(
    const kiln_hal_executable_spec_t* spec, uint32_t variant_index,
    kiln_allocator_t allocator, uint64_t* out_shared_bytes);

// True when the SPIR-V declares a cooperative-matrix capability (NV or KHR).
bool kiln_hal_spirv_uses_cooperative_matrix(const uint32_t* words, size_t word_count);

// Makes validated SPIR-V safe to run (result allocated from `allocator`):
// where `info->robust_buffer_access`, the local clamp; otherwise, or where
// the local clamp leaves a form to it, SPIRV-Tools' robust-access pass.
kiln_status_t kiln_hal_spirv_make_robust(
    const kiln_hal_device_info_t* info, const char* executable_name,
    uint32_t variant_index, kiln_allocator_t allocator, const uint32_t* words,
    size_t word_count, uint32_t** out_words, size_t* out_word_count);

// SPIRV-Tools' graphics-robust-access pass: clamps every buffer and
// workgroup array index.
kiln_status_t kiln_hal_spirv_graphics_robust_access(
    const kiln_hal_device_info_t* info, const char* executable_name,
    uint32_t variant_index, kiln_allocator_t allocator, const uint32_t* words,
    size_t word_count, uint32_t** out_words, size_t* out_word_count);

// Clamps the indices of access chains into memory that robustBufferAccess
// does not bound (workgroup, private, function, push-constant, ...).
// UNIMPLEMENTED: the SPIR-V has a form it does not handle (the caller runs
// the full pass instead). Cooperative-matrix loads/stores are bounded by
// their extent or refused (INVALID_ARGUMENT), never left to the full pass.
kiln_status_t kiln_hal_spirv_clamp_local(const kiln_hal_device_info_t* info,
                                         kiln_allocator_t allocator, const uint32_t* words,
                                         size_t word_count, uint32_t** out_words,
                                         size_t* out_word_count);

// Everything kiln checks of a variant before a driver sees it, with no
// device needed (the fuzzer uses it): SPIR-V validation for `info`'s Vulkan
// version, the interface check, and shared memory vs `info`'s limit.
kiln_status_t kiln_hal_executable_check_variant(
    const kiln_hal_device_info_t* info, const kiln_hal_executable_spec_t* spec,
    uint32_t variant_index, kiln_allocator_t allocator);

#ifdef __cplusplus
}
#endif

#endif  // KILN_HAL_HAL_INTERNAL_H_
