// SPIR-V validation through the SPIRV-Tools C API.
#include <spirv-tools/libspirv.h>

#include "kiln/compiler/spirv.h"

static spv_target_env kiln_spirv_tools_env(kiln_spirv_target_env_t env) {
  return env == KILN_SPIRV_TARGET_VULKAN_1_3 ? SPV_ENV_VULKAN_1_3
                                             : SPV_ENV_VULKAN_1_1;
}

static const char* kiln_spirv_env_name(kiln_spirv_target_env_t env) {
  return env == KILN_SPIRV_TARGET_VULKAN_1_3 ? "vulkan1.3" : "vulkan1.1";
}

kiln_status_t kiln_spirv_validate(const char* kernel_name,
                                  const uint32_t* words, size_t word_count,
                                  kiln_spirv_target_env_t env) {
  if (!kernel_name) kernel_name = "<unnamed>";
  if (env != KILN_SPIRV_TARGET_VULKAN_1_1 &&
      env != KILN_SPIRV_TARGET_VULKAN_1_3) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': unknown SPIR-V target env %d",
                            kernel_name, (int)env);
  }
  // The header alone is five words; anything shorter is not SPIR-V.
  if (!words || word_count < 5) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel '%s': SPIR-V of %zu words is shorter "
                            "than its 5-word header",
                            kernel_name, words ? word_count : (size_t)0);
  }
  spv_context context = spvContextCreate(kiln_spirv_tools_env(env));
  if (!context) {
    return kiln_make_status(KILN_STATUS_INTERNAL,
                            "kernel '%s': spvContextCreate failed",
                            kernel_name);
  }
  spv_validator_options options = spvValidatorOptionsCreate();
  if (!options) {
    spvContextDestroy(context);
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED,
                            "kernel '%s': spvValidatorOptionsCreate failed",
                            kernel_name);
  }
  spv_const_binary_t binary = {words, word_count};
  spv_diagnostic diagnostic = NULL;
  spv_result_t result =
      spvValidateWithOptions(context, options, &binary, &diagnostic);
  kiln_status_t status = kiln_ok_status();
  if (result != SPV_SUCCESS) {
    const char* message = (diagnostic && diagnostic->error)
                              ? diagnostic->error
                              : "no diagnostic";
    size_t index = diagnostic ? diagnostic->position.index : 0;
    status = kiln_make_status(
        KILN_STATUS_INVALID_ARGUMENT,
        "kernel '%s': SPIR-V failed %s validation (spv_result %d, near word "
        "%zu): %s",
        kernel_name, kiln_spirv_env_name(env), (int)result, index, message);
  }
  spvDiagnosticDestroy(diagnostic);
  spvValidatorOptionsDestroy(options);
  spvContextDestroy(context);
  return status;
}
