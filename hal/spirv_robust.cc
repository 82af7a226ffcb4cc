// SPIRV-Tools' graphics-robust-access pass over an untrusted module's SPIR-V:
// it clamps every indexed access (buffers, and workgroup arrays, which
// lavapipe and some GPUs never bounds-check) so a kernel cannot reach memory
// outside its own objects. Used where the device does not bound buffers
// itself, or the local clamp (spirv_clamp_local.c) meets a form it leaves
// to this pass. C++ only because Debian's SPIRV-Tools (2023.1)
// predates the C optimizer API (spvOptimizerCreate); nothing else here.
#include <algorithm>
#include <string>
#include <vector>

#include <spirv-tools/optimizer.hpp>

#include "hal_internal.h"

extern "C" kiln_status_t kiln_hal_spirv_graphics_robust_access(
    const kiln_hal_device_info_t* info, const char* executable_name,
    uint32_t variant_index, kiln_allocator_t allocator, const uint32_t* words,
    size_t word_count, uint32_t** out_words, size_t* out_word_count) {
  *out_words = nullptr;
  *out_word_count = 0;
  const char* env_name = nullptr;
  std::string error;
  std::vector<uint32_t> robust;
  bool ok = false;
  try {
    spvtools::Optimizer optimizer(
        static_cast<spv_target_env>(kiln_hal_spirv_env(info, &env_name)));
    optimizer.SetMessageConsumer(
        [&error](spv_message_level_t level, const char*,
                 const spv_position_t&, const char* message) {
          if (level <= SPV_MSG_ERROR && error.empty() && message) {
            error = message;
          }
        });
    optimizer.RegisterPass(spvtools::CreateGraphicsRobustAccessPass());
    // The caller validated the input (kiln_hal_spirv_validate).
    spvtools::OptimizerOptions options;
    options.set_run_validator(false);
    ok = optimizer.Run(words, word_count, &robust, options);
  } catch (...) {
    ok = false;
    if (error.empty()) error = "out of memory";
  }
  if (!ok || robust.empty()) {
    return kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "executable '%s' variant %u: the robust-access pass refused the "
        "SPIR-V: %s",
        executable_name, variant_index,
        error.empty() ? "no diagnostic" : error.c_str());
  }
  uint32_t* copy = nullptr;
  KILN_RETURN_IF_ERROR(kiln_allocator_malloc(
      allocator, robust.size() * sizeof(uint32_t), (void**)&copy));
  std::copy(robust.begin(), robust.end(), copy);
  *out_words = copy;
  *out_word_count = robust.size();
  return kiln_ok_status();
}
