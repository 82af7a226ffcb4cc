// The GPU test harness API (vk_harness.h) implemented on the kiln HAL, so
// the same kernel tests run through the runtime's own driver: each dispatch
// becomes a one-variant executable (bindings and workgroup size reflected
// from the SPIR-V and its specialization), a command buffer and a fence.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/kernel_executable.h"
#include "kiln/base/time.h"
#include "kiln/compiler/spirv.h"
#include "vk_harness.h"

struct kiln_vk_harness_t {
  kiln_hal_device_t* device;
  kiln_kernel_arch_caps_t caps;
};

struct kiln_vk_buffer_t {
  kiln_hal_buffer_t* buffer;
  size_t size;  // as asked; the allocation is rounded up to 4 bytes
};

kiln_status_t kiln_vk_harness_create(kiln_vk_harness_t** out_harness) {
  *out_harness = NULL;
  kiln_vk_harness_t* h = calloc(1, sizeof(*h));
  if (!h) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "harness");
  kiln_status_t status = kiln_kernel_test_device_create(&h->device);
  if (status) {
    free(h);
    return status;
  }
  const kiln_hal_device_info_t* info = kiln_hal_device_info(h->device);
  h->caps.subgroup_size = info->limits.subgroup_size;
  h->caps.max_workgroup_invocations = info->limits.max_workgroup_invocations;
  h->caps.max_shared_memory_bytes = info->limits.max_shared_memory_bytes;
  h->caps.fp16_storage = (info->features & KILN_TARGET_FEATURE_STORAGE_16BIT) != 0;
  h->caps.fp16_arithmetic = (info->features & KILN_TARGET_FEATURE_FP16) != 0;
  h->caps.subgroup_arithmetic = (info->features & KILN_TARGET_FEATURE_SUBGROUP_OPS) != 0;
  h->caps.cooperative_matrix = (info->features & KILN_TARGET_FEATURE_COOPERATIVE_MATRIX) != 0;
  *out_harness = h;
  return kiln_ok_status();
}

void kiln_vk_harness_destroy(kiln_vk_harness_t* h) {
  if (!h) return;
  kiln_status_ignore(kiln_hal_device_wait_idle(h->device, KILN_INFINITE_TIMEOUT_NS));
  kiln_hal_device_release(h->device);
  free(h);
}

const kiln_kernel_arch_caps_t* kiln_vk_harness_caps(const kiln_vk_harness_t* h) {
  return &h->caps;
}
const char* kiln_vk_harness_device_name(const kiln_vk_harness_t* h) {
  return kiln_hal_device_info(h->device)->name;
}
uint32_t kiln_vk_harness_message_count(const kiln_vk_harness_t* h) {
  return (uint32_t)kiln_hal_device_validation_message_count(h->device);
}
const char* kiln_vk_harness_last_message(const kiln_vk_harness_t* h) {
  const char* message = kiln_hal_device_last_validation_message(h->device);
  return message ? message : "";
}
bool kiln_vk_harness_validation_enabled(const kiln_vk_harness_t* h) {
  const char* env = getenv("KILN_VULKAN_VALIDATION");
  (void)h;
  return env && strcmp(env, "1") == 0;
}
void kiln_vk_harness_provoke_validation_error(kiln_vk_harness_t* h, bool expected) {
  (void)h;
  (void)expected;  // the HAL validates its own calls; nothing invalid to provoke
}

kiln_status_t kiln_vk_buffer_create(kiln_vk_harness_t* h, size_t size, const void* data,
                                    kiln_vk_buffer_t** out_buffer) {
  *out_buffer = NULL;
  size_t padded = (size + 3) & ~(size_t)3;
  if (padded == 0) padded = 4;
  kiln_vk_buffer_t* b = calloc(1, sizeof(*b));
  uint8_t* staging = calloc(1, padded);
  if (!b || !staging) {
    free(b);
    free(staging);
    return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "buffer of %zu bytes", size);
  }
  if (data) memcpy(staging, data, size);
  b->size = size;
  kiln_hal_buffer_params_t params = {KILN_HAL_MEMORY_DEVICE_LOCAL,
                                     KILN_HAL_BUFFER_USAGE_DEFAULT, padded};
  kiln_status_t status = kiln_hal_buffer_allocate(h->device, &params, &b->buffer);
  if (!status) status = kiln_hal_device_write_buffer(h->device, b->buffer, 0, staging, padded);
  free(staging);
  if (status) {
    kiln_vk_buffer_destroy(h, b);
    return status;
  }
  *out_buffer = b;
  return kiln_ok_status();
}

void kiln_vk_buffer_destroy(kiln_vk_harness_t* h, kiln_vk_buffer_t* b) {
  (void)h;
  if (!b) return;
  if (b->buffer) kiln_hal_buffer_release(b->buffer);
  free(b);
}

kiln_status_t kiln_vk_buffer_read(kiln_vk_harness_t* h, kiln_vk_buffer_t* b, void* out_data,
                                  size_t size) {
  if (size > b->size) {
    return kiln_make_status(KILN_STATUS_OUT_OF_RANGE, "read of %zu bytes from %zu", size,
                            b->size);
  }
  size_t padded = (size + 3) & ~(size_t)3;
  uint8_t* staging = malloc(padded ? padded : 4);
  if (!staging) return kiln_make_status(KILN_STATUS_RESOURCE_EXHAUSTED, "read staging");
  kiln_status_t status = kiln_hal_device_read_buffer(h->device, b->buffer, 0, staging, padded);
  if (!status) memcpy(out_data, staging, size);
  free(staging);
  return status;
}

static kiln_target_features_t kiln_vk_hal_features(uint32_t kernel_features) {
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

kiln_status_t kiln_vk_harness_dispatch(kiln_vk_harness_t* h, const kiln_kernel_spirv_t* spirv,
                                       const kiln_kernel_config_t* config, const void* push,
                                       uint32_t push_size, kiln_vk_buffer_t* const* buffers,
                                       uint32_t buffer_count, const uint32_t grid[3]) {
  kiln_spirv_reflection_t reflection;
  KILN_RETURN_IF_ERROR(
      kiln_spirv_reflect(spirv->blob_name, spirv->words, spirv->word_count, &reflection));
  uint32_t ids[KILN_KERNEL_MAX_SPEC_VALUES], values[KILN_KERNEL_MAX_SPEC_VALUES];
  kiln_hal_specialization_constant_t constants[KILN_KERNEL_MAX_SPEC_VALUES];
  for (size_t i = 0; i < config->spec_count; ++i) {
    ids[i] = config->spec[i].id;
    values[i] = config->spec[i].value;
    constants[i] = (kiln_hal_specialization_constant_t){ids[i], values[i]};
  }
  uint32_t workgroup[3];
  KILN_RETURN_IF_ERROR(kiln_spirv_reflection_specialize(&reflection, ids, values,
                                                        config->spec_count, workgroup));
  if (reflection.binding_count != buffer_count) {
    return kiln_make_status(KILN_STATUS_INVALID_ARGUMENT, "'%s' has %zu bindings, %u given",
                            spirv->blob_name, reflection.binding_count, buffer_count);
  }
  kiln_hal_binding_layout_t layouts[KILN_SPIRV_MAX_BINDINGS];
  kiln_hal_binding_t bindings[KILN_SPIRV_MAX_BINDINGS];
  for (uint32_t i = 0; i < buffer_count; ++i) {
    layouts[i] = (kiln_hal_binding_layout_t){
        reflection.bindings[i].set, reflection.bindings[i].binding,
        reflection.bindings[i].read_only,
        reflection.bindings[i].texel ? KILN_HAL_BINDING_UNIFORM_TEXEL_BUFFER_VEC4F32
                                     : KILN_HAL_BINDING_STORAGE_BUFFER};
    bindings[i] = (kiln_hal_binding_t){reflection.bindings[i].set,
                                       reflection.bindings[i].binding,
                                       buffers[i]->buffer, 0, 0, KILN_HAL_WHOLE_BUFFER};
  }
  kiln_hal_entry_point_spec_t entry = {reflection.entry_points[0],
                                       {workgroup[0], workgroup[1], workgroup[2]},
                                       push_size, layouts, buffer_count, 0};
  kiln_target_limits_t limits = {0, workgroup[0] * workgroup[1] * workgroup[2],
                                 config->shared_memory_bytes, push_size, 0};
  kiln_hal_executable_variant_spec_t variant = {
      "unknown", kiln_vk_hal_features(spirv->required_features), limits, spirv->words,
      spirv->word_count, &entry, 1, constants, (uint32_t)config->spec_count};
  kiln_hal_executable_spec_t spec = {spirv->blob_name, &variant, 1};
  kiln_hal_executable_t* executable = NULL;
  KILN_RETURN_IF_ERROR(kiln_hal_executable_create(h->device, &spec, &executable));
  kiln_hal_command_buffer_t* cb = NULL;
  kiln_status_t status = kiln_hal_command_buffer_create(h->device, 0, &cb);
  if (!status) status = kiln_hal_command_buffer_begin(cb);
  if (!status) {
    kiln_hal_dispatch_t dispatch = {executable, 0, {grid[0], grid[1], grid[2]}, push,
                                    push_size, bindings, buffer_count};
    status = kiln_hal_command_buffer_dispatch(cb, &dispatch);
  }
  if (!status) status = kiln_hal_command_buffer_end(cb);
  if (!status) status = kiln_kernel_test_submit_and_wait(h->device, cb);
  if (cb) kiln_hal_command_buffer_release(cb);
  kiln_hal_executable_release(executable);
  return kiln_status_annotate(status, "running '%s' through the HAL", spirv->blob_name);
}
