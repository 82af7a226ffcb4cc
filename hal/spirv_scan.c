// A bounds-checked walk over SPIR-V instructions to find compute entry
// points: a module's entry-point names are untrusted, and handing a driver a
// name its SPIR-V lacks is undefined behaviour (some drivers crash).
#include <string.h>

#include "hal_internal.h"

enum {
  kSpirvMagic = 0x07230203,
  kOpEntryPoint = 15,
  kOpCapability = 17,
  kCapabilityCooperativeMatrixNV = 5357,
  kCapabilityCooperativeMatrixKHR = 6022,
  kExecutionModelGLCompute = 5,
};

bool kiln_hal_spirv_has_compute_entry_point(const uint32_t* words,
                                            size_t word_count,
                                            const char* name) {
  if (!words || word_count < 5 || words[0] != kSpirvMagic) return false;
  size_t name_length = strlen(name);
  size_t at = 5;
  while (at < word_count) {
    uint32_t instruction = words[at];
    uint32_t length = instruction >> 16;
    uint32_t opcode = instruction & 0xffff;
    if (length == 0 || length > word_count - at) return false;
    if (opcode == kOpEntryPoint && length >= 4 &&
        words[at + 1] == kExecutionModelGLCompute) {
      // The name is a NUL-terminated string packed into words at+3...
      const char* text = (const char*)&words[at + 3];
      size_t capacity = (size_t)(length - 3) * 4;
      size_t text_length = strnlen(text, capacity);
      if (text_length < capacity && text_length == name_length &&
          memcmp(text, name, name_length) == 0) {
        return true;
      }
    }
    at += length;
  }
  return false;
}

bool kiln_hal_spirv_uses_cooperative_matrix(const uint32_t* words, size_t word_count) {
  if (!words || word_count < 5) return false;
  for (size_t at = 5; at < word_count;) {
    uint32_t length = words[at] >> 16;
    if (length == 0 || length > word_count - at) return false;
    if ((words[at] & 0xffff) == kOpCapability && length == 2 &&
        (words[at + 1] == kCapabilityCooperativeMatrixNV ||
         words[at + 1] == kCapabilityCooperativeMatrixKHR)) {
      return true;
    }
    at += length;
  }
  return false;
}
