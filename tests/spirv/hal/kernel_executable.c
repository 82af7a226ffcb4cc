// See kernel_executable.h.
#include "kernel_executable.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/drivers/registration.h"

kiln_status_t kiln_kernel_test_device_create(kiln_hal_device_t** out_device) {
  *out_device = NULL;
  kiln_hal_driver_registry_t* registry = kiln_hal_driver_registry_default();
  KILN_RETURN_IF_ERROR(kiln_drivers_register_all(registry));
  const char* uri = getenv("KILN_TEST_DEVICE");
  if (!uri || !uri[0]) uri = "vulkan";
  kiln_hal_device_options_t options;
  kiln_hal_device_options_init(&options);
  KILN_RETURN_IF_ERROR(kiln_hal_create_device(registry, kiln_make_cstring_view(uri),
                                              &options, kiln_allocator_system(),
                                              out_device));
  // Keeps lavapipe mapped after the loader unloads it, so its known leak
  // (tests/hal/lsan_suppressions.txt) is attributed by name.
  if (kiln_hal_device_info(*out_device)->driver_id == 13) {
    (void)dlopen("libvulkan_lvp.so", RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
  }
  return kiln_ok_status();
}

static kiln_target_features_t kiln_kernel_hal_features(uint32_t kernel_features) {
  kiln_target_features_t features = 0;
  if (kernel_features & KILN_KERNEL_FEATURE_FP16_STORAGE) {
    features |= KILN_TARGET_FEATURE_STORAGE_16BIT;
  }
  if (kernel_features & KILN_KERNEL_FEATURE_SUBGROUP_ARITHMETIC) {
    features |= KILN_TARGET_FEATURE_SUBGROUP_OPS;
  }
  if (kernel_features & KILN_FORMAT_FEATURE_FP16) features |= KILN_TARGET_FEATURE_FP16;
  if (kernel_features & KILN_FORMAT_FEATURE_COOPERATIVE_MATRIX) {
    features |= KILN_TARGET_FEATURE_COOPERATIVE_MATRIX;
  }
  return features;
}

#define KILN_KERNEL_TEST_MAX_ARCHES 16

static kiln_status_t kiln_kernel_executable_create_with(
    kiln_hal_device_t* device, kiln_kernel_id_t kernel, const char* const* arches,
    size_t arch_count, const char* selector, const kiln_kernel_config_t* fixed,
    const kiln_kernel_spec_value_t* ops, size_t op_count, const uint32_t* words,
    size_t word_count, kiln_kernel_executable_t* out_executable) {
  memset(out_executable, 0, sizeof(*out_executable));
  const kiln_kernel_desc_t* desc = kiln_kernel_desc(kernel);
  if (!desc || arch_count == 0 || arch_count > KILN_KERNEL_TEST_MAX_ARCHES) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT,
                            "kernel %d with %zu arches", (int)kernel, arch_count);
  }
  kiln_kernel_config_t configs[KILN_KERNEL_TEST_MAX_ARCHES];
  kiln_hal_binding_layout_t bindings[KILN_KERNEL_TEST_MAX_ARCHES][KILN_KERNEL_MAX_BINDINGS];
  kiln_hal_entry_point_spec_t entries[KILN_KERNEL_TEST_MAX_ARCHES];
  kiln_hal_specialization_constant_t
      constants[KILN_KERNEL_TEST_MAX_ARCHES][KILN_KERNEL_MAX_SPEC_VALUES];
  kiln_hal_executable_variant_spec_t variants[KILN_KERNEL_TEST_MAX_ARCHES];
  for (size_t a = 0; a < arch_count; ++a) {
    if (fixed) {
      configs[a] = *fixed;
    } else {
      kiln_kernel_arch_caps_t caps;
      KILN_RETURN_IF_ERROR(kiln_kernel_arch_caps_for_arch(arches[a], &caps));
      KILN_RETURN_IF_ERROR(
          kiln_kernel_config_select(kernel, &caps, KILN_KERNEL_STORAGE_FP32, &configs[a]));
    }
    for (size_t i = 0; i < op_count; ++i) {
      KILN_RETURN_IF_ERROR(kiln_kernel_config_set_spec(&configs[a], ops[i].id, ops[i].value));
    }
    kiln_kernel_spirv_t spirv;
    // Words given: the kernel's table entry only for its binding types.
    KILN_RETURN_IF_ERROR(words ? kiln_kernel_get_spirv(kernel, configs[a].variant, &spirv)
                               : kiln_kernel_get_config_spirv(&configs[a], &spirv));
    if (words) {
      spirv.words = words;
      spirv.word_count = word_count;
    }
    // The variant's own binding types (cpu variants read texel buffers).
    for (uint32_t b = 0; b < desc->binding_count; ++b) {
      bool texel = (spirv.texel_bindings >> desc->bindings[b].binding) & 1u;
      bindings[a][b] = (kiln_hal_binding_layout_t){
          0, desc->bindings[b].binding, desc->bindings[b].read_only,
          texel ? KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32
                : KILN_HAL_BINDING_STORAGE_BUFFER};
    }
    for (size_t i = 0; i < configs[a].spec_count; ++i) {
      constants[a][i] = (kiln_hal_specialization_constant_t){configs[a].spec[i].id,
                                                             configs[a].spec[i].value};
    }
    const uint32_t* wg = configs[a].workgroup_size;
    entries[a] = (kiln_hal_entry_point_spec_t){desc->entry_point,
                                               {wg[0], wg[1], wg[2]},
                                               desc->push_constant_size,
                                               bindings[a],
                                               desc->binding_count,
                                               0};
    kiln_target_limits_t limits = {0, wg[0] * wg[1] * wg[2], configs[a].shared_memory_bytes,
                                   desc->push_constant_size, 0};
    variants[a] = (kiln_hal_executable_variant_spec_t){
        selector ? selector : arches[a],   kiln_kernel_hal_features(configs[a].required_features),
        limits,      spirv.words,
        spirv.word_count, &entries[a],
        1,           constants[a],
        (uint32_t)configs[a].spec_count};
  }
  kiln_hal_executable_spec_t spec = {desc->name, variants, (uint32_t)arch_count};
  KILN_RETURN_IF_ERROR(kiln_hal_executable_spec_verify(&spec));
  KILN_RETURN_IF_ERROR(kiln_hal_executable_create(device, &spec, &out_executable->executable));
  uint32_t picked = kiln_hal_executable_variant_index(out_executable->executable);
  if (picked >= arch_count) {
    kiln_hal_executable_release(out_executable->executable);
    out_executable->executable = NULL;
    return kiln_make_status(KILN_STATUS_INTERNAL, "variant index %u of %zu", picked,
                            arch_count);
  }
  out_executable->config = configs[picked];
  out_executable->variant_index = picked;
  return kiln_ok_status();
}

kiln_status_t kiln_kernel_executable_create(
    kiln_hal_device_t* device, kiln_kernel_id_t kernel, const char* const* arches,
    size_t arch_count, const kiln_kernel_spec_value_t* ops, size_t op_count,
    kiln_kernel_executable_t* out_executable) {
  return kiln_kernel_executable_create_with(device, kernel, arches, arch_count, NULL, NULL,
                                            ops, op_count, NULL, 0, out_executable);
}

kiln_status_t kiln_kernel_executable_create_portable(
    kiln_hal_device_t* device, kiln_kernel_id_t kernel, const char* arch,
    const kiln_kernel_spec_value_t* ops, size_t op_count,
    kiln_kernel_executable_t* out_executable) {
  return kiln_kernel_executable_create_with(device, kernel, &arch, 1, "unknown", NULL, ops,
                                            op_count, NULL, 0, out_executable);
}

kiln_status_t kiln_kernel_executable_create_from_config(
    kiln_hal_device_t* device, const kiln_kernel_config_t* config,
    kiln_kernel_executable_t* out_executable) {
  const char* arch = "unknown";
  return kiln_kernel_executable_create_with(device, config->kernel, &arch, 1, "unknown", config,
                                            NULL, 0, NULL, 0, out_executable);
}

kiln_status_t kiln_kernel_executable_create_from_words(
    kiln_hal_device_t* device, const kiln_kernel_config_t* config, const uint32_t* words,
    size_t word_count, kiln_kernel_executable_t* out_executable) {
  const char* arch = "unknown";
  return kiln_kernel_executable_create_with(device, config->kernel, &arch, 1, "unknown", config,
                                            NULL, 0, words, word_count, out_executable);
}

kiln_status_t kiln_kernel_test_buffer(kiln_hal_device_t* device, const float* data,
                                      size_t count, kiln_hal_buffer_t** out_buffer) {
  kiln_hal_buffer_params_t params = {KILN_HAL_MEMORY_DEVICE_LOCAL,
                                     KILN_HAL_BUFFER_USAGE_DEFAULT, count * 4};
  KILN_RETURN_IF_ERROR(kiln_hal_buffer_allocate(device, &params, out_buffer));
  if (!data) return kiln_ok_status();
  kiln_status_t status = kiln_hal_device_write_buffer(device, *out_buffer, 0, data, count * 4);
  if (status) {
    kiln_hal_buffer_release(*out_buffer);
    *out_buffer = NULL;
  }
  return status;
}

kiln_status_t kiln_kernel_test_dispatch(kiln_hal_command_buffer_t* cb,
                                        const kiln_kernel_executable_t* kernel,
                                        const void* push, uint32_t push_bytes,
                                        kiln_hal_buffer_t* const* buffers,
                                        uint32_t buffer_count, const uint32_t grid[3]) {
  kiln_hal_binding_t bindings[KILN_KERNEL_MAX_BINDINGS];
  if (buffer_count > KILN_KERNEL_MAX_BINDINGS) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "%u buffers", buffer_count);
  }
  for (uint32_t i = 0; i < buffer_count; ++i) {
    bindings[i] = (kiln_hal_binding_t){0, i, buffers[i], 0, 0, KILN_HAL_WHOLE_BUFFER};
  }
  kiln_hal_dispatch_t d = {kernel->executable, 0, {grid[0], grid[1], grid[2]},
                           push, push_bytes, bindings, buffer_count};
  return kiln_hal_command_buffer_dispatch(cb, &d);
}

kiln_status_t kiln_kernel_test_submit_and_wait(kiln_hal_device_t* device,
                                               kiln_hal_command_buffer_t* cb) {
  kiln_hal_fence_t* fence = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_fence_create(device, &fence));
  kiln_hal_submit_batch_t batch = {.command_buffers = &cb, .command_buffer_count = 1,
                                   .fence = fence};
  kiln_status_t status = kiln_hal_device_queue_submit(device, &batch);
  if (!status) status = kiln_hal_fence_wait(fence, 120ll * 1000 * 1000 * 1000);
  kiln_hal_fence_release(fence);
  return status;
}
