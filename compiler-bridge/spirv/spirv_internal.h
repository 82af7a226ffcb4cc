// Helpers of the SPIR-V reflection (reflect.c).
#ifndef KILN_COMPILER_BRIDGE_SPIRV_SPIRV_INTERNAL_H_
#define KILN_COMPILER_BRIDGE_SPIRV_SPIRV_INTERNAL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kiln/base/status.h"

// True when the module declares the CooperativeMatrixNV capability.
bool kiln_spirv_uses_nv_cooperative_matrix(const uint32_t* words, size_t word_count);

// A copy (malloc'd) of a validated module without its cooperative-matrix
// declarations and with empty function bodies, for SPIRV-Cross, which does
// not know SPV_NV_cooperative_matrix (strip_coopmat.c).
kiln_status_t kiln_spirv_strip_cooperative_matrix(const char* kernel_name,
                                                  const uint32_t* words, size_t word_count,
                                                  uint32_t** out_words, size_t* out_count);

#endif  // KILN_COMPILER_BRIDGE_SPIRV_SPIRV_INTERNAL_H_
