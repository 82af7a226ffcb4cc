// libFuzzer target: arbitrary bytes as SPIR-V through validation and
// reflection, the path module writers and tools take with kernels they did
// not build. Seed corpus: the kernel library's .spv files
// (build/compiler-bridge/kernels/*.spv).
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/compiler/spirv.h"

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  size_t words = size / 4;
  uint32_t* copy = malloc(words ? words * 4 : 4);  // aligned words
  if (!copy) return 0;
  memcpy(copy, data, words * 4);
  kiln_status_ignore(
      kiln_spirv_validate("fuzz", copy, words, KILN_SPIRV_TARGET_VULKAN_1_1));
  kiln_spirv_reflection_t reflection;
  kiln_status_t status = kiln_spirv_reflect("fuzz", copy, words, &reflection);
  if (!status) {
    uint32_t workgroup[3];
    kiln_status_ignore(kiln_spirv_reflection_specialize(&reflection, NULL, NULL, 0, workgroup));
  }
  kiln_status_ignore(status);
  free(copy);
  return 0;
}
