// Runtime validation of a module's SPIR-V with SPIRV-Tools before any driver
// sees it: modules are untrusted, and the Vulkan spec makes invalid SPIR-V
// in vkCreateShaderModule undefined behaviour (drivers have crashed on it).
// The compiler bridge validated its own output, but a module file can carry
// anything; this check is what makes that safe.
// libspirv.h defines a non-static const in C, which the compiler bridge's
// validator also includes; a private name here avoids a duplicate symbol.
#define kDefaultMaxIdBound kiln_hal_spirv_default_max_id_bound
#include <spirv-tools/libspirv.h>
#undef kDefaultMaxIdBound

#include "hal_internal.h"

// The newest SPIR-V environment the device's Vulkan version allows.
int kiln_hal_spirv_env(const kiln_hal_device_info_t* info,
                       const char** out_name) {
  if (info->api_major > 1 || (info->api_major == 1 && info->api_minor >= 3)) {
    *out_name = "vulkan1.3";
    return SPV_ENV_VULKAN_1_3;
  }
  if (info->api_major == 1 && info->api_minor == 2) {
    *out_name = "vulkan1.2";
    return SPV_ENV_VULKAN_1_2;
  }
  *out_name = "vulkan1.1";
  return SPV_ENV_VULKAN_1_1;
}

kiln_status_t kiln_hal_spirv_validate(const kiln_hal_device_info_t* info,
                                      const char* executable_name,
                                      uint32_t variant_index,
                                      const uint32_t* words,
                                      size_t word_count) {
  const char* env_name = NULL;
  spv_context context = spvContextCreate((spv_target_env)kiln_hal_spirv_env(info, &env_name));
  if (!context) {
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "executable '%s': spvContextCreate failed",
                            executable_name);
  }
  spv_const_binary_t binary = {words, word_count};
  spv_diagnostic diagnostic = NULL;
  spv_result_t result = spvValidate(context, &binary, &diagnostic);
  kiln_status_t status = kiln_ok_status();
  if (result != SPV_SUCCESS) {
    status = kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "executable '%s' variant %u: SPIR-V failed %s validation near word "
        "%zu: %s",
        executable_name, variant_index, env_name,
        diagnostic ? diagnostic->position.index : (size_t)0,
        diagnostic && diagnostic->error ? diagnostic->error : "no diagnostic");
  }
  spvDiagnosticDestroy(diagnostic);
  spvContextDestroy(context);
  return status;
}
