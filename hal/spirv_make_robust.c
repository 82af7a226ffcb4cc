// Chooses how an untrusted kernel is made memory-safe before the driver sees
// it (docs/security.md): the local clamp where the device bounds buffer
// accesses itself, SPIRV-Tools' full robust-access pass otherwise. The local
// clamp's output is validated again, since it is kiln's own rewrite.
#include "hal_internal.h"

kiln_status_t kiln_hal_spirv_make_robust(
    const kiln_hal_device_info_t* info, const char* executable_name,
    uint32_t variant_index, kiln_allocator_t allocator, const uint32_t* words,
    size_t word_count, uint32_t** out_words, size_t* out_word_count) {
  *out_words = NULL;
  *out_word_count = 0;
  // SPIRV-Tools' pass does not bound cooperative-matrix loads and stores
  // (they read rows x stride past their pointer): only the local clamp does.
  const bool cooperative_matrix = kiln_hal_spirv_uses_cooperative_matrix(words, word_count);
  if (cooperative_matrix && !info->robust_buffer_access) {
    return kiln_make_status(KILN_STATUS_FAILED_PRECONDITION,
                            "executable '%s' variant %u uses cooperative matrix, which kiln "
                            "runs only on devices with robustBufferAccess",
                            executable_name, variant_index);
  }
  if (info->robust_buffer_access) {
    uint32_t* clamped = NULL;
    size_t clamped_count = 0;
    kiln_status_t status = kiln_hal_spirv_clamp_local(info, allocator, words, word_count,
                                                      &clamped, &clamped_count);
    if (!status) {
      status = kiln_hal_spirv_validate(info, executable_name, variant_index, clamped,
                                       clamped_count);
      if (status) {
        kiln_allocator_free(allocator, clamped);
        return kiln_status_annotate(status, "after the local index clamp");
      }
      *out_words = clamped;
      *out_word_count = clamped_count;
      return kiln_ok_status();
    }
    if (kiln_status_code(status) != KILN_STATUS_UNIMPLEMENTED || cooperative_matrix) {
      return kiln_status_annotate(status, "executable '%s' variant %u", executable_name,
                                  variant_index);
    }
    kiln_status_free(status);
  }
  return kiln_hal_spirv_graphics_robust_access(info, executable_name, variant_index, allocator,
                                               words, word_count, out_words, out_word_count);
}
