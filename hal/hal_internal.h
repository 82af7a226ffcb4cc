// Helpers shared inside hal/; not public.
#ifndef KILN_HAL_HAL_INTERNAL_H_
#define KILN_HAL_HAL_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// True when the SPIR-V declares a GLCompute OpEntryPoint named `name`.
bool kiln_hal_spirv_has_compute_entry_point(const uint32_t* words,
                                            size_t word_count,
                                            const char* name);

#endif  // KILN_HAL_HAL_INTERNAL_H_
